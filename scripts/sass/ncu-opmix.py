#!/usr/bin/env python3
"""The executed opcode mix of one kernel launch profiled by Nsight Compute, per unit of
work: reads `ncu --section SourceCounters --page source --print-source sass --csv`
output (plain or .gz; the lines before its table are skipped), sums the "Instructions
Executed" (warp instructions) of each opcode (predicates dropped), and divides by UNITS
(for the alignment kernels: warp cell-pair steps, the cells of the launch over 64).

Usage: ncu-opmix.py FILE UNITS [TOP]       e.g. ncu-opmix.py src.csv.gz 134217728 12
"""
import collections
import csv
import gzip
import re
import sys


def main(path, units, top):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt") as f:
            lines = f.read().splitlines()
    except OSError as e:
        sys.exit(f"{path}: {e} (ncu's --page source --csv output)")
    start = next((k for k, l in enumerate(lines) if l.startswith('"Address"')), None)
    if start is None:
        sys.exit(f"{path}: no source table (\"Address\", ... header) in it")
    rows = list(csv.reader(lines[start:]))
    head = rows[0]
    col, src = head.index("Instructions Executed"), head.index("Source")
    mix, total = collections.Counter(), 0
    for r in rows[1:]:
        if len(r) <= col:
            continue
        try:
            n = int(r[col].replace(",", ""))
        except ValueError:
            continue
        op = re.sub(r"^@!?U?P\w+\s+", "", r[src].strip()).split(" ")[0]
        mix[op] += n
        total += n
    print(f"{path}: {total:.4g} warp instructions, {total / units:.2f} a unit")
    for op, n in mix.most_common(top):
        print(f"  {op:<24}{n / units:8.3f}")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    try:
        units = float(sys.argv[2])
        top = int(sys.argv[3]) if len(sys.argv) > 3 else 14
    except ValueError:
        sys.exit(f"UNITS must be a number and TOP an integer, got {sys.argv[2:]}")
    if units <= 0:
        sys.exit(f"UNITS must be positive, got {units}")
    main(sys.argv[1], units, top)
