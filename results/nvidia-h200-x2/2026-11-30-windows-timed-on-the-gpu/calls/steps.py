#!/usr/bin/env python3
"""From reasons.txt (the flow bench's "the loop's last run" lines of one build, grep -H
over its logs): per row and process, the windows' GPU time a step and a task (µs;
W: that run's windows went past S lanes), and the sum of their spans over their sum of
GPU times. Usage: steps.py REASONS BUILD"""
import collections, re, sys

LINE = re.compile(r"flow-(\w+)-chariot\d+\.log:(\w+) (\d+) at (\d+): .*execution: (\d+) tasks replayed.*"
                  r"its (\d+) windows: spans ([\d.]+) us, run ([\d.]+) us on the GPU, ([\d.]+) us a step")
rows, over = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = LINE.search(line)
    if not m or m.group(1) != sys.argv[2]:
        continue
    _, shape, _, it, replayed, _, span, run, step = m.groups()
    wide = "W" if "past S" in line else ""
    rows[(shape, int(it))].append(f"{float(step):.1f}/{float(run) / int(replayed):.2f}{wide}")
    over[(shape, int(it))].append(float(span) / float(run))
print("shape iters: per process, GPU time a step / a task (µs); spans over GPU time (range)")
for k in sorted(rows):
    print(f"{k[0]:4} {k[1]:>6}: {' '.join(rows[k])}   spans/GPU {min(over[k]):.3f}-{max(over[k]):.3f}")
