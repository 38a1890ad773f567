#!/usr/bin/python3
"""Records the kernel stacks a workload's samples land in, as the sampler's walk reads them, for
tests/unit/stacks/KERNEL.txt: `perf record -e cpu-clock -g` around the workload, then the most
frequent stacks (their first FRAMES frames from the leaf), one a line: "COUNT FRAME FRAME ...",
"(user)" for a sample in user mode. `.output/tests/costwalk --classify` then places each line; a
person checks each class before it goes into the file.

Usage: tools/record-stacks.py [--top N] [--frames F] WORKLOAD [WORKLOAD ARGS] [, WORKLOAD ...]
(perf from Debian's linux-perf; root)."""
import collections
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stacks(script_text):
    """Each sample's kernel frames, leaf first, from `perf script -F ip,sym` output."""
    for record in script_text.split("\n\n"):
        frames = []
        for line in record.strip().splitlines():
            parts = line.split(None, 1)
            if len(parts) < 2:
                continue
            addr, sym = parts
            if not addr.startswith("ffff"):
                break  # the user frames follow the kernel's
            frames.append(sym.split("+")[0])
        if record.strip():
            yield tuple(frames)


def record(argv, top, depth):
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        wl = os.path.join(ROOT, ".output", "workloads", argv[0])
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "1999", "-g", "-o", data, "--", wl,
                        *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300, check=True)
        out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], capture_output=True, text=True,
                             timeout=300, check=True).stdout
    counts = collections.Counter(s[:depth] for s in stacks(out))
    return counts.most_common(top)


def main():
    args, top, depth = sys.argv[1:], 12, 24
    while args and args[0] in ("--top", "--frames"):
        if len(args) < 2 or not args[1].isdigit():
            print(f"record-stacks: {args[0]} needs a number", file=sys.stderr)
            return 2
        top, depth = (int(args[1]), depth) if args[0] == "--top" else (top, int(args[1]))
        args = args[2:]
    runs, cur = [], []
    for a in args + [","]:
        if a == ",":
            if cur:
                runs.append(cur)
            cur = []
        else:
            cur.append(a)
    if not runs:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    for argv in runs:
        for frames, n in record(argv, top, depth):
            print(n, " ".join(frames) if frames else "(user)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
