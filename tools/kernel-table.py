#!/usr/bin/env python3
"""Prints make test-kernels' table from the logs of tests/kernel-suite.sh: for each probe site, the
method each kernel chose by default (on a PREEMPT_RT kernel, fentry passed over) and under
--method kprobe and --method tracepoint, then each kernel's tests passed, failed and skipped (the
sums of its slices' logs, NAME-sliceK.log, where guests shared its suite). Usage: kernel-table.py
RESULTS_DIR NAME..."""
import glob
import os
import re
import sys


def read(results, name):
    """The sites and counts of kernel @name: of NAME.log, else of its slices' logs, all of which
    must have ended (counts None otherwise)."""
    paths = [os.path.join(results, f"{name}.log")]
    if not os.path.exists(paths[0]):
        paths = sorted(glob.glob(os.path.join(glob.escape(results), f"{glob.escape(name)}-slice[0-9]*.log")))
    sites, counts, ended = {}, (0, 0, 0), bool(paths)
    for path in paths:
        found = None
        for line in open(path, errors="replace"):
            m = re.match(r"SITE (\w+) (\w+) (\w+)$", line.strip())
            if m:
                sites.setdefault(m.group(2), {})[m.group(1)] = m.group(3)
            m = re.match(r"(\d+) passed, (\d+) failed, (\d+) skipped", line)
            if m:
                found = tuple(int(x) for x in m.groups())
        ended = ended and found is not None
        counts = tuple(a + b for a, b in zip(counts, found or (0, 0, 0)))
    return sites, counts if ended else None


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    results, names = sys.argv[1], sys.argv[2:]
    data = {n: read(results, n) for n in names}
    label = {n: (os.uname().release + " (this machine)" if n == "host" else n) for n in names}
    order = []
    for n in names:
        for s in data[n][0]:
            if s not in order:
                order.append(s)
    print("\nsite -> method, by kernel: default (best first) / --method kprobe / --method tracepoint")
    cells = ["/".join(data[n][0].get(s, {}).get(k, "?") for k in ("default", "kprobe", "tracepoint"))
             for n in names for s in order]
    # each column as wide as its widest label or cell, and two spaces more
    width = max([len(label[n]) for n in names] + [len(c) for c in cells]) + 2
    head = f"{'site':<16}" + "".join(f"{label[n]:<{max(width, 26)}}" for n in names)
    print(head)
    ok = True
    for s in order:
        row = f"{s:<16}"
        for n in names:
            m = data[n][0].get(s, {})
            cell = "/".join(m.get(k, "?") for k in ("default", "kprobe", "tracepoint"))
            row += f"{cell:<{max(width, 26)}}"
        print(row)
    print(f"{'tests':<16}" + "".join(
        f"{(f'{c[0]} passed, {c[1]} failed' if c else ('(make test)' if n == 'host' else 'did not finish')):<{max(width, 26)}}"
        for n in names for c in [data[n][1]]))
    for n in names:
        c = data[n][1]
        if n != "host" and (not c or c[1]):
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
