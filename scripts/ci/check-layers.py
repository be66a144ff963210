#!/usr/bin/env python3
# The layer rule of the runtime crate (the root package, gpu-chariot): imports run one way, lowest first.
# A module may import from its own layer and the layers below it, never from above.
#
#  layer          what lives there
#  12 api         lib.rs: the public paths (`pub use`) and its facade modules (tuning, sim,
#                 resident, cuda: `pub mod name { pub use ... }`), nothing of its own
#  11 front       builder, task::builder: Builder, TaskBuilder, Scheduler::{builder, task}
#  10 scheduler   Scheduler: allocation, kernel registration, submit, synchronize, shutdown
#   9 dispatch    Dispatcher (Algorithms 1, 2), executioners, affinity, Shared (Q, P_k, batch, records)
#                 cluster: the MPI hand-out of a task stream and the ranks' exchange
#   8 commands    callback (CallInfo, GpuCall), kernel (Kernel, Arg, TwinArgs), task (Task, Command, Q,
#                 and their lowering to device operations, task::lower)
#   7 backend     Machine and Gpu over cuda | sim: open, allocate, load kernels' code, issue device
#                 operations and graphs of them, poll; it knows nothing of tasks
#   6 config      Gpus, Config, Order, Execution: what the builder validated
#   5 memory      HostBuffer and its region claims, DeviceBuffer, Graveyard (frees through FreeDevice);
#                 backend::host_alloc::exclusive: writes host bytes against the claims' proof
#   4 error       Error, Result, BoxError, the typed details (LengthProblem, HostRegion, ConflictHolder, MemoryKind)
#   3 report      Report, CommandRecord, TaskFailure, DriverError, bounds, critical path, the ideal (zero-overhead) schedule, trace, adaptation lines
#   2 stage       Stage, OverlapMatrix, Thresholds, Tuning (the choice), the adaptation rule, queues P_k
#   1 device      backend::{device, host_alloc, op, op_failure}: GpuInfo, PhysBuf, SimMemory, Function,
#                 KernelCode, Param, HostAlloc; the device operations (copy, upload, peer copy, fill, launch,
#                 host function, graph), what they borrow, and why one fails (OpFailure, CallbackFailure)
#   0 primitives  sync (std | shuttle), signal (Signal), ids (TaskId, the in-callback mark)
#
# The extensions (src/ext/: replay windows, resident data, the cluster form; each behind
# a cargo feature) sit in the same layers, file by file (see LAYERS), with one more rule:
# the core never imports an extension. A module under `ext::` may import the core; a
# module outside it may name an extension only through `crate::seam`, whose re-exports
# this script follows to the module that defines each name (so the layers still hold
# across the seam). Only lib.rs (the public paths), `ext` itself and `seam` name
# `crate::ext` directly. An import through the seam is a hook (the core compiles against
# its stand-in without the extension): it counts for the layers, not for cycles.
#
# Tests (`#[cfg(test)]` items, src/model_check.rs and test modules in files of their own)
# may import anything: they are not
# part of the library's graph, and are skipped.
#
# Why this order (the code's dependencies, not a wish): `Error::TasksFailed` carries a
# `Report`, so the report and the `TaskFailure`/`DriverError` it lists sit below error;
# the report names stages, the `Tuning` and the adaptation's changes, so stage sits below
# report; the stage rules read `GpuInfo` and memory holds physical buffers and host
# blocks, so those few backend values are layer 1 (kept in backend/ with the `unsafe`
# they need; so is the safe writer over claimed host bytes, in layer 5 as it names the
# claims' proof, memory::claims, an entry of its own so memory -> writer -> claims is
# no cycle). The backend proper runs device operations, which commands are lowered
# to above it (`task::lower`; a resident fetch in `ext::resident::task`, a replay
# window in `ext::replay::window`): so it sits below the commands, kernels, callbacks
# and the extensions' task-level parts, and this rule keeps it from knowing of tasks;
# it reads the GPU selection (config) and frees through memory's `FreeDevice`. Resident
# data (`ext::resident::memory`) stays below it, in layer 5: memory's device targets and
# kernel arguments name it. `Builder::build` and `TaskBuilder::submit` call the scheduler,
# so the builders sit above it, with `Scheduler::builder` and `Scheduler::task` beside
# them. Study code (the demo, the hand-written pipelines, plots) is another crate, the
# root package chariot-studies, which depends on this one: cargo keeps that one way.
#
# Usage: python3 scripts/ci/check-layers.py            check src/ (exit 1 on a violation)
#        python3 scripts/ci/check-layers.py --graph    the same, listing the imports between
#                                                   entries (layer, entry -> layer, entry)
#        python3 scripts/ci/check-layers.py --self-test
#
# It reads every src/**/*.rs but src/bin/ (other crates), strips comments, strings and
# test items, and resolves `use` trees, `crate::`/`super::`/`self::` paths and paths
# through a child module to the module they name (a root name such as `crate::Error`
# through lib.rs's `pub use`). It fails on an import from a higher layer, a file no
# entry of LAYERS covers, an entry that covers no file, a root name it cannot resolve,
# and a cycle between entries of one layer. Standard library only.

import bisect
import os
import re
import sys
import tempfile

# Module path prefix -> layer (keep in step with the picture above). The longest prefix
# that matches a module decides. `crate` is lib.rs, `main` is src/main.rs (the binary;
# it only names `chariot::`); layer 14 is the tests' (not checked).
LAYERS = {
    "sync": 0,
    "signal": 0,
    "ids": 0,
    "backend::device": 1,
    "backend::host_alloc": 1,
    "backend::op": 1,
    "backend::op_failure": 1,
    "stage": 2,
    "report": 3,
    "error": 4,
    "memory": 5,
    "memory::claims": 5,
    "backend::host_alloc::exclusive": 5,
    "config": 6,
    "execution": 6,
    "backend": 7,
    "callback": 8,
    "kernel": 8,
    "task": 8,
    "dispatch": 9,
    "scheduler": 10,
    "builder": 11,
    "task::builder": 11,
    "crate": 12,
    "tuning": 12,
    "sim": 12,
    "resident": 12,
    "cuda": 12,
    "cluster": 12,
    "graph": 12,
    # The extensions, each file in the layer of the core code it extends.
    "ext": 12,
    "ext::replay": 10,
    "ext::replay::window": 8,
    "ext::replay::queues": 9,
    "ext::replay::dispatch": 9,
    "ext::replay::capture": 10,
    "ext::resident": 10,
    "ext::resident::memory": 5,
    "ext::resident::shared": 5,
    "ext::resident::task": 8,
    "ext::resident::dispatch": 9,
    "ext::resident::admit": 9,
    "ext::cluster": 9,
    "ext::cluster::ranks": 10,
    # The seam: its names resolve to the modules that define them; its stand-ins for
    # extensions built without their feature import what they need.
    "seam": 12,
    "model_check": 14,
    "report::lower_bound::test": 14,
    "scheduler::test": 14,
}

NAMES = {
    0: "primitives",
    1: "device",
    2: "stage",
    3: "report",
    4: "error",
    5: "memory",
    6: "config",
    7: "backend",
    8: "commands",
    9: "dispatch",
    10: "scheduler",
    11: "front",
    12: "api",
    14: "tests",
}

# Layers whose files are tests: they may import anything and are not checked.
TEST_LAYERS = {14}

# The extensions' root module, and the one module of the core that may name it.
EXT = "ext"
SEAM = "seam"
# The public facades lib.rs declares inline (`pub mod resident { pub use … }`): part of the
# api layer, not the core, so they may name an extension's public items.
FACADES = ("tuning", "sim", "resident", "cuda", "cluster", "graph")


def in_ext(module):
    return module == EXT or module.startswith(EXT + "::")

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
CHAR_LIT = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|.)|[^\\'\n])'")
RAW_STR = re.compile(r'b?r(#*)"')


def blank(s):
    """Spaces for every character of s but newlines (so offsets and lines stay)."""
    return "".join(c if c == "\n" else " " for c in s)


def strip(text):
    """The code of a Rust file with comments blanked and literals emptied."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif c in "rb" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) and RAW_STR.match(text, i):
            m = RAW_STR.match(text, i)
            end = text.find('"' + m.group(1), m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append(text[i : m.end()] + blank(text[m.end() : j - 1 - len(m.group(1))]) + text[j - 1 - len(m.group(1)) : j])
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + blank(text[i + 1 : j]) + '"')
            i = j + 1
        elif c == "'" and CHAR_LIT.match(text, i):
            m = CHAR_LIT.match(text, i)
            out.append(blank(m.group(0)))
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


CFG = re.compile(r"#\s*\[\s*cfg\s*\((.*?)\)\s*\]", re.S)


def test_only(cond):
    cond = cond.replace(" ", "").replace("\n", "")
    return cond == "test" or (cond.startswith("all(") and re.search(r"[(,]test[,)]", cond) is not None)


def item_end(code, i):
    """Where the item starting at i (after its attributes) ends: after its `;` or its
    matching `}`."""
    n = len(code)
    while True:
        while i < n and code[i].isspace():
            i += 1
        if not code.startswith("#", i):
            break
        depth = 0
        while i < n:
            depth += {"[": 1, "]": -1}.get(code[i], 0)
            i += 1
            if code[i - 1] == "]" and depth == 0:
                break
    depth = 0
    while i < n:
        c = code[i]
        if c == ";" and depth == 0:
            return i + 1
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0 and c == "}":
                return i + 1
        i += 1
    return n


def drop_tests(code):
    """The code with every `#[cfg(test)]` (or `all(test, ..)`) item blanked."""
    while True:
        for m in CFG.finditer(code):
            if test_only(m.group(1)):
                end = item_end(code, m.end())
                code = code[: m.start()] + blank(code[m.start() : end]) + code[end:]
                break
        else:
            return code


def module_of(rel):
    """Module path of a file under src/ ('' for lib.rs)."""
    parts = rel[:-3].split("/")
    if parts == ["lib"]:
        return ""
    if parts[-1] == "mod":
        parts = parts[:-1]
    return "::".join(parts)


def key_of(module, layers):
    """The LAYERS entry that covers module (longest prefix), or None."""
    if module == "":
        return "crate" if "crate" in layers else None
    best = None
    for k in layers:
        if k != "crate" and (module == k or module.startswith(k + "::")) and (best is None or len(k) > len(best)):
            best = k
    return best


def parse_use_tree(text):
    """The paths of a use tree: (segments, the name it binds); a glob ends in '*'."""
    toks = re.findall(IDENT + r"|::|[{},*]", text)
    pos = 0

    def tree(prefix):
        nonlocal pos
        segs, name = list(prefix), None
        while pos < len(toks):
            t = toks[pos]
            if t == "::":
                pos += 1
            elif t == "{":
                pos += 1
                paths = []
                while pos < len(toks) and toks[pos] != "}":
                    if toks[pos] == ",":
                        pos += 1
                    else:
                        paths += tree(segs)
                pos += 1
                return paths
            elif t in ",}":
                break
            elif t == "as":
                name = toks[pos + 1] if pos + 1 < len(toks) else None
                pos += 2
            elif t == "self" and segs:
                pos += 1
            else:
                segs.append(t)
                pos += 1
        return [(segs, name or (segs[-1] if segs else None))]

    result = []
    while pos < len(toks):
        if toks[pos] == ",":
            pos += 1
        else:
            result += tree([])
    return result


USE = re.compile(r"\buse\s+((?:::)?[^;]*);")
ROOTED = re.compile(r"(?<![\w$])\$?\b(crate|super|self)\s*::\s*(" + IDENT + r"(?:\s*::\s*" + IDENT + r")*)")
CHILD = re.compile(r"(?<![\w:.$])(" + IDENT + r")\s*::\s*(" + IDENT + r"(?:\s*::\s*" + IDENT + r")*)")
INLINE_MOD = re.compile(r"\bmod\s+(" + IDENT + r")\s*\{|[{}]")


def inline_scopes(code):
    """(start, end, names) of every inline `mod x { .. }`."""
    scopes, stack, depth = [], [], 0
    for m in INLINE_MOD.finditer(code):
        if m.group(1):
            depth += 1
            stack.append((m.group(1), depth, m.start()))
        elif m.group(0) == "{":
            depth += 1
        else:
            if stack and stack[-1][1] == depth:
                name, _, start = stack.pop()
                scopes.append((start, m.end(), [s[0] for s in stack] + [name]))
            depth -= 1
    return scopes


class Tree:
    def __init__(self, root):
        self.root = root
        self.files = {}  # rel path -> (module, code)
        src = os.path.join(root, "src")
        for dirpath, dirnames, filenames in os.walk(src):
            rel_dir = os.path.relpath(dirpath, src).replace(os.sep, "/")
            if rel_dir == "bin" or rel_dir.startswith("bin/"):
                dirnames[:] = []
                continue
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(".rs"):
                    rel = f if rel_dir == "." else rel_dir + "/" + f
                    with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                        text = fh.read()
                    module = "main" if rel == "main.rs" else module_of(rel)
                    self.files[rel] = (module, drop_tests(strip(text)))
        self.modules = {m for m, _ in self.files.values()}
        for module, code in self.files.values():
            for _, _, names in inline_scopes(code):
                self.modules.add("::".join(([module] if module else []) + names))
        self.root_names = {}
        lib = self.files.get("lib.rs")
        if lib:
            for m in USE.finditer(lib[1]):
                for path, name in parse_use_tree(m.group(1)):
                    if path and path[-1] != "*":
                        self.root_names[name] = path
        # The seam's re-exports: a name's first one (the extension's; its stand-in for
        # the feature off comes after it) is what a path through `crate::seam` names.
        self.seam_names = {}
        seam = self.files.get(SEAM + ".rs") or self.files.get(SEAM + "/mod.rs")
        if seam:
            for m in USE.finditer(seam[1]):
                for path, name in parse_use_tree(m.group(1)):
                    if path and path[-1] != "*" and path[0] == "crate":
                        self.seam_names.setdefault(name, path)

    def is_module(self, segs):
        return "::".join(segs) in self.modules

    def resolve(self, current, segs, depth=0):
        """The module a path names (a list of segments), or None if it leaves the crate."""
        return self.resolve_ex(current, segs, depth)[0]

    def resolve_ex(self, current, segs, depth=0):
        """resolve, and whether the path went through the seam's re-exports."""
        base = current.split("::") if current else []
        segs = list(segs)
        first = segs.pop(0)
        if first == "crate":
            base = []
        elif first == "super":
            base = base[:-1]
            while segs and segs[0] == "super":
                segs.pop(0)
                base = base[:-1]
        elif first == "self":
            pass
        elif self.is_module(base + [first]):
            base = base + [first]
        else:
            return None, False
        while segs and segs[0] != "*" and self.is_module(base + [segs[0]]):
            base.append(segs.pop(0))
        if not base and segs and segs[0] != "*":
            target = self.root_names.get(segs[0])
            if target is None or depth > 8:
                return "?" + segs[0], False
            return self.resolve_ex("", target, depth + 1)
        if base == [SEAM] and segs and segs[0] in self.seam_names and depth <= 8:
            return self.resolve_ex("", self.seam_names[segs[0]], depth + 1)[0], True
        return "::".join(base), False


def check(root, layers=None, names=None, out=sys.stdout, graph_out=None):
    """Checks the tree at root; returns the number of problems found. With graph_out,
    also writes there every import between two entries of LAYERS, one line each."""
    layers = LAYERS if layers is None else layers
    names = NAMES if names is None else names
    tree = Tree(root)
    problems = []
    edges = {}  # (key, key) -> first place
    checked = 0

    def layer_text(key):
        n = layers[key]
        return f"layer {n} {names.get(n, '')}".rstrip()

    covered = set()
    for rel, (module, code) in sorted(tree.files.items()):
        key = key_of(module, layers)
        if key is None:
            problems.append(f"src/{rel}: module `{module or 'crate'}` is in no layer (add it to LAYERS)")
            continue
        covered.add(key)
        if layers[key] in TEST_LAYERS or rel == "main.rs":
            continue
        line_starts = [0] + [i + 1 for i, c in enumerate(code) if c == "\n"]
        scopes = inline_scopes(code)
        for _, _, inner in scopes:
            inner_key = key_of("::".join(([module] if module else []) + inner), layers)
            if inner_key:
                covered.add(inner_key)

        def where(pos):
            """The module at pos: the file's, or the innermost inline `mod` around pos."""
            inner = sorted((s for s in scopes if s[0] <= pos < s[1]), key=lambda s: s[1] - s[0])
            return "::".join(([module] if module else []) + (inner[0][2] if inner else []))

        refs = []  # (pos, segments)
        rest = code
        for m in USE.finditer(code):
            for path, _ in parse_use_tree(m.group(1)):
                if path:
                    refs.append((m.start(), path))
            rest = rest[: m.start()] + blank(rest[m.start() : m.end()]) + rest[m.end() :]
        for m in ROOTED.finditer(rest):
            refs.append((m.start(), [m.group(1)] + re.split(r"\s*::\s*", m.group(2))))
        for m in CHILD.finditer(rest):
            if m.group(1) in ("crate", "super", "self", "Self"):
                continue
            here = where(m.start())
            if tree.is_module((here.split("::") if here else []) + [m.group(1)]):
                refs.append((m.start(), [m.group(1)] + re.split(r"\s*::\s*", m.group(2))))
        for pos, segs in sorted(refs, key=lambda r: r[0]):
            here = where(pos)
            target, via_seam = tree.resolve_ex(here, segs)
            line = bisect.bisect_right(line_starts, pos)
            shown = "::".join(segs)
            if target is None:
                continue
            if target.startswith("?"):
                problems.append(f"src/{rel}:{line}: `{shown}` names `{target[1:]}`, which lib.rs does not re-export")
                continue
            if target == here:
                continue
            tkey = key_of(target, layers)
            if tkey is None:
                problems.append(f"src/{rel}:{line}: `{shown}` names module `{target}`, which is in no layer")
                continue
            checked += 1
            here_key = key_of(here, layers)
            if in_ext(target) and not via_seam and not (in_ext(here) or here in ("", SEAM) or here in FACADES or here.startswith(SEAM + "::")):
                problems.append(
                    f"src/{rel}:{line}: the core's {here} imports `{shown}` from extension {target}; "
                    f"the core reaches an extension only through crate::{SEAM}"
                )
            # A hook through the seam takes part in no cycle: the core compiles against
            # its stand-in without the extension, so the extension depends on the core
            # and not the other way round.
            if tkey != here_key and not via_seam:
                edges.setdefault((here_key, tkey), f"src/{rel}:{line}")
            if layers[tkey] > layers[here_key]:
                problems.append(
                    f"src/{rel}:{line}: {here_key} ({layer_text(here_key)}) imports `{shown}` "
                    f"from {tkey} ({layer_text(tkey)})"
                )
    for key in sorted(set(layers) - covered):
        problems.append(f"LAYERS names `{key}`, which no file under src/ is")

    # Cycles between entries (within one layer: across layers one edge is already upward).
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    for comp in sccs(graph):
        if len(comp) > 1 and len({layers[k] for k in comp}) == 1:
            places = [f"{a} -> {b} at {edges[(a, b)]}" for a in sorted(comp) for b in sorted(comp) if (a, b) in edges]
            problems.append(f"cycle in layer {layers[comp[0]]}: " + "; ".join(places))

    if graph_out is not None:
        for (a, b), place in sorted(edges.items(), key=lambda e: (-layers[e[0][0]], e[0])):
            print(f"{layers[a]:>2} {a} -> {layers[b]:>2} {b}  (first at {place})", file=graph_out)
    for p in problems:
        print(p, file=out)
    print(
        f"check-layers: {len(tree.files)} files, {checked} imports checked, {len(problems)} problem(s)",
        file=out,
    )
    return len(problems)


def sccs(graph):
    """Strongly connected components (Tarjan), each a sorted list."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    nodes = sorted(set(graph) | {b for bs in graph.values() for b in bs})

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def self_test():
    """Runs the checker on small fake trees: each must pass or fail as stated."""
    import io

    layers = {"low": 0, "low::top": 2, "mid": 1, "mid::sub": 0, "high": 2, "crate": 3, "ext": 3, "ext::feat": 1, "seam": 3}
    lib = "mod low;\nmod mid;\nmod high;\nmod ext;\nmod seam;\npub use high::Thing;\npub use low::Base as Renamed;\n"
    good = {
        "lib.rs": lib,
        "low.rs": "pub struct Base;\n// use crate::high::Thing; (a comment)\n"
        'const S: &str = "crate::high::Thing";\nconst R: &str = r#"crate::high::{x}"#;\n'
        "#[cfg(test)]\nmod test {\n    use crate::high::Thing;\n    fn f() { let _ = crate::Thing; }\n}\n",
        "mid/mod.rs": "mod sub;\nuse crate::low::Base;\nuse sub::Leaf;\npub fn f() -> crate::Renamed { Base }\n",
        "mid/sub.rs": "pub struct Leaf;\npub fn g() -> crate::low::Base { crate::low::Base }\n",
        "high.rs": "use crate::{low::Base, mid};\npub struct Thing;\nfn f() { mid::f(); let _ = super::low::Base; }\n",
        "low/top.rs": "pub fn g() { let _ = crate::high::Thing; }\n",
        "ext/mod.rs": "pub mod feat;\n",
        "ext/feat.rs": "use crate::low::Base;\npub struct Hook;\npub fn hook() -> Base { Base }\n",
        "seam.rs": "#[cfg(feature = \"feat\")]\npub use crate::ext::feat::{hook, Hook};\n"
        "#[cfg(not(feature = \"feat\"))]\npub use off::Hook;\nmod off {\n    pub struct Hook;\n}\n",
    }
    good["mid/mod.rs"] += "fn h() { let _ = crate::seam::hook(); }\n"
    cases = [
        ("a clean tree passes", good, 0, []),
        (
            "an upward `use` fails",
            dict(good, **{"low.rs": "use crate::high::Thing;\npub struct Base;\n"}),
            1,
            ["src/low.rs:1: low (layer 0) imports `crate::high::Thing` from high (layer 2)"],
        ),
        (
            "an upward root name (through lib.rs) fails",
            dict(good, **{"low.rs": "pub struct Base;\nfn f() -> crate::Thing { todo!() }\n"}),
            1,
            ["src/low.rs:2: low (layer 0) imports `crate::Thing` from high (layer 2)"],
        ),
        (
            "an upward `super::` path out of a lower child fails",
            dict(good, **{"mid/sub.rs": "pub struct Leaf;\nuse super::f;\n"}),
            1,
            ["src/mid/sub.rs:2: mid::sub (layer 0) imports `super::f` from mid (layer 1)"],
        ),
        (
            "an upward path in a group fails",
            dict(good, **{"mid/sub.rs": "pub struct Leaf;\nuse crate::{low::Base, high::{self, Thing}};\n"}),
            2,
            ["imports `crate::high` from high", "imports `crate::high::Thing` from high"],
        ),
        (
            "an upward path through a child module fails",
            dict(good, **{"low.rs": "mod top;\npub struct Base;\nfn f() { top::g(); }\n"}),
            1,
            ["src/low.rs:3: low (layer 0) imports `top::g` from low::top (layer 2)"],
        ),
        (
            "a file in no layer fails",
            dict(good, **{"extra.rs": "pub struct X;\n", "lib.rs": lib + "mod extra;\n"}),
            1,
            ["src/extra.rs: module `extra` is in no layer"],
        ),
        (
            "an entry that covers no file fails",
            {k: v for k, v in good.items() if k != "low/top.rs"},
            1,
            ["LAYERS names `low::top`, which no file under src/ is"],
        ),
        (
            "the core importing an extension outside the seam fails",
            dict(good, **{"high.rs": good["high.rs"] + "use crate::ext::feat::Hook;\n"}),
            1,
            ["src/high.rs:4: the core's high imports `crate::ext::feat::Hook` from extension ext::feat"],
        ),
        (
            "a name through the seam keeps its module's layer",
            dict(good, **{"mid/sub.rs": "pub struct Leaf;\nuse crate::seam::Hook;\n"}),
            1,
            ["src/mid/sub.rs:2: mid::sub (layer 0) imports `crate::seam::Hook` from ext::feat (layer 1)"],
        ),
        (
            "a cycle inside a layer fails",
            dict(good, **{"low.rs": "pub struct Base;\nuse crate::mid::sub::Leaf;\n"}),
            1,
            ["cycle in layer 0"],
        ),
    ]
    failed = 0
    for name, files, want, lines in cases:
        with tempfile.TemporaryDirectory() as d:
            for rel, text in files.items():
                path = os.path.join(d, "src", rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
            buf = io.StringIO()
            got = check(d, layers, {}, buf)
            text = buf.getvalue()
            ok = got == want and all(line in text for line in lines)
            print(f"self-test: {'ok  ' if ok else 'FAIL'} {name}")
            if not ok:
                failed += 1
                print(f"  wanted {want} problem(s) with {lines}; got {got}:\n" + text)
    print(f"self-test: {len(cases) - failed} of {len(cases)} cases as expected")
    return failed


def main(argv):
    if argv[1:] == ["--self-test"]:
        return 1 if self_test() else 0
    if argv[1:] not in ([], ["--graph"]):
        print("usage: python3 scripts/ci/check-layers.py [--self-test | --graph]", file=sys.stderr)
        return 2
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return 1 if check(root, graph_out=sys.stdout if argv[1:] == ["--graph"] else None) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
