#!/usr/bin/env python3
"""zctrace benchmarks: variants of one job timed side by side in one run, medians of N repetitions.

Each section runs its variants interleaved (rep 1 of every variant, then rep 2, ...), untraced, so
that drift and noise fall on all of them alike, and prints every variant's median time relative to
the section's baseline. One extra traced run per variant adds the kernel's explanation: CPU copies
per payload byte and syscalls per MiB, from the copy ledger.

Usage: tools/bench.py [SECTION ...]   (sections: files, serve; default: all)
Environment: BENCH_REPS (default 5), BENCH_FILE_SIZE (default 256M).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = os.path.join(ROOT, ".output", "workloads")
ZCTRACE = os.path.join(ROOT, "zctrace")
REPS = int(os.environ.get("BENCH_REPS", "5"))
FILE_SIZE = os.environ.get("BENCH_FILE_SIZE", "256M")


def run_workload(name, args):
    """One untraced run; the workload prints its own figures as JSON on stdout."""
    env = {k: v for k, v in os.environ.items() if k != "ZCTRACE_RESULT_FD"}
    p = subprocess.run([os.path.join(WORKLOADS, name), *args], capture_output=True, text=True,
                       timeout=600, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)


def run_traced(name, args):
    """One run under zctrace: the ledger as a dict."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, name, *args],
                           capture_output=True, text=True, timeout=600)
        try:
            led = json.load(open(f.name))
        except ValueError:
            raise RuntimeError(f"zctrace run {name}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return led, p.returncode


def cpu_copies_per_byte(led):
    payload = led["workload"]["bytes"]
    return sum(s["bytes"] for s in led["sites"].values() if s and s["cpu_copy"]) / payload


def section(title, variants, baseline):
    """variants: list of (label, workload, args). Prints medians and ratios to the baseline."""
    print(f"\n== {title} ({REPS} reps each, interleaved, untraced; median elapsed) ==", flush=True)
    times = {label: [] for label, _, _ in variants}
    for rep in range(REPS):
        for label, name, args in variants:
            times[label].append(run_workload(name, args)["elapsed_s"])
        print(f"  rep {rep + 1}/{REPS} done", file=sys.stderr, flush=True)
    base = statistics.median(times[baseline])
    print(f"  {'variant':<28} {'median s':>9} {'min s':>8} {'max s':>8} {'vs ' + baseline:>22} "
          f"{'CPU copies/B':>13} {'syscalls/MiB':>13}  checks")
    for label, name, args in variants:
        med = statistics.median(times[label])
        led, rc = run_traced(name, args)
        ok = "ok" if rc == 0 else "FAILED"
        print(f"  {label:<28} {med:9.4f} {min(times[label]):8.4f} {max(times[label]):8.4f} "
              f"{med / base:21.2f}x {cpu_copies_per_byte(led):13.3f} "
              f"{led['phase_syscalls_per_mib']:13.1f}  {ok}", flush=True)


def bench_files():
    common = ["--file-size", FILE_SIZE, "--cache", "warm"]
    section(f"duplicating a {FILE_SIZE} file (warm cache)", [
        ("read/write 64K", "file-readwrite", common),
        ("sendfile", "file-sendfile", common),
        ("splice via pipe", "file-splice", common),
        ("copy_file_range", "file-copyrange", common),
    ], "read/write 64K")


def bench_serve():
    common = ["--file-size", FILE_SIZE, "--cache", "warm"]
    section(f"serving a {FILE_SIZE} file over loopback TCP (warm cache)", [
        ("read+send 4K", "serve-readsend", common + ["--size", "4K"]),
        ("read+send 64K", "serve-readsend", common + ["--size", "64K"]),
        ("sendfile 4K", "serve-sendfile", common + ["--size", "4K"]),
        ("sendfile 64K", "serve-sendfile", common + ["--size", "64K"]),
    ], "read+send 4K")


SECTIONS = {"files": bench_files, "serve": bench_serve}


def main():
    names = sys.argv[1:] or list(SECTIONS)
    for n in names:
        if n not in SECTIONS:
            print(f"bench: unknown section '{n}' (one of: {', '.join(SECTIONS)})", file=sys.stderr)
            return 2
    if os.geteuid() != 0:
        print("bench: needs root (the traced runs load BPF)", file=sys.stderr)
        return 2
    print(f"machine: {os.uname().nodename}, kernel {os.uname().release}, {os.cpu_count()} CPUs")
    failed = False
    for n in names:
        try:
            SECTIONS[n]()
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"bench {n}: {e}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
