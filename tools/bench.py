#!/usr/bin/env python3
"""zctrace benchmarks: variants of one job timed side by side in one run, medians of N repetitions.

Each section runs its variants interleaved (rep 1 of every variant, then rep 2, ...), untraced, so
that drift and noise fall on all of them alike, and prints every variant's median time relative to
the section's baseline. One extra traced run per variant adds the kernel's explanation: CPU copies
per payload byte and syscalls per MiB, from the copy ledger.

The micro section runs every OS microbenchmark once untraced (the figures) and once traced (the
same figures under the tracer, and the verdicts on its assumptions), and sets lmbench's figure for
the same quantity beside ours where $LMBENCH names a directory of lmbench binaries (built outside
this tree, e.g. with tools/build-lmbench.sh).

The overhead section measures the tracer itself: tcp-onecopy at 1 KiB and 64 KiB messages, and
iperf3 on loopback with 1 KiB and 64 KiB writes (a real program, traced as `zctrace run -- COMMAND`),
each untraced, under `zctrace floor` (empty programs at the same attach points: the physical floor),
under zctrace and under bpftrace running tools/overhead.bt (the same events and maps), interleaved;
it prints each one's median throughput as a ratio of the untraced one against the targets (0.95 at
1 KiB, 0.99 at 64 KiB, or within 0.02 of the floor where the floor is below them), and zctrace's
cost per event of each BPF program from the kernel's run-time statistics (zctrace run --prog-stats),
beside the floor's empty program at the same point (zctrace floor --prog-stats): the statistics
charge every event two clock reads, and what a program costs above the empty one is its own work
(targets: 40 ns on average, 100 ns for sched_switch).

The progcost section runs that table once per method (fentry, kprobe, tracepoints), for the kernels
that have them: `tools/kernels.sh run VERSION 'BENCH_REPS=1 python3 tools/bench.py progcost'`.

The fleet section measures the always-on census: iperf3 on loopback at 1 KiB and 64 KiB writes, untraced,
under the census's attach points with empty programs (zctrace floor --census), under `zctrace export` and
under `zctrace top`, and the same with --complete (the raw syscall tracepoints too). Two instruments:
- program runs per write, and BPF ns per write: the kernel's own run counts of the census's programs
  (export --bpf-stats, for that measurement only, reading at BENCH_FLEET_INTERVAL seconds, default 1:
  the exporter's own default) over an iperf3 stream of a fixed count of writes; they do not depend on
  the machine's noise (the census's sweeps, a program run per open file each read, do depend on the
  stream's length in time);
- throughput, in BENCH_FLEET_PAIRS (default 30) rounds of short runs (BENCH_FLEET_DURATION seconds,
  default 1), each round every variant once in a rotated order; each variant's ratio to the untraced
  run of its round, their median with its 95% interval (the order statistics of the median, free of any
  assumed distribution), held against the targets (0.95 at 1 KiB, 0.99 at 64 KiB, or within 0.02 of
  the floor where the floor is below them).

The commands section measures `zctrace run -- iperf3` where the kernel allows fentry: its I/O syscalls
followed at their own functions (the default) and by the raw syscall tracepoints (--complete), each beside
its floor, at 1 KiB and 64 KiB writes, interleaved; under QEMU:
`tools/kernels.sh run VERSION 'BENCH_REPS=5 python3 tools/bench.py commands'`.

The sampler section measures the sampler: `zctrace run -- iperf3` on loopback with the sampler at its
default rate, at 9973 Hz and off, interleaved; each rate's paired ratio to the run without it (target:
0.99 at the default rate).

Usage: tools/bench.py [SECTION ...]   (sections: micro, files, serve, overhead, progcost, fleet, commands,
sampler; default: all)
Environment: BENCH_REPS (default 5), BENCH_FILE_SIZE (default 256M), LMBENCH (a directory),
BENCH_OVERHEAD_DURATION (seconds per overhead and sampler run, default 3), BENCH_FLEET_SIZES (default 1K,64K),
BENCH_FLEET_PAIRS (default 30), BENCH_FLEET_DURATION (whole seconds per fleet run, default 1),
BENCH_FLEET_WRITES (writes of the runs-per-write stream, default 200000, at most 2 GiB of them),
BENCH_FLEET_INTERVAL (the exporter's --interval in the runs-per-write stream, default 1),
BENCH_FLEET_COMPLETE (0: leave the --complete variants out), BENCH_FLEET_COST (0: leave export --cost out).
"""
import json
import math
import os
import shutil
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = os.path.join(ROOT, ".output", "workloads")
ZCTRACE = os.path.join(ROOT, "zctrace")
REPS = int(os.environ.get("BENCH_REPS", "5"))
FILE_SIZE = os.environ.get("BENCH_FILE_SIZE", "256M")
OVERHEAD_DURATION = os.environ.get("BENCH_OVERHEAD_DURATION", "3")
FLEET_PAIRS = max(1, int(os.environ.get("BENCH_FLEET_PAIRS", "30")))
FLEET_DURATION = os.environ.get("BENCH_FLEET_DURATION", "1")
FLEET_WRITES = int(os.environ.get("BENCH_FLEET_WRITES", "200000"))
FLEET_INTERVAL = float(os.environ.get("BENCH_FLEET_INTERVAL", "1"))
BPFTRACE_SCRIPT = os.path.join(ROOT, "tools", "overhead.bt")


def run_workload(name, args):
    """One untraced run; the workload prints its own figures as JSON on stdout."""
    env = {k: v for k, v in os.environ.items() if k != "ZCTRACE_RESULT_FD"}
    p = subprocess.run([os.path.join(WORKLOADS, name), *args], capture_output=True, text=True,
                       timeout=600, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)


def run_traced(name, args, options=()):
    """One run under zctrace: the ledger as a dict."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, *options, name, *args],
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


# ---- OS microbenchmarks beside lmbench ----

# Each workload with its bench options: short runs, the whole suite well under 5 minutes.
MICRO = [
    ("timer", []), ("loop", []), ("call", []), ("syscall", []),
    ("proc-create", []), ("thread-create", []), ("ctxswitch", []),
    ("memlat", ["--max-size", "64M"]), ("membw", ["--reps", "20"]), ("pagefault", ["--file-size", "16M"]),
    ("tcp-rtt", []), ("tcp-bw", ["--reps", "20"]), ("tcp-connect", []),
    ("filecache", ["--max-size", "64M"]), ("fileread", []), ("contention", []),
]


def size_bytes(text):
    """'16K' -> 16384."""
    m = re.fullmatch(r"(\d+)([KMG]?)", text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def derived_rows(figures):
    """Figures a workload derives in its notes, as rows: the context switch less the pipe."""
    rows = {}
    for note in figures.get("notes", []):
        m = re.match(r"(process|thread): switch = .* = ([\d.]+) ns", note)
        if m:
            rows[f"switch, {m.group(1)} pair (derived)"] = ("ns", float(m.group(2)))
    return rows


class Lmbench:
    """lmbench's figures for the quantities zctrace measures too, each in zctrace's unit."""

    def __init__(self, bindir):
        self.bindir = bindir
        self.env = dict(os.environ, ENOUGH="20000")  # 20 ms per timing: seconds, not minutes

    def run(self, *args, cpu=None):
        cmd = ([] if cpu is None else ["taskset", "-c", str(cpu)]) + [os.path.join(self.bindir, args[0]), *args[1:]]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=self.env)
        return p.stdout + p.stderr

    def served(self, prog, client_args):
        """Runs an lmbench client against its own server, both on CPU 0 as zctrace's are."""
        # the server daemonises: it must not hold our pipes, or run() would wait for it
        subprocess.run(["taskset", "-c", "0", os.path.join(self.bindir, prog), "-s"], env=self.env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        time.sleep(0.2)
        try:
            return self.run(prog, *client_args, "127.0.0.1", cpu=0)
        finally:
            self.run(prog, "-S", "127.0.0.1")

    @staticmethod
    def number(pattern, text):
        m = re.search(pattern, text)
        if not m:
            raise RuntimeError(f"unexpected lmbench output: {text.strip()[-200:]!r}")
        return float(m.group(1))

    def figures(self):
        """{(workload, measurement): (value, what lmbench ran)}"""
        f, num = {}, self.number
        f[("syscall", "syscall(SYS_getpid)")] = (
            1000 * num(r"Simple syscall: ([\d.]+)", self.run("lat_syscall", "-N", "5", "null")), "lat_syscall null")
        ctx = self.run("lat_ctx", "-N", "5", "-s", "0", "2", cpu=0)
        f[("ctxswitch", "switch, process pair (derived)")] = (1000 * num(r"(?m)^2 ([\d.]+)", ctx), "lat_ctx -s 0 2")
        f[("proc-create", "fork+_exit+waitpid")] = (
            num(r"fork\+exit: ([\d.]+)", self.run("lat_proc", "-N", "5", "fork")), "lat_proc fork")
        mem = self.run("lat_mem_rd", "-N", "1", "-t", "64", cpu=0)
        for mb, ns in re.findall(r"(?m)^([\d.]+) ([\d.]+)$", mem):
            size = round(float(mb) * (1 << 20))
            if size >= 4096 and size & (size - 1) == 0:
                label = f"{size >> 20}M" if size >= 1 << 20 else f"{size >> 10}K"
                f[("memlat", f"chase over {label}")] = (float(ns), "lat_mem_rd -t (random list)")
        for kind, name in (("bcopy", "memcpy"), ("rd", "sequential read (sum of words)"),
                           ("wr", "sequential write (store every word)")):
            out = self.run("bw_mem", "-N", "3", "256m", kind, cpu=0)
            f[("membw", name)] = (num(r"(?m)^[\d.]+ ([\d.]+)$", out), f"bw_mem 256m {kind}")
        with tempfile.NamedTemporaryFile(dir="/var/tmp") as tmp:
            tmp.write(os.urandom(16 << 20))
            tmp.flush()
            out = self.run("lat_pagefault", "-N", "3", tmp.name, cpu=0)
        f[("pagefault", "warm touch (page cached, new mapping)")] = (
            1000 * num(r"Pagefaults on .*: ([\d.]+)", out), "lat_pagefault (cached file)")
        f[("tcp-rtt", "TCP round trip, 32 bytes each way")] = (
            num(r"latency using .*: ([\d.]+)", self.served("lat_tcp", ["-N", "5", "-m", "32"])), "lat_tcp -m 32")
        f[("tcp-bw", "TCP bandwidth, 65536-byte writes")] = (
            num(r"([\d.]+) MB/sec", self.served("bw_tcp", ["-N", "5", "-m", "64k", "-M", "32m"])),
            "bw_tcp -m 64k -M 32m")
        f[("tcp-connect", "connect() over loopback")] = (
            num(r"connection cost to .*: ([\d.]+)", self.served("lat_connect", ["-N", "5"])), "lat_connect")
        return f


def bench_micro():
    print("\n== OS microbenchmarks: untraced median (the figure), traced median, kernel-checked assumptions ==",
          flush=True)
    lm_dir = os.environ.get("LMBENCH")
    rows, failures = [], []
    for name, args in MICRO:
        start = time.monotonic()
        own = run_workload(name, args)
        led, rc = run_traced(name, args)
        held = sum(a["holds"] for a in led.get("assumptions", []))
        verdict = f"{held}/{len(led.get('assumptions', []))}" + ("" if rc == 0 else " FAILED")
        # what failed, in the kernel's figures: a FAILED row alone cannot be looked into
        failures += [f"{name}: assumption {a['claim']}: {a['measure']} {a['measured']}, allowed "
                     f"{a['min']}..{a['max']}" for a in led.get("assumptions", []) if not a["holds"]]
        failures += [f"{name}: check {c['name']}: {c['detail']}" for c in led["checks"]
                     if not c["ok"] and c["name"] != "assumptions hold"]
        traced = {r["name"]: r for r in led["workload"]["results"]}
        for r in own["results"]:
            t = traced.get(r["name"])
            rows.append((name, r["name"], r["unit"], r["median"], r["p99"], t["median"] if t else None, verdict))
            verdict = ""
        tder = derived_rows(led["workload"])
        for label, (unit, v) in derived_rows(own).items():
            rows.append((name, label, unit, v, None, tder.get(label, (None, None))[1], ""))
        print(f"  {name}: {time.monotonic() - start:.1f}s", file=sys.stderr, flush=True)
    lm = {}
    if lm_dir:
        start = time.monotonic()
        lm = Lmbench(lm_dir).figures()
        print(f"  lmbench: {time.monotonic() - start:.1f}s", file=sys.stderr, flush=True)
    print(f"  {'workload':<13} {'measurement':<38} {'unit':<6} {'median':>10} {'p99':>10} {'traced':>10} "
          f"{'x':>5}  {'assumed':<9} {'lmbench':>10}  lmbench run")
    for name, what, unit, med, p99, tmed, verdict in rows:
        fmt = lambda v: "-" if v is None else f"{v:10.4g}"
        ratio = f"{tmed / med:5.2f}" if tmed and med else "    -"
        lv = lm.get((name, what))
        print(f"  {name:<13} {what[:38]:<38} {unit:<6} {fmt(med):>10} {fmt(p99):>10} {fmt(tmed):>10} {ratio}  "
              f"{verdict:<9} {fmt(lv[0] if lv else None):>10}  {lv[1] if lv else ''}", flush=True)
    if not lm_dir:
        print("  lmbench: not compared (set LMBENCH to a directory of lmbench binaries; "
              "tools/build-lmbench.sh builds them)")
    for f in failures:
        print(f"  FAILED {f}")
    if failures:
        raise RuntimeError(f"{len(failures)} failed in the traced runs (listed above)")


# ---- what tracing costs the traced: zctrace against bpftrace on the same events ----

def run_session(cmd, timeout):
    """Runs @cmd in a session of its own, killed whole if anything goes wrong, so nothing it
    started (a probe, a server) outlives it; its exit status, stdout and stderr."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    return p.returncode, out, err


def run_bpftrace(name, args):
    """One run under bpftrace (tools/overhead.bt, started on the workload with -c); its figures.

    bpftrace and the workload run in a session of their own, killed whole if anything goes wrong, so
    no probe outlives the run. bpftrace's own send sums must cover the workload's bytes: it traced.
    """
    with tempfile.NamedTemporaryFile(suffix=".txt") as out:
        cmd = ["bpftrace", "-o", out.name, BPFTRACE_SCRIPT, "-c",
               shlex.join([os.path.join(WORKLOADS, name), *args])]
        rc, stdout, stderr = run_session(cmd, 600)
        if rc != 0:
            raise RuntimeError(f"bpftrace on {name}: exit {rc}: {stderr.strip()[-300:]}")
        figures = json.loads(stdout)
        maps = open(out.name).read()
    sent = sum(int(v) for v in re.findall(r"(?m)^@send_bytes\[\d+\]: (\d+)$", maps))
    if sent < figures["bytes"]:
        raise RuntimeError(f"bpftrace on {name}: its sends ({sent} bytes) miss the workload's {figures['bytes']}")
    return figures


def throughput(figures):
    return figures["bytes"] / figures["elapsed_s"]


def run_floor(name, args):
    """One run under `zctrace floor`: empty programs at every attach point zctrace would use."""
    p = subprocess.run([ZCTRACE, "floor", name, *args], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"zctrace floor {name}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)


def floor_prog_stats(name, args, options=()):
    """ns per event of each of the floor's empty programs, by name (zctrace floor --prog-stats)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        p = subprocess.run([ZCTRACE, "floor", "--prog-stats", out.name, *options, name, *args], capture_output=True,
                           text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"zctrace floor --prog-stats {name}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
        return {pr["name"]: pr["ns_per_event"] for pr in json.load(open(out.name))["programs"] if pr["events"]}


IPERF_PORT = 5299


def iperf_script(length, out, seconds=OVERHEAD_DURATION, nbytes=None):
    """A loopback iperf3 run of @seconds (or of @nbytes) with @length writes, its client's JSON in @out."""
    # the client waits for the server's socket (a client that meets a half-started iperf3 server
    # can wait for it forever), and gives up connecting after a second
    return (f"iperf3 -s -1 -p {IPERF_PORT} >/dev/null 2>&1 & s=$!; "
            f"for i in $(seq 50); do ss -Hltn 'sport = :{IPERF_PORT}' | grep -q . && break; sleep 0.05; done; "
            f"iperf3 -c 127.0.0.1 -p {IPERF_PORT} {f'-n {nbytes}' if nbytes else f'-t {seconds}'} -l {length} "
            f"--connect-timeout 1000 "
            f"-J > {out} 2>/dev/null; wait $s")


def iperf_bps(out):
    return json.load(open(out))["end"]["sum_received"]["bits_per_second"] / 8


def run_iperf(variant, length):
    """iperf3 on loopback (server and client under one shell), as a real program: bytes per second."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out, tempfile.NamedTemporaryFile(suffix=".json") as led, \
            tempfile.NamedTemporaryFile("w", suffix=".sh") as script:
        script.write(iperf_script(length, out.name))
        script.flush()
        # bpftrace -c splits its command at spaces and wants a path naming one binary
        sh = ["/bin/sh", script.name]
        cmd = {"untraced": sh,
               "floor": [ZCTRACE, "floor", "--", *sh],
               "zctrace": [ZCTRACE, "run", "--no-hist", "--json", led.name, "--", *sh],
               "zctrace --sample-hz 0": [ZCTRACE, "run", "--sample-hz", "0", "--no-hist", "--json", led.name, "--",
                                         *sh],
               "zctrace --sample-hz 9973": [ZCTRACE, "run", "--sample-hz", "9973", "--no-hist", "--json", led.name,
                                            "--", *sh],
               "floor --complete": [ZCTRACE, "floor", "--complete", "--", *sh],
               "zctrace --complete": [ZCTRACE, "run", "--complete", "--no-hist", "--json", led.name, "--", *sh],
               "bpftrace": ["bpftrace", "-o", "/dev/null", BPFTRACE_SCRIPT, "-c", " ".join(sh)]}
        rc, _, err = run_session(cmd[variant], 120)
        try:
            return iperf_bps(out.name)
        except (ValueError, KeyError):
            raise RuntimeError(f"iperf3 {variant} -l {length}: exit {rc}, no result: {err.strip()[-300:]}")


def verdict(ratio, floor, target):
    """The target, or within 0.02 of the floor where the floor itself is below the target."""
    goal = target if floor >= target else floor - 0.02
    return ratio >= goal, goal


RATIO_HEAD = f"{'median MB/s':>12} {'min':>9} {'max':>9} {'x untraced':>11} {'loss':>7} {'paired':>7} {'(min-max)':>13}"


def ratio_rows(runs, key, variants, width):
    """Prints each variant's median throughput at @key, its spread, its ratio to the untraced
    median, and the median of its ratios to the untraced run of the same rep (paired: a drift of
    the machine's speed over the reps cancels out) with their spread; the paired ratios by
    variant, which the targets are held to."""
    untraced = runs[(key, "untraced")]
    base = statistics.median(untraced)
    ratio = {}
    for v in variants:
        t = runs[(key, v)]
        pairs = [x / u for x, u in zip(t, untraced)]
        ratio[v], of_medians = statistics.median(pairs), statistics.median(t) / base
        print(f"  {key:<5} {v:<{width}} {statistics.median(t) / 1e6:12.1f} {min(t) / 1e6:9.1f} "
              f"{max(t) / 1e6:9.1f} {of_medians:11.3f} {100 * (1 - of_medians):6.1f}% "
              f"{ratio[v]:7.3f} {min(pairs):6.3f}-{max(pairs):.3f}")
    return ratio


def overhead_table(name, title, runs, keys, variants, targets, missed):
    print(f"  {title}")
    print(f"  {'size':<5} {'tracer':<9} {RATIO_HEAD}")
    for key in keys:
        ratio = ratio_rows(runs, key, variants, 9)
        ok, goal = verdict(ratio["zctrace"], ratio["floor"], targets[key])
        how = (f">= {targets[key]:.2f} of untraced" if goal == targets[key] else
               f"within 0.02 of the floor, {ratio['floor']:.3f} (below {targets[key]:.2f} itself)")
        cmp = "no more than" if ratio["zctrace"] >= ratio["bpftrace"] else "MORE than"
        print(f"  {key}: zctrace {'meets' if ok else 'MISSES'} its target ({how}) and loses {cmp} bpftrace")
        if not ok:
            missed.append(f"{name} {key}")


def prog_cost_table(size, method_opts, missed):
    """zctrace's programs under tcp-onecopy at @size, with the kernel's run-time statistics, each
    beside the floor's empty program at the same point, counted the same way: what the statistics
    charge an event that does nothing. A program's cost above that is its own work; its ratio to it
    is what holds across machines and emulators that scale every program alike (QEMU TCG)."""
    args = ["--size", size, "--duration", OVERHEAD_DURATION]
    led, _ = run_traced("tcp-onecopy", args, options=["--prog-stats", "--passes", "traced", *method_opts])
    ps = led.get("prog_stats") or {}
    if "programs" not in ps:
        raise RuntimeError(f"no BPF program statistics: {ps.get('error', 'missing')}")
    empty = floor_prog_stats("tcp-onecopy", args, method_opts)
    print(f"  zctrace's BPF programs at {size} ({ps['duration_s']:.1f} s, every invocation, traced or not), "
          f"beside the floor's empty program at the same point:")
    print(f"    {'program':<30} {'attached to':<36} {'events':>10} {'ns/event':>9} {'empty':>7} "
          f"{'above':>7} {'x empty':>7} {'events/s':>10}")
    above_ns = 0.0
    for pr in sorted(ps["programs"], key=lambda pr: -pr["run_time_ns"]):
        if not pr["events"]:
            continue
        base = empty.get(pr["name"])
        above = pr["ns_per_event"] - base if base else None
        above_ns += (above if above is not None else pr["ns_per_event"]) * pr["events"]
        nan = float("nan")
        print(f"    {pr['name']:<30} {pr['attach']:<36} {pr['events']:10d} {pr['ns_per_event']:9.1f} "
              f"{base or nan:7.1f} {above if above is not None else nan:7.1f} "
              f"{pr['ns_per_event'] / base if base else nan:7.2f} {pr['events_per_s']:10.0f}")
        if pr["name"] in ("switch_btf", "switch_raw") and above is not None:
            ok = above <= 100
            print(f"      sched_switch: {above:.1f} ns above the empty program, "
                  f"{'meets' if ok else 'MISSES'} the target (<= 100 ns)")
            if not ok:
                missed.append(f"{size} sched_switch ns")
    tot = ps["total"]
    avg = above_ns / tot["events"] if tot["events"] else None
    ok = avg is not None and avg <= 40
    print(f"    {'all':<30} {'':<36} {tot['events']:10d} {tot['ns_per_event'] or 0:9.1f} "
          f"{'':>7} {avg or 0:7.1f} {'':>7} {tot['events_per_s']:10.0f}")
    print(f"    average above the empty programs: {avg or 0:.1f} ns per event, "
          f"{'meets' if ok else 'MISSES'} the target (<= 40 ns)")
    if not ok:
        missed.append(f"{size} ns per event")


def bench_progcost():
    """Each method's programs (fentry, kprobe, tracepoints: nothing better than it) against the empty ones."""
    print(f"\n== BPF program costs by method: tcp-onecopy 1K, {OVERHEAD_DURATION} s, kernel run-time "
          f"statistics, each program beside an empty one at the same point ==", flush=True)
    missed = []
    for method in ("fentry", "kprobe", "tracepoint"):
        print(f"  --method {method} (the best this kernel allows up to it):")
        prog_cost_table("1K", ["-m", method], missed)
    if missed:
        print(f"  targets missed: {', '.join(missed)}")


def bench_overhead():
    sizes = ["1K", "64K"]
    targets = {"1K": 0.95, "64K": 0.99}
    variants = ["untraced", "floor", "zctrace", "bpftrace"]
    print(f"\n== tracer overhead: {OVERHEAD_DURATION} s per run, {REPS} reps each, interleaved; median "
          f"throughput; paired = the median of each rep's ratio to its untraced run, which the targets hold; "
          f"floor = the same attach points with empty programs (zctrace floor) ==", flush=True)
    for tool in ("bpftrace", "iperf3"):
        if not shutil.which(tool):
            raise RuntimeError(f"{tool} not installed (tools/install-deps.sh installs it)")
    # bpftrace attaches classic tracepoints through tracefs, which is not mounted at boot here
    if not os.path.isdir("/sys/kernel/tracing/events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
    runs = {(size, v): [] for size in sizes for v in variants}
    iperf = {(size, v): [] for size in sizes for v in variants}
    for rep in range(REPS):
        for size in sizes:
            args = ["--size", size, "--duration", OVERHEAD_DURATION]
            runs[(size, "untraced")].append(throughput(run_workload("tcp-onecopy", args)))
            runs[(size, "floor")].append(throughput(run_floor("tcp-onecopy", args)))
            led, rc = run_traced("tcp-onecopy", args, options=["--passes", "traced"])
            if rc != 0:
                raise RuntimeError(f"zctrace run tcp-onecopy {' '.join(args)}: a check failed (exit {rc})")
            runs[(size, "zctrace")].append(throughput(led["workload"]))
            runs[(size, "bpftrace")].append(throughput(run_bpftrace("tcp-onecopy", args)))
            for v in variants:
                iperf[(size, v)].append(run_iperf(v, size))
        print(f"  rep {rep + 1}/{REPS} done", file=sys.stderr, flush=True)
    missed = []
    overhead_table("tcp-onecopy", "tcp-onecopy: 1 connection", runs, sizes, variants, targets, missed)
    overhead_table("iperf3", "iperf3 on loopback (zctrace run -- COMMAND: every program attached)", iperf,
                   sizes, variants, targets, missed)
    # one run each with the kernel's BPF run-time statistics: they add two clock reads per event,
    # so these runs are not among the throughput figures above
    for size in sizes:
        prog_cost_table(size, [], missed)
    if missed:
        print(f"  targets missed: {', '.join(missed)}")


# ---- what the always-on census costs the machine: zctrace export and top beside iperf3 ----

FLEET_PORT = 9436


def census_ready(variant, proc):
    """Waits until the census @proc (zctrace export or top) counts: export serves /metrics, top
    printed its first table. False if it ended instead."""
    if variant.startswith("top"):
        return bool(proc.stdout.readline())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{FLEET_PORT}/metrics", timeout=5).read()
            return True
        except OSError:
            time.sleep(0.1)
    return False


CENSUS = {"export": ["export"], "export --complete": ["export", "--complete"], "export --cost": ["export", "--cost"],
          "top": ["top", "--json", "-i", "1"]}


def census_cmd(variant, *extra):
    """The command line of census @variant (export ... or top), with @extra options."""
    args = CENSUS[variant]
    listen = ["--listen", f"127.0.0.1:{FLEET_PORT}"] if args[0] == "export" else []
    return [ZCTRACE, *args, *extra, *listen]


def beside_census(variant, census, sh):
    """Runs @sh while zctrace @variant (command line @census) counts; then stops the census, whose
    exit must be clean. @sh's (exit, stdout, stderr); None if @sh is a callable's result instead."""
    proc = subprocess.Popen(census, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        if not census_ready(variant, proc):
            raise RuntimeError(f"zctrace {variant} did not start: {proc.stderr.read()[-300:]}")
        result = sh() if callable(sh) else run_session(sh, 120)
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"zctrace {variant}: exit {proc.returncode}")
    return result


def run_fleet(variant, length):
    """iperf3 on loopback for FLEET_DURATION seconds beside the census as an operator runs it:
    untraced, under the empty programs of the census's attach points (zctrace floor --census), under
    zctrace export, or under zctrace top; bytes per second."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out, \
            tempfile.NamedTemporaryFile("w", suffix=".sh") as script:
        script.write(iperf_script(length, out.name, seconds=FLEET_DURATION))
        script.flush()
        sh = ["/bin/sh", script.name]
        if variant == "untraced":
            rc, _, err = run_session(sh, 120)
        elif variant.startswith("floor"):
            rc, _, err = run_session([ZCTRACE, "floor", "--census", *variant.split()[1:], "--", *sh], 120)
        else:
            rc, _, err = beside_census(variant, census_cmd(variant), sh)
        try:
            return iperf_bps(out.name)
        except (ValueError, KeyError):
            raise RuntimeError(f"iperf3 {variant} -l {length}: exit {rc}, no result: {err.strip()[-300:]}")


def interleaved(sizes, variants, run, reps=REPS):
    """@reps reps of run(variant, size) for every size and variant, interleaved; each rep starts one
    variant later, so that no variant always follows the same one. The results by (size, variant)."""
    runs = {(size, v): [] for size in sizes for v in variants}
    for rep in range(reps):
        for size in sizes:
            for v in variants[rep % len(variants):] + variants[:rep % len(variants)]:
                runs[(size, v)].append(run(v, size))
        print(f"  rep {rep + 1}/{reps} done", file=sys.stderr, flush=True)
    return runs


def bpf_counts():
    """The exporter's zctrace_bpf_events_total and zctrace_bpf_run_seconds_total, by program."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{FLEET_PORT}/metrics", timeout=5).read().decode()
    counts = {}
    for m in re.finditer(r'^zctrace_bpf_(events|run_seconds)_total\{program="([^"]+)"\} (\S+)$', text, re.M):
        runs, ns = counts.get(m.group(2), (0, 0))
        if m.group(1) == "events":
            runs = int(m.group(3))
        else:
            ns = float(m.group(3)) * 1e9
        counts[m.group(2)] = (runs, ns)
    return counts


def census_runs(variant, length):
    """The census's program runs and BPF ns per write of an iperf3 stream of FLEET_WRITES writes of
    @length (at most 2 GiB), from the kernel's run counts (export --bpf-stats: the statistics are on
    for this measurement alone, and it takes no time figure). Every census program's runs count,
    whoever made them. (runs per write, ns per write, the programs that ran most: [(name, runs per write)])."""
    writes = max(1, min(FLEET_WRITES, (2 << 30) // size_bytes(length)))
    with tempfile.NamedTemporaryFile(suffix=".json") as out, \
            tempfile.NamedTemporaryFile("w", suffix=".sh") as script:
        script.write(iperf_script(length, out.name, nbytes=writes * size_bytes(length)))
        script.flush()

        def stream():
            # the exporter reads the counts each --interval: a scrape waits out one read
            time.sleep(FLEET_INTERVAL * 1.5 + 0.2)
            before = bpf_counts()
            rc, _, err = run_session(["/bin/sh", script.name], 600)
            time.sleep(FLEET_INTERVAL * 1.5 + 0.2)
            after = bpf_counts()
            try:
                sent = json.load(open(out.name))["end"]["sum_sent"]["bytes"]
            except (ValueError, KeyError):
                raise RuntimeError(f"iperf3 -l {length}: exit {rc}, no result: {err.strip()[-300:]}")
            return before, after, sent

        before, after, sent = beside_census(variant, census_cmd(variant, "--bpf-stats", "--interval", str(FLEET_INTERVAL)), stream)
    if not after:
        raise RuntimeError(f"zctrace {variant} --bpf-stats served no program counts")
    per = sent / size_bytes(length)
    delta = {p: (r - before.get(p, (0, 0))[0], ns - before.get(p, (0, 0))[1]) for p, (r, ns) in after.items()}
    busiest = sorted(((p, r / per) for p, (r, _) in delta.items() if r), key=lambda x: -x[1])[:3]
    return sum(r for r, _ in delta.values()) / per, sum(ns for _, ns in delta.values()) / per, busiest


def median_ci(xs, level=0.95):
    """The median of @xs and its @level interval from their order statistics: the k-th smallest and
    the k-th largest, with k the most that leaves at most (1 - @level) / 2 of a binomial(n, 1/2) on
    each side. No distribution assumed. (median, low, high); low and high are None below 6 values."""
    s, n = sorted(xs), len(xs)
    tail, k, cum = (1 - level) / 2, 0, 0.0
    while k < n and cum + math.comb(n, k) / 2 ** n <= tail:
        cum += math.comb(n, k) / 2 ** n
        k += 1
    if k == 0:
        return statistics.median(s), None, None
    return statistics.median(s), s[k - 1], s[n - k]


def bench_fleet():
    """The census (zctrace export, zctrace top) left running while iperf3 streams on loopback, against
    iperf3 alone and under the census's attach points with empty programs: program runs and BPF ns per
    write from the kernel's run counts, and each variant's throughput ratio to untraced from rounds of
    short runs, with a 95% interval; the targets: 0.95 of untraced at 1 KiB, 0.99 at 64 KiB, or within
    0.02 of that floor where it is below them."""
    sizes = os.environ.get("BENCH_FLEET_SIZES", "1K,64K").split(",")
    targets = {"1K": 0.95, "64K": 0.99}
    variants = ["untraced", "floor", "export", "top"]
    counted = ["export"]
    if os.environ.get("BENCH_FLEET_COMPLETE", "1") == "1":
        variants += ["floor --complete", "export --complete"]
        counted += ["export --complete"]
    if os.environ.get("BENCH_FLEET_COST", "1") == "1":
        variants += ["export --cost"]
        counted += ["export --cost"]
    if not shutil.which("iperf3"):
        raise RuntimeError("iperf3 not installed (tools/install-deps.sh installs it)")
    print(f"\n== the always-on census: iperf3 on loopback; top attaches the programs export does ==", flush=True)
    print(f"  program runs per write: the kernel's run counts of the census's programs (--bpf-stats) over "
          f"{FLEET_WRITES} writes (at most 2 GiB), every run of them on the machine, read each "
          f"{FLEET_INTERVAL:g} s", flush=True)
    print(f"  {'size':<5} {'census':<18} {'runs/write':>10} {'BPF ns/write':>12}  most runs per write")
    for size in sizes:
        for v in counted:
            runs, ns, busiest = census_runs(v, size)
            most = ", ".join(f"{p} {r:.2f}" for p, r in busiest)
            print(f"  {size:<5} {v:<18} {runs:10.3f} {ns:12.1f}  {most}", flush=True)
    print(f"  throughput: {FLEET_PAIRS} rounds of {FLEET_DURATION} s runs, every variant once a round in a rotated "
          f"order; paired = each round's ratio to its untraced run: the median and its 95% interval", flush=True)
    runs = interleaved(sizes, variants, run_fleet, reps=FLEET_PAIRS)
    print(f"  {'size':<5} {'census':<18} {'median MB/s':>12} {'paired':>7} {'95% interval':>14} {'(min-max)':>13}")
    missed = []
    for size in sizes:
        untraced = runs[(size, "untraced")]
        ratio = {}
        for v in variants:
            pairs = [x / u for x, u in zip(runs[(size, v)], untraced)]
            med, lo, hi = median_ci(pairs)
            ratio[v] = (med, lo, hi)
            span = f"{lo:.3f}-{hi:.3f}" if lo is not None else "too few"
            print(f"  {size:<5} {v:<18} {statistics.median(runs[(size, v)]) / 1e6:12.1f} {med:7.3f} {span:>14} "
                  f"{min(pairs):6.3f}-{max(pairs):.3f}")
        for v, floor in (("export", "floor"), ("top", "floor"), ("export --complete", "floor --complete")):
            if v not in ratio:
                continue
            ok, goal = verdict(ratio[v][0], ratio[floor][0], targets.get(size, 0.95))
            how = (f">= {goal:.2f} of untraced" if goal == targets.get(size, 0.95) else
                   f"within 0.02 of its floor, {ratio[floor][0]:.3f} (below {targets.get(size, 0.95):.2f} itself)")
            lo, hi = ratio[v][1], ratio[v][2]
            sure = ("" if lo is None else "; its interval lies above the goal" if lo >= goal else
                    "; its interval lies below the goal" if hi < goal else "; its interval spans the goal")
            print(f"  {size}: zctrace {v} {'meets' if ok else 'MISSES'} the target ({how}){sure}")
            if not ok and "complete" not in v:
                missed.append(f"{v} {size}")
        if "export --cost" in ratio:
            print(f"  {size}: --cost (the sampler at its default rate on every CPU, every process's samples placed) "
                  f"costs {ratio['export'][0] - ratio['export --cost'][0]:+.3f} of untraced beside export")
    if missed:
        print(f"  targets missed: {', '.join(missed)}")


def io_syscalls_method():
    """How `zctrace run -- COMMAND` follows the I/O syscalls on this kernel: "fentry" or "tp" (the raw
    syscall tracepoints), from `zctrace probes --command`."""
    p = subprocess.run([ZCTRACE, "probes", "--command"], capture_output=True, text=True, timeout=600)
    m = re.search(r"^io_syscalls +(\w+) ", p.stdout, re.M)
    return m.group(1) if m else "tp"


def bench_commands():
    """`zctrace run -- iperf3` with the I/O syscalls followed at their own functions (fentry, where
    the kernel allows it) and with --complete (the raw syscall tracepoints, which put every syscall
    of the machine on the slow path), each beside its floor, interleaved."""
    sizes = os.environ.get("BENCH_FLEET_SIZES", "1K,64K").split(",")
    variants = ["untraced", "floor", "zctrace", "floor --complete", "zctrace --complete"]
    how = io_syscalls_method()
    print(f"\n== a command traced: iperf3 on loopback, {OVERHEAD_DURATION} s per run, {REPS} reps each, "
          f"interleaved; median throughput; the I/O syscalls by {'fentry/fexit on their functions' if how == 'fentry' else 'the raw syscall tracepoints (fentry refused here)'}, "
          f"and with --complete by the tracepoints; floor = the same attach points with empty programs ==",
          flush=True)
    if not shutil.which("iperf3"):
        raise RuntimeError("iperf3 not installed (tools/install-deps.sh installs it)")
    runs = interleaved(sizes, variants, run_iperf)
    print(f"  {'size':<5} {'tracer':<18} {RATIO_HEAD}")
    for size in sizes:
        ratio = ratio_rows(runs, size, variants, 18)
        print(f"  {size}: the raw syscall tracepoints cost {ratio['floor'] - ratio['floor --complete']:+.3f} "
              f"of untraced at the floor, {ratio['zctrace'] - ratio['zctrace --complete']:+.3f} traced; "
              f"zctrace is {ratio['floor'] - ratio['zctrace']:.3f} below its floor "
              f"({ratio['floor --complete'] - ratio['zctrace --complete']:.3f} with --complete)")


def bench_sampler():
    """What the sampler costs: `zctrace run -- iperf3` with the sampler at its default rate, at about
    three times it, and turned off (--sample-hz 0), interleaved; the sampler's cost is each rate's
    throughput over the run without it, paired by rep (target: 0.99 at the default rate)."""
    sizes = os.environ.get("BENCH_FLEET_SIZES", "1K,64K").split(",")
    variants = ["untraced", "zctrace --sample-hz 0", "zctrace", "zctrace --sample-hz 9973"]
    print(f"\n== the sampler: iperf3 on loopback traced, {OVERHEAD_DURATION} s per run, {REPS} reps each, "
          f"interleaved; median throughput; zctrace samples at its default rate, 9973 Hz, or not at all ==",
          flush=True)
    if not shutil.which("iperf3"):
        raise RuntimeError("iperf3 not installed (tools/install-deps.sh installs it)")
    runs = interleaved(sizes, variants, run_iperf)
    print(f"  {'size':<5} {'tracer':<24} {RATIO_HEAD}")
    for size in sizes:
        ratio_rows(runs, size, variants, 24)
        off = runs[(size, "zctrace --sample-hz 0")]
        for v in ("zctrace", "zctrace --sample-hz 9973"):
            pairs = [x / o for x, o in zip(runs[(size, v)], off)]
            med = statistics.median(pairs)
            print(f"  {size}: {v} keeps {med:.3f} of the run without the sampler (paired by rep, "
                  f"{min(pairs):.3f}-{max(pairs):.3f})" + (f": {'meets' if med >= 0.99 else 'MISSES'} 0.99"
                                                         if v == "zctrace" else ""))


SECTIONS = {"micro": bench_micro, "files": bench_files, "serve": bench_serve, "overhead": bench_overhead,
            "progcost": bench_progcost, "fleet": bench_fleet, "commands": bench_commands,
            "sampler": bench_sampler}


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
