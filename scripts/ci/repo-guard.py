#!/usr/bin/env python3
"""Keeps the repository from drifting back into disorder. Fails (exit 1, one line per
finding) on:

  pycache    a tracked __pycache__/ folder or .pyc file
  shebang    a script under scripts/ (.sh, .py) without a shebang on its first line
             (Python: #!/usr/bin/env python3), or a bash script without a
             `set -euo pipefail` line
  scripts    a file directly in scripts/ (but its README): scripts live in a role folder
             (ci/, gpu/, emulate/, ...), and each file of a role folder is named in that
             folder's README.md
  results    a results folder without a README.md: results/ itself, each device folder
             results/<kind>/ (which holds nothing but its README and its run folders),
             and each run folder results/<kind>/<run>/ (its sub-folders are the run's
             and are described by its README)
  index      a run folder that results/README.md does not link to
  tracker    a tracker number ("issue" and a number) in docs/, README files, scripts/,
             results READMEs, Cargo.toml, .ci/run, or a comment line of a .rs file:
             name the concept instead
  outside    a path outside the repository (the parent's shared folder or the
             developer machine's work folder) in any tracked text file
  stringerr  a `Result<T, E>` in the runtime's code (src/, comment lines aside) whose
             error type E is or holds a `String` (`String`, `Option<String>`, ...):
             internal errors are typed values, written out once where they reach a
             public type; STRING_ERR_ALLOWED names the few that must stay, each with why

Usage: python3 scripts/ci/repo-guard.py [ROOT]     check a checkout (default: this one)
       python3 scripts/ci/repo-guard.py --self-test
Standard library only.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Built from pieces so that this file does not match its own patterns.
TRACKER = re.compile(r"\b[Ii]ssues?\s?#?[0-9]")
OUTSIDE = re.compile(re.escape("../" + "shared") + "|" + re.escape("/" + "work/"))
RUST_COMMENT = re.compile(r"^\s*//")
# `Result<T, String>` kept in src/ on purpose: (path, error type) -> why.
STRING_ERR_ALLOWED = {
    ("src/backend/sim/nvrtc_check.rs", "String"):
        "the cache of NVRTC's outcome per source: the error is NVRTC's own compile log, which "
        "Error::KernelCompile carries as text",
}
TEXT_EXT = {".md", ".rs", ".sh", ".py", ".toml", ".txt", ".cu", ".cpp", ".h", ".c", ".yml",
            ".yaml", ".json", ".csv", ".log", ".tsv", ".patch", ""}


def tracked(root):
    """Tracked files of a git checkout; every file (but .git and target) elsewhere."""
    if os.path.isdir(os.path.join(root, ".git")) or os.path.isfile(os.path.join(root, ".git")):
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True)
        return sorted(p for p in out.stdout.decode().split("\0") if p)
    found = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in (".git", "target")]
        found += [os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/") for f in files]
    return sorted(found)


def read(root, path):
    try:
        with open(os.path.join(root, path), "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def check(root):
    files = [p for p in tracked(root) if os.path.isfile(os.path.join(root, p))]
    problems = []

    for p in files:
        if "__pycache__/" in p or p.endswith(".pyc"):
            problems.append(("pycache", p, "tracked bytecode: remove it (git rm --cached) and let .gitignore keep it out"))

    for p in files:
        if not p.startswith("scripts/") or not p.endswith((".sh", ".py")):
            continue
        text = read(root, p) or ""
        first = text.split("\n", 1)[0]
        if not first.startswith("#!"):
            problems.append(("shebang", p, "no shebang on the first line"))
            continue
        if p.endswith(".py") and first.strip() != "#!/usr/bin/env python3":
            problems.append(("shebang", p, f"Python shebang is {first.strip()!r}, expected '#!/usr/bin/env python3'"))
        if "bash" in first or p.endswith(".sh"):
            if not re.search(r"^set -euo pipefail\s*(#.*)?$", text, re.M):
                problems.append(("shebang", p, "bash script without a `set -euo pipefail` line"))

    for p in files:
        parts = p.split("/")
        if parts[0] != "scripts" or parts[-1] == "README.md" or "__pycache__" in parts:
            continue
        if len(parts) == 2:
            problems.append(("scripts", p, "a script outside a role folder: move it to scripts/ci/, gpu/ or emulate/"))
            continue
        readme = read(root, "/".join(parts[:2]) + "/README.md")
        if readme is None:
            problems.append(("scripts", "/".join(parts[:2]) + "/", "no README.md saying what each script is for"))
        elif parts[-1] not in readme:
            problems.append(("scripts", p, f"not named in {'/'.join(parts[:2])}/README.md"))

    result_files = [p for p in files if p.startswith("results/")]
    if result_files:
        kinds, runs = {}, {}
        for p in result_files:
            parts = p.split("/")
            if len(parts) == 2:
                if parts[1] != "README.md":
                    problems.append(("results", p, "a file loose in results/: put it in a run folder"))
            elif len(parts) == 3:
                kinds.setdefault(parts[1], set()).add(parts[2])
                if parts[2] != "README.md":
                    problems.append(("results", p, f"a file loose in results/{parts[1]}/: put it in a run folder"))
            else:
                kinds.setdefault(parts[1], set())
                runs.setdefault((parts[1], parts[2]), set()).add("/".join(parts[3:]))
        if "results/README.md" not in files:
            problems.append(("results", "results/", "no README.md (the index of run folders)"))
        for kind, names in sorted(kinds.items()):
            if "README.md" not in names:
                problems.append(("results", f"results/{kind}/", "no README.md"))
        index = read(root, "results/README.md") or ""
        for (kind, run), names in sorted(runs.items()):
            if "README.md" not in names:
                problems.append(("results", f"results/{kind}/{run}/", "run folder without a README.md"))
            if f"]({kind}/{run}/" not in index:
                problems.append(("index", f"results/{kind}/{run}/", "not linked from results/README.md"))

    for p in files:
        base = os.path.basename(p)
        scanned = (p.startswith(("docs/", "scripts/")) or base.startswith("README")
                   or base == "Cargo.toml" or p == ".ci/run" or p.endswith(".rs"))
        if p.startswith("results/") and not base.startswith("README"):
            scanned = False
        if not scanned:
            continue
        text = read(root, p)
        if text is None:
            continue
        for n, line in enumerate(text.split("\n"), 1):
            if p.endswith(".rs") and not RUST_COMMENT.match(line):
                continue
            if TRACKER.search(line):
                problems.append(("tracker", f"{p}:{n}", "a tracker number: name the concept instead"))

    for p in files:
        if os.path.splitext(p)[1] not in TEXT_EXT and os.path.basename(p) not in ("run",):
            continue
        text = read(root, p)
        if text is None:
            continue
        for n, line in enumerate(text.split("\n"), 1):
            if OUTSIDE.search(line):
                problems.append(("outside", f"{p}:{n}", "a path outside the repository: describe what it was and where to get it"))
    for p in files:
        if not (p.startswith("src/") and p.endswith(".rs")):
            continue
        for n, err in string_errors(read(root, p) or ""):
            if (p, err) not in STRING_ERR_ALLOWED:
                problems.append(("stringerr", f"{p}:{n}", f"an error typed as `{err}`: make it a typed error "
                                 "(an enum that names what failed, with its values) and write it out at the edge"))
    return problems


def string_errors(text):
    """(line, error type) of each `Result<T, E>` in Rust `text` whose E names `String`;
    comment lines are skipped, and nested brackets are followed (`Result<Vec<u8>, String>`,
    a signature over several lines)."""
    code = "\n".join("" if RUST_COMMENT.match(line) else line for line in text.split("\n"))
    found = []
    for m in re.finditer(r"\bResult<", code):
        depth, args, i = 1, [""], m.end()
        while i < len(code) and depth:
            c = code[i]
            if c in "<([":
                depth += 1
            elif c in ">)]":
                depth -= 1
            if depth == 1 and c == ",":
                args.append("")
            elif depth:
                args[-1] += c
            i += 1
        if len(args) == 2 and re.search(r"\bString\b", args[1]):
            found.append((code.count("\n", 0, m.start()) + 1, " ".join(args[1].split())))
    return found


def report(problems):
    for kind, where, what in problems:
        print(f"repo-guard: {kind}: {where}: {what}")


def self_test():
    """A clean fake tree passes; each fault planted alone is caught by its check."""
    def write(root, path, text):
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)

    clean = {
        "README.md": "# x\n",
        "scripts/ci/README.md": "`a.sh`, `b.py`, `e.sh`\n",
        "scripts/ci/a.sh": "#!/usr/bin/env bash\n# what it does\nset -euo pipefail\necho ok\n",
        "scripts/ci/b.py": "#!/usr/bin/env python3\nprint('ok')\n",
        "results/README.md": "| [`h/run/`](h/run/README.md) | one |\n",
        "results/h/README.md": "# machine\n",
        "results/h/run/README.md": "# run\n",
        "results/h/run/data.csv": "a,b\n1,2\n",
        "results/h/run/sub/more.log": "log\n",
        "src/lib.rs": "// the cluster form\nfn f() { let issue = 3; }\n",
        "src/ok.rs": "/// Not `Result<(), String>`: typed.\nfn g() -> Result<Vec<u8>, Problem> { todo!() }\n"
                     "fn h() -> crate::Result<String> { todo!() }\nfn i() -> Result<String, Problem> { todo!() }\n",
        "tests/t.rs": "fn t() -> Result<(), String> { Ok(()) }\n",
    }
    tracker = "issue " + "19"
    faults = {
        "pycache": {"scripts/ci/__pycache__/b.cpython-311.pyc": "x"},
        "shebang": {"scripts/ci/c.sh": "echo no shebang\n", "scripts/ci/README.md": "`a.sh`, `b.py`, `c.sh`\n"},
        "shebang ": {"scripts/ci/d.sh": "#!/usr/bin/env bash\nset -u\n", "scripts/ci/README.md": "`a.sh`, `b.py`, `d.sh`\n"},
        "scripts": {"scripts/miri.sh": "#!/usr/bin/env bash\nset -euo pipefail\n"},
        "scripts ": {"scripts/ci/f.sh": "#!/usr/bin/env bash\nset -euo pipefail\n"},
        "scripts  ": {"scripts/new/g.sh": "#!/usr/bin/env bash\nset -euo pipefail\n"},
        "results": {"results/h/run2/data.csv": "a\n", "results/README.md": clean["results/README.md"] + "| [`h/run2/`](h/run2/README.md) |\n"},
        "results ": {"results/h/loose.csv": "a\n"},
        "index": {"results/h/run3/README.md": "# run 3\n"},
        "tracker": {"docs/x.md": f"as {tracker} asked\n"},
        "tracker ": {"src/lib.rs": f"// ({tracker})\nfn f() {{}}\n"},
        "outside": {"docs/y.md": "see " + "../" + "shared/GPU.md\n"},
        "outside ": {"scripts/ci/e.sh": "#!/usr/bin/env bash\nset -euo pipefail\ncat " + "/" + "work/x\n"},
        "stringerr": {"src/a.rs": "fn f() -> Result<(), String> { Ok(()) }\n"},
        "stringerr ": {"src/b.rs": "fn f(\n    x: u8,\n) -> Result<Vec<Vec<u8>>, Option<String>> {\n    todo!()\n}\n"},
        "stringerr  ": {"src/c.rs": "struct Done {\n    result: std::result::Result<(), String>,\n}\n"},
    }
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "clean")
        for p, t in clean.items():
            write(base, p, t)
        got = check(base)
        if got:
            ok = False
            print("self-test: the clean tree was flagged:")
            report(got)
        # Code (not comments) may say "issue" with a number in a .rs file.
        write(base, "src/code.rs", f'fn g() {{ let s = "{tracker}"; }}\n')
        if check(base):
            ok = False
            print("self-test: a tracker number in Rust code (not a comment) was flagged")
        os.remove(os.path.join(base, "src/code.rs"))
        for i, (name, plant) in enumerate(faults.items()):
            tree = os.path.join(tmp, f"case{i}")
            shutil.copytree(base, tree)
            for p, t in plant.items():
                write(tree, p, t)
            kinds = {k for k, _, _ in check(tree)}
            if kinds != {name.strip()}:
                ok = False
                print(f"self-test: planted {name.strip()!r}, caught {sorted(kinds)}")
    print(f"self-test: {len(faults)} planted faults, {'each caught alone' if ok else 'FAILED'}")
    return 0 if ok else 1


def main(argv):
    if argv[:1] == ["--self-test"]:
        return self_test()
    if argv and argv[0].startswith("-"):
        print(__doc__.split("Usage:")[1], file=sys.stderr)
        return 2
    root = os.path.abspath(argv[0]) if argv else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    problems = check(root)
    report(problems)
    print(f"repo-guard: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
