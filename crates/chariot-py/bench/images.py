#!/usr/bin/env python3
"""GrCUDA's image DAG stream (IMG, benchmark 1) from Python: chariot with no tuning
against the same kernels run synchronously and by a hand-written CuPy stream pipeline,
alternated, medians of --rounds; and chariot's Rust image bench in the same command.

Per image, 13 tasks (an upload, 11 kernels, a readback) over 11 buffers resident on
the GPU in a ring of K sets, as `crates/chariot-studies/src/images/stream.rs` submits
them: each launch names what it reads and writes, and chariot infers the DAG's 15
edges and the reuse of a set. The kernels are `crates/chariot-studies/kernels/images.cu`,
which the Rust bench runs too. The ways:

* chariot-py: the plain loop over images through gpu_chariot, every setting default;
* cupy-sync: GrCUDA's serial baseline, one stream, a wait after every copy and kernel;
* cupy-streams: what a CuPy user writes by hand, image i on stream i mod K with set i
  mod K, its 13 operations in order on that stream;
* chariot-rust: the Rust bench (`--rust`, the staged `benches/images.rs`), run after
  the Python rounds with its own synchronous and hand-written ways, its CSV kept.

Every output is checked: every image of every run against the synchronous way's
output, exactly (same kernels, same GPU), and every --check-every'th image against the
NumPy reference below, |out - ref| <= 1e-4 (the kernels round as the reference does,
but the Gaussian weights come from the device's exp). On --backend sim chariot-py runs
alone with the NumPy functions as the kernels' twins, and every image is checked
against the reference. Writes images-py.csv (and images-rust.csv) to --out.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import gpu_chariot as gc

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_PATH = os.path.join(HERE, "..", "..", "chariot-studies", "kernels", "images.cu")
BLOCK_1D = 256
BLOCK_2D = (32, 8)
REDUCE_BLOCKS = 256
BLUR_SMALL, BLUR_LARGE, BLUR_UNSHARPEN = (3, 1.0), (5, 10.0), (3, 5.0)
UNSHARPEN_AMOUNT = 0.5
EXTEND_GAIN = 5.0
TOLERANCE = 1e-4

# The per-image buffers, in the Rust bench's order.
BUFFERS = ["image", "blur_small", "blur_large", "blur_unsharpen", "mask_small", "mask_large",
           "sharpened", "image2", "combined", "max_partial", "min_partial"]
PARAMS = {
    "gaussian_blur": ["const float*", "float*", "unsigned", "int", "float"],
    "sobel": ["const float*", "float*", "unsigned"],
    "reduce_max": ["const float*", "float*", "unsigned"],
    "reduce_min": ["const float*", "float*", "unsigned"],
    "extend": ["float*", "const float*", "const float*", "unsigned", "unsigned"],
    "unsharpen": ["const float*", "const float*", "float*", "float", "unsigned"],
    "combine": ["const float*", "const float*", "const float*", "float*", "unsigned"],
}


# The DAG's 15 edges within an image (before, after), as the Rust bench's `Node::deps`.
EDGES = [("upload", "blur-small"), ("upload", "blur-large"), ("upload", "blur-unsharpen"),
         ("blur-small", "sobel-small"), ("blur-large", "sobel-large"), ("sobel-large", "maximum"),
         ("sobel-large", "minimum"), ("maximum", "extend"), ("minimum", "extend"),
         ("blur-unsharpen", "unsharpen"), ("extend", "combine"), ("unsharpen", "combine"),
         ("combine", "combine-final"), ("sobel-small", "combine-final"), ("combine-final", "readback")]


def buffer_len(name, n):
    return REDUCE_BLOCKS if name.endswith("_partial") else n * n


def nodes(n):
    """The DAG's nodes in a topological order: (name, kernel, grid, block, args), each
    argument ("r" | "w" | "rw", buffer) or a scalar; kernel None for the two copies."""
    side, count = n, n * n
    g2 = ((n + BLOCK_2D[0] - 1) // BLOCK_2D[0], (n + BLOCK_2D[1] - 1) // BLOCK_2D[1])
    g1 = max(1, (count + BLOCK_1D - 1) // BLOCK_1D)

    def blur(out, f):
        return ("gaussian_blur", g2, BLOCK_2D, [("r", "image"), ("w", out), side, f[0], f[1]])

    def combine(x, y, m, o):
        return ("combine", g1, BLOCK_1D, [("r", x), ("r", y), ("r", m), ("w", o), count])

    table = [
        ("upload", None),
        ("blur-small", blur("blur_small", BLUR_SMALL)),
        ("blur-large", blur("blur_large", BLUR_LARGE)),
        ("blur-unsharpen", blur("blur_unsharpen", BLUR_UNSHARPEN)),
        ("sobel-small", ("sobel", g2, BLOCK_2D, [("r", "blur_small"), ("w", "mask_small"), side])),
        ("sobel-large", ("sobel", g2, BLOCK_2D, [("r", "blur_large"), ("w", "mask_large"), side])),
        ("maximum", ("reduce_max", REDUCE_BLOCKS, BLOCK_1D, [("r", "mask_large"), ("w", "max_partial"), count])),
        ("minimum", ("reduce_min", REDUCE_BLOCKS, BLOCK_1D, [("r", "mask_large"), ("w", "min_partial"), count])),
        ("extend", ("extend", g1, BLOCK_1D,
                    [("rw", "mask_large"), ("r", "max_partial"), ("r", "min_partial"), REDUCE_BLOCKS, count])),
        ("unsharpen", ("unsharpen", g1, BLOCK_1D,
                       [("r", "image"), ("r", "blur_unsharpen"), ("w", "sharpened"), UNSHARPEN_AMOUNT, count])),
        ("combine", combine("sharpened", "blur_large", "mask_large", "image2")),
        ("combine-final", combine("image2", "blur_small", "mask_small", "combined")),
        ("readback", None),
    ]
    return [(name, *(spec if spec else (None, None, None, None))) for name, spec in table]


# The NumPy reference: each kernel's arithmetic in float32, in the kernel's order.

def gaussian_weights(diameter, sigma):
    d, r, s = diameter, diameter // 2, float(sigma)
    raw = [np.exp(-0.5 * ((t // d - r) ** 2 + (t % d - r) ** 2) / (s * s)) for t in range(d * d)]
    total = 0.0
    for v in raw:  # in order, as the kernel sums
        total += v
    return np.array([v / total for v in raw], dtype=np.float32)


def blur_ref(img, n, diameter, sigma):
    w, r = gaussian_weights(diameter, sigma), diameter // 2
    pad = np.pad(img.reshape(n, n), r)  # outside pixels add w * 0 = +0: what skipping them gives
    acc = np.zeros((n, n), np.float32)
    for t in range(diameter * diameter):
        dy, dx = t // diameter, t % diameter
        acc = acc + w[t] * pad[dy:dy + n, dx:dx + n]
    return acc.reshape(-1)


def sobel_ref(img, n):
    kx = np.array([-1, 0, 1, -2, 0, 2, -1, 0, 1], np.float32)
    ky = np.array([-1, -2, -1, 0, 0, 0, 1, 2, 1], np.float32)
    pad = np.pad(img.reshape(n, n), 1)
    gx, gy = np.zeros((n, n), np.float32), np.zeros((n, n), np.float32)
    for k in range(9):
        v = pad[k // 3:k // 3 + n, k % 3:k % 3 + n]
        gx, gy = gx + kx[k] * v, gy + ky[k] * v
    return np.sqrt(gx * gx + gy * gy).reshape(-1)


def extend_ref(mask, mx, mn):
    t = np.float32(EXTEND_GAIN) * (mask - mn) / (mx - mn)
    return np.minimum(t, np.float32(1)).astype(np.float32)


def unsharpen_ref(x, blurred, amount):
    a = np.float32(amount)
    return np.clip(x * (np.float32(1) + a) - blurred * a, 0, 1).astype(np.float32)


def combine_ref(x, y, m):
    return x * m + y * (np.float32(1) - m)


def pipeline_ref(img, n):
    """The whole DAG on one image (n * n float32)."""
    bs, bl, bu = (blur_ref(img, n, *f) for f in (BLUR_SMALL, BLUR_LARGE, BLUR_UNSHARPEN))
    ms, ml = sobel_ref(bs, n), sobel_ref(bl, n)
    ml = extend_ref(ml, ml.max(), ml.min())
    image2 = combine_ref(unsharpen_ref(img, bu, UNSHARPEN_AMOUNT), bl, ml)
    return combine_ref(image2, bs, ms)


# The kernels' twins for the simulated backend: the reference on the task's views.

def _blur_twin(inp, out, n, diameter, sigma):
    out[:n * n] = blur_ref(inp[:n * n], n, diameter, sigma)


def _sobel_twin(inp, out, n):
    out[:n * n] = sobel_ref(inp[:n * n], n)


def _reduce_twin(fold, empty):
    def twin(inp, partial, count):
        # Any split into partials reduces to the same maximum (minimum): one partial
        # holds it, the others the identity, as blocks that saw nothing write.
        partial[:] = empty
        partial[0] = fold(inp[:count])
    return twin


def _extend_twin(mask, max_partial, min_partial, parts, count):
    mask[:count] = extend_ref(mask[:count], max_partial[:parts].max(), min_partial[:parts].min())


def _unsharpen_twin(x, blurred, out, amount, count):
    out[:count] = unsharpen_ref(x[:count], blurred[:count], amount)


def _combine_twin(x, y, m, out, count):
    out[:count] = combine_ref(x[:count], y[:count], m[:count])


TWINS = {
    "gaussian_blur": _blur_twin,
    "sobel": _sobel_twin,
    "reduce_max": _reduce_twin(np.max, -np.inf),
    "reduce_min": _reduce_twin(np.min, np.inf),
    "extend": _extend_twin,
    "unsharpen": _unsharpen_twin,
    "combine": _combine_twin,
}


def source():
    with open(SOURCE_PATH) as f:
        return f.read()


class ChariotImages:
    """The kernels registered on `sched` and `ring` resident buffer sets."""

    def __init__(self, sched, n, ring):
        self.s, self.n = sched, n
        src = source()
        self.kernels = {k: sched.register_kernel(gc.Kernel(k, src, p, twin=TWINS[k])) for k, p in PARAMS.items()}
        self.sets = [{b: sched.alloc_resident(buffer_len(b, n), "float32") for b in BUFFERS} for _ in range(ring)]
        self.nodes = nodes(n)

    def submit(self, inp, out, count):
        """Per image 13 tasks, ids 13 i + node, image i on set i mod K."""
        n2, per = self.n * self.n, len(self.nodes)
        use = {"r": "reads", "w": "writes", "rw": "reads_writes"}
        for i in range(count):
            bufs = self.sets[i % len(self.sets)]
            region = (i * n2, (i + 1) * n2)
            for j, (name, kernel, grid, block, args) in enumerate(self.nodes):
                t = self.s.task(i * per + j, n2)
                if name == "upload":
                    t.download(bufs["image"], 0, inp, region)
                elif name == "readback":
                    t.readback(out, region, bufs["combined"])
                else:
                    t.launch(self.kernels[kernel], grid, block,
                             [getattr(bufs[a[1]], use[a[0]])() if isinstance(a, tuple) else a for a in args])
                t.submit()

    def run(self, inp, out, count):
        self.submit(inp, out, count)
        return self.s.synchronize()


class CupyImages:
    """The same kernels through CuPy: the synchronous way and the stream pipeline."""

    def __init__(self, cp, n, ring, total):
        self.cp, self.n = cp, n
        module = cp.RawModule(code=source())
        self.fn = {k: module.get_function(k) for k in PARAMS}
        self.sets = [{b: cp.empty(buffer_len(b, n), cp.float32) for b in BUFFERS} for _ in range(ring)]
        self.streams = [cp.cuda.Stream(non_blocking=True) for _ in range(ring)]
        self.nodes = nodes(n)
        nbytes = total * 4
        self.h_in = np.frombuffer(cp.cuda.alloc_pinned_memory(nbytes), np.float32, total)
        self.h_out = np.frombuffer(cp.cuda.alloc_pinned_memory(nbytes), np.float32, total)

    def _image(self, i, bufs, stream, wait):
        n2 = self.n * self.n
        for name, kernel, grid, block, args in self.nodes:
            if name == "upload":
                bufs["image"].set(self.h_in[i * n2:(i + 1) * n2], stream=stream)
            elif name == "readback":
                bufs["combined"].get(stream=stream, out=self.h_out[i * n2:(i + 1) * n2], blocking=False)
            else:
                typed = []
                for p, a in zip(PARAMS[kernel], args):
                    if isinstance(a, tuple):
                        typed.append(bufs[a[1]])
                    else:
                        typed.append({"unsigned": np.uint32, "int": np.int32, "float": np.float32}[p](a))
                grid3 = grid if isinstance(grid, tuple) else (grid,)
                block3 = block if isinstance(block, tuple) else (block,)
                self.fn[kernel](grid3, block3, tuple(typed), stream=stream)
            if wait:
                stream.synchronize()

    def run(self, count, way):
        self.cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        if way == "cupy-sync":
            for i in range(count):
                self._image(i, self.sets[0], self.streams[0], True)
        else:
            k = len(self.sets)
            for i in range(count):
                self._image(i, self.sets[i % k], self.streams[i % k], False)
            for st in self.streams:
                st.synchronize()
        return (time.perf_counter() - t0) * 1e3


def fill(host, seed):
    rng = np.random.default_rng(seed)
    step = 1 << 24
    for a in range(0, len(host), step):
        host[a:a + step] = rng.random(min(step, len(host) - a), dtype=np.float32)


def check_ref(out, inp, n, images):
    """Worst |out - ref| over `images` against the NumPy reference, and pixels beyond the tolerance."""
    n2, worst, bad = n * n, 0.0, 0
    for i in images:
        ref = pipeline_ref(inp[i * n2:(i + 1) * n2], n)
        err = np.abs(out[i * n2:(i + 1) * n2] - ref)
        bad += int(np.count_nonzero(~(err <= TOLERANCE * np.maximum(1, np.abs(ref)))))
        worst = max(worst, float(np.nanmax(err)) if err.size else 0.0)
    return worst, bad


def rust_bench(binary, n, images, rounds, ring, csv_path):
    """The Rust image bench's medians by variant, ms, from its CSV."""
    cmd = [binary, "--backend", "cuda", "--size", str(n), "--images", str(images), "--rounds", str(rounds),
           "--ring", str(ring), "--csv", csv_path]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=600)
    by = {}
    for row in csv.DictReader(open(csv_path)):
        if row["warmup"] == "false":
            by.setdefault(row["variant"], []).append(int(row["wall_ns"]) / 1e6)
    return by


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, help="image side N (default 2048 on CUDA, 64 on sim)")
    p.add_argument("--images", type=int, help="images in the stream (default 256 on CUDA, 8 on sim)")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds after one warm-up")
    p.add_argument("--ring", type=int, default=4, help="buffer sets K (chariot's ring and CuPy's streams)")
    p.add_argument("--backend", default="auto", choices=["auto", "cuda", "sim"])
    p.add_argument("--check-every", type=int, default=16, help="every k-th image checked against NumPy")
    p.add_argument("--rust", help="the Rust image bench binary, run after the Python rounds")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    s = gc.Scheduler(backend=a.backend)
    sim = s.backend != "cuda"
    n = a.size or (64 if sim else 2048)
    count = a.images or (8 if sim else 256)
    if n < 1 or count < 1 or a.ring < 1 or a.rounds < 1 or a.check_every < 1:
        p.error("--size, --images, --ring, --rounds and --check-every must be at least 1")
    total = n * n * count
    inp, out = s.alloc_host(total, "float32"), s.alloc_host(total, "float32")
    fill(np.asarray(inp), 1)
    ours = ChariotImages(s, n, a.ring)
    cup = None
    if not sim:
        import cupy as cp
        cup = CupyImages(cp, n, a.ring, total)
        cup.h_in[:] = np.asarray(inp)
    sampled = range(0, count, 1 if sim else a.check_every)
    ways = ["chariot-py"] + ([] if sim else ["cupy-sync", "cupy-streams"])
    rows, times, reference = [], {w: [] for w in ways}, None
    if cup is not None:
        # The synchronous way's output, which every run must equal exactly.
        cup.run(count, "cupy-sync")
        reference = cup.h_out.copy()
    for rnd in range(a.rounds + 1):
        for j in range(len(ways)):
            way = ways[(j + rnd) % len(ways)]
            if way == "chariot-py":
                np.asarray(out)[:] = np.nan
                t0 = time.perf_counter()
                report = ours.run(inp, out, count)
                ms = (time.perf_counter() - t0) * 1e3
                got, makespan = np.asarray(out), report.makespan_ms
            else:
                cup.h_out[:] = np.nan
                ms = cup.run(count, way)
                got, makespan = cup.h_out, None
            exact = "" if reference is None else int(np.count_nonzero(got != reference))
            worst, bad = check_ref(got, np.asarray(inp), n, sampled) if rnd == 0 or way == "chariot-py" else ("", "")
            rows.append({"way": way, "round": rnd, "warmup": rnd == 0, "wall_ms": round(ms, 3),
                         "makespan_ms": "" if makespan is None else round(makespan, 3), "n": n, "images": count,
                         "ring": a.ring, "differ_from_sync": exact, "ref_images": len(sampled), "ref_bad": bad,
                         "ref_max_err": worst})
            print(f"  round {rnd} {way:<13} {ms:10.3f} ms  differ from sync {exact!s:>3}  "
                  f"reference {'-' if bad == '' else ('ok' if bad == 0 else f'{bad} BAD')}", flush=True)
            if rnd > 0:
                times[way].append(ms)
    rust = {}
    if a.rust and not sim:
        if os.access(a.rust, os.X_OK):
            rust = rust_bench(a.rust, n, count, a.rounds, a.ring, os.path.join(a.out, "images-rust.csv"))
        else:
            print(f"images: no Rust bench at {a.rust}", file=sys.stderr)
    with open(os.path.join(a.out, "images-py.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    med = {w: statistics.median(t) for w, t in times.items()}
    med.update({f"rust-{v}": statistics.median(t) for v, t in rust.items()})
    sync = med.get("cupy-sync")
    for w, m in med.items():
        print(f"{w:>20}: {m:10.3f} ms {m * 1e3 / count:9.1f} us/image"
              + (f"  {sync / m:.2f}x cupy-sync" if sync else ""))
    failed = any(r["ref_bad"] not in ("", 0) for r in rows) or any(
        r["differ_from_sync"] not in ("", 0) for r in rows)
    if sync:
        py = med["chariot-py"]
        print(f"chariot-py over cupy-sync {sync / py:.2f}x (GrCUDA's figure 1.44x)")
        if "rust-chariot" in med:
            print(f"chariot-py / chariot-rust wall {py / med['rust-chariot']:.3f} (goal <= 1.05); "
                  f"rust over its own sync {med['rust-sync'] / med['rust-chariot']:.2f}x")
    print("every check passed" if not failed else "SOME OUTPUTS DIFFER")
    s.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
