#!/usr/bin/env python3
"""The SASS of chariot-align's DPX kernel, compiled here as chariot compiles it (NVRTC,
--gpu-architecture=sm_90 --std=c++17), without a GPU: registers, stack, and the opcode mix
of its column-step loops, a step at a time. How the kernel's loop was tuned: ptxas
decides which pipe each operation lands on (an add it fuses into a DPX max runs on the
ALU pipe), and which registers a branch or a loop-carried array costs in copies.

Needs NVRTC and cuobjdump of CUDA 13.0, from NVIDIA's wheels (no GPU, no toolkit):
    pip download --no-deps "nvidia-cuda-nvrtc==13.0.*" nvidia-cuda-cuobjdump -d wheels
    for w in wheels/*.whl; do unzip -o -q "$w" -d cuda; done
    export CUDA_WHEELS=$PWD/cuda/nvidia/cu13 LD_LIBRARY_PATH=$PWD/cuda/nvidia/cu13/lib

Usage: kernel-sass.py [SRC] [R=16|R=32|R=all] [MACRO[=VALUE] ...] [--all-loops] [--dump FILE]
  SRC     the kernel source (default crates/chariot-align/kernels/sw.cu)
  R=      compile one strip height's path alone (the other and the 32-bit re-pass dead),
          or the whole kernel (R=all: registers and stack only, as the host loads it)
  MACRO   #defines put before the source (default SW_ONLY_DPX; SW_ONLY_PORTABLE for the
          portable kernel)
Prints the function's resources, then the innermost loop holding the DPX maxes: its
instructions a column step (PRMTs / R: one a row) and its most frequent opcodes.
"""
import collections
import ctypes
import os
import re
import subprocess
import sys


def main(argv):
    args = list(argv)
    dump = None
    all_loops = "--all-loops" in args
    if all_loops:
        args.remove("--all-loops")
    if "--dump" in args:
        i = args.index("--dump")
        dump = args[i + 1]
        del args[i:i + 2]
    src_path = "crates/chariot-align/kernels/sw.cu"
    if args and not re.match(r"^(R=|[A-Z_]+(=|$))", args[0]):
        src_path = args.pop(0)
    strip = "all"
    defs = []
    for a in args:
        if a.startswith("R="):
            strip = a[2:]
        else:
            defs.append(a)
    if strip not in ("16", "32", "all"):
        sys.exit(f"R={strip}: allowed 16, 32 or all")
    if not any(d.startswith("SW_ONLY") for d in defs):
        defs.insert(0, "SW_ONLY_DPX")
    try:
        with open(src_path) as f:
            src = f.read()
    except OSError as e:
        sys.exit(f"{src_path}: {e.strerror} (the kernel source to compile)")
    if strip != "all":
        src = src.replace("strip == 16", "true" if strip == "16" else "false")
        src = src.replace("__syncthreads_or(need_", "false && __syncthreads_or(need_")
    src = "".join(f"#define {d.replace('=', ' ', 1)}\n" for d in defs) + src
    wheels = os.environ.get("CUDA_WHEELS")
    if not wheels:
        sys.exit("set CUDA_WHEELS to the unpacked wheels' nvidia/cu13 folder (see --help)")
    cubin = compile_cubin(src, os.path.join(wheels, "lib", "libnvrtc.so.13"))
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"kernel-sass-{os.getpid()}.cubin")
    with open(tmp, "wb") as f:
        f.write(cubin)
    objdump = os.path.join(wheels, "bin", "cuobjdump")
    if not os.access(objdump, os.X_OK):
        os.remove(tmp)
        sys.exit(f"{objdump}: not an executable (cuobjdump from the nvidia-cuda-cuobjdump wheel; see --help)")
    try:
        res = subprocess.run([objdump, "-res-usage", tmp], capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([objdump, "-sass", tmp], capture_output=True, text=True, check=True).stdout
    finally:
        os.remove(tmp)
    print(" ".join(l.strip() for l in res.splitlines() if "REG" in l or "Function" in l))
    if dump:
        with open(dump, "w") as f:
            f.write(sass)
    if strip != "all":
        loops(sass, int(strip), all_loops)


def compile_cubin(src, lib_path):
    try:
        lib = ctypes.CDLL(lib_path)
    except OSError as e:
        sys.exit(f"{lib_path}: {e} (NVRTC 13.0 from the nvidia-cuda-nvrtc wheel; see --help)")
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"sw.cu", 0, None, None) != 0:
        sys.exit("nvrtcCreateProgram failed")
    opts = [b"--gpu-architecture=sm_90", b"--std=c++17"]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    n = ctypes.c_size_t()
    if rc != 0:
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, log)
        sys.exit(log.value.decode())
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetCUBIN(prog, buf)
    return buf.raw


def loops(sass, strip, all_loops):
    ins = []
    for line in sass.splitlines():
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2).strip()))
    op = lambda t: re.sub(r"^@!?U?P\w+\s+", "", t).split()[0]
    dpx = lambda ops: sum(1 for o in ops if o.startswith(("VIADDMNMX", "VIMNMX")))
    found = []
    for a, t in ins:
        m = re.search(r"BRA\s+(?:\S+,\s*)?0x([0-9a-f]+)", t)
        if m and int(m.group(1), 16) <= a:
            tgt = int(m.group(1), 16)
            ops = [op(x) for b, x in ins if tgt <= b <= a]
            if "SHFL.UP" in ops and dpx(ops) > 0:
                found.append((tgt, a, ops))
    found.sort(key=lambda l: len(l[2]))
    for tgt, a, ops in found if all_loops else found[:1]:
        c = collections.Counter(ops)
        steps = max(1.0, c["PRMT"] / strip)
        mix = ", ".join(f"{k} {v / steps:.0f}" for k, v in c.most_common(14))
        print(f"loop {tgt:#x}..{a:#x} ({steps:g} steps): {len(ops) / steps:.0f} instructions a step: {mix}")


if __name__ == "__main__":
    if "--help" in sys.argv[1:] or "-h" in sys.argv[1:]:
        print(__doc__)
        sys.exit(0)
    main(sys.argv[1:])
