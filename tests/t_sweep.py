"""zctrace sweep and tools/plot: the CSV and JSON rows, one tracer per sweep, failed and stopped runs,
the figures and findings, and the microbenchmark sweeps.
"""

import csv
import fcntl
import json
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time

from harness import (
    case, PERF_DERIVED, ROOT, WORKLOADS, ZCTRACE, assert_eq, detach_children, has_hw_pmu, read_csv, scratch, sweep,
    traced, zctrace_programs, zombie)


# ---- sweeps and plots ----

SWEEP_HEAD = ["run", "rep", "workload", "size", "threads", "status", "exit_code", "error", "host", "kernel",
              "machine", "methods", "elapsed_s", "bytes", "bytes_received", "messages", "throughput_gbit_s",
              "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_max_ns"]
SWEEP_MIDDLE = ["cpu_copies_per_byte", "cpu_copy_sites", "ctx_switches", "ctx_voluntary", "ctx_involuntary", "offcpu_ns",
                "syscalls", "page_faults_user", "page_faults_kernel", "task_clock_ns", "cpu_ns_per_byte",
                "unattributed_bytes"]
SWEEP_COST = ["cost_samples", "copy_cpu_share", "zc_ns_per_call", "zc_copy_ns_per_call", "page_refs_ns_per_call",
              "page_refs_copy_ns_per_call"]
SWEEP_TAIL = ["checks_passed", "checks_failed", "failed_checks"]
SWEEP_GRID = ("tcp-onecopy,tcp-twocopy", "--sizes", "1K,64K", "--threads", "1,2", "--reps", "1",
              "--messages", "200")
# every figure tools/plot draws from a sweep without membw rows (copy_bound_vs_size needs them)
FIGURES = ["throughput_vs_size", "throughput_vs_threads", "latency_vs_size", "latency_vs_threads",
           "cpu_per_byte_vs_size", "cycles_per_byte_vs_size", "cache_misses_vs_size", "panel_16k_vs_threads",
           "copies_per_byte", "cpu_by_site_vs_size", "ctx_switches_vs_threads", "findings"]
FIGURE_PX = (1600, 1000)
PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (\S+) size=(\w+) threads=(\d+) rep=(\d+): (ok|check_failed|error|timeout|"
                      r"interrupted)( [\d.]+ Gbit/s)?.* \(elapsed \d+s, ETA \d+s\)$")

def kept_sweep(path, *args, timeout=600):
    """'zctrace sweep -o @path ARGS', made once in the suite and kept for every test that reads it,
    in whichever test process asks first (run.py -j): the others wait on its lock. Returns
    (the sweep's CompletedProcess, @path)."""
    with open(path + ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        kept = lock.read()
        if kept:
            p = subprocess.CompletedProcess(**json.loads(kept))
        else:
            p = sweep("-o", path, *args, timeout=timeout)
            lock.write(json.dumps({"args": p.args, "returncode": p.returncode, "stdout": p.stdout,
                                   "stderr": p.stderr}))
    return p, path


def sweep_columns():
    """The documented columns; sites and perf counters in the order a ledger lists them."""
    p, led = traced("tcp-onecopy", "--size", "4K", "--messages", "10")
    sites = [c for s in led["sites"] for c in (f"{s}_copies", f"{s}_bytes", f"{s}_per_byte")]
    # the sampler's: CPU time by copy site (every CPU copy), then by kind
    cost = [c for s in led["sites"] if s not in ("direct_io", "zc_pin", "splice_ref", "pipe_ref")
            for c in (f"{s}_cpu_ns", f"{s}_cpu_ns_per_payload_byte")]
    cost += [f"cost_{k}_ns_per_payload_byte" for k in led["cost"]["by_kind"]] + SWEEP_COST
    perf = ["perf_" + name.replace("-", "_") for name in led["perf"]] + ["perf_roles", "perf_multiplexed"]
    perf += [f"{role}{key}" for role in ("", "sender_", "receiver_") for key in PERF_DERIVED] + ["memcpy_mb_s"]
    return SWEEP_HEAD + sites + SWEEP_MIDDLE + cost + perf + SWEEP_TAIL


def grid_sweep(ext):
    """The 8-run grid, swept once per output format and kept for the tests that read it."""
    return kept_sweep(os.path.join(scratch, f"grid.{ext}"), *SWEEP_GRID)


@case()
def sweep_csv_reconciles():
    p, path = grid_sweep("csv")
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}"
    header, rows = read_csv(path)
    assert header == sweep_columns(), f"header: {header}"
    assert len(rows) == 8, f"{len(rows)} rows"
    assert sorted((r["workload"], r["size"], r["threads"]) for r in rows) == sorted(
        (w, s, t) for w in ("tcp-onecopy", "tcp-twocopy") for s in ("1024", "65536") for t in ("1", "2"))
    for r in rows:
        what = f"{r['workload']} size={r['size']} threads={r['threads']}"
        assert r["status"] == "ok" and r["exit_code"] == "0", f"{what}: {r['status']}: {r['error']}"
        assert r["checks_failed"] == "0" and r["failed_checks"] == "", f"{what}: {r['failed_checks']}"
        size, threads, messages, sent = int(r["size"]), int(r["threads"]), int(r["messages"]), int(r["bytes"])
        assert_eq(f"{what} messages", messages, 200 * threads)
        assert_eq(f"{what} bytes", sent, messages * size)
        assert_eq(f"{what} bytes_received", int(r["bytes_received"]), sent)
        assert_eq(f"{what} recv_copy_bytes", int(r["recv_copy_bytes"]), sent)
        assert_eq(f"{what} send_copy_bytes", int(r["send_copy_bytes"]), sent)
        assert_eq(f"{what} user_copy_bytes", int(r["user_copy_bytes"]),
                  sent if r["workload"] == "tcp-twocopy" else 0)
        assert_eq(f"{what} zc_pin_bytes", int(r["zc_pin_bytes"]), 0)
        assert float(r["throughput_gbit_s"]) > 0 and int(r["task_clock_ns"]) > 0, r
        assert "send_copy=" in r["methods"] and "recv_copy=" in r["methods"], r["methods"]
        # unsupported hardware counters are empty cells, never 0
        for name in ("perf_cycles", "perf_instructions"):
            assert r[name] == "" or float(r[name]) > 0, f"{name} = {r[name]!r}"
    progress = [l for l in p.stderr.splitlines() if l.startswith("[")]
    assert len(progress) == 8 and all(PROGRESS.match(l) for l in progress), "\n".join(progress)
    assert "8 runs" in p.stderr.splitlines()[-1] and "all ok" in p.stderr.splitlines()[-1], p.stderr[-300:]


def held_programs(pid):
    """The ids of the BPF programs process @pid holds (its program and link descriptors)."""
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ids
    for fd in fds:
        try:
            info = open(f"/proc/{pid}/fdinfo/{fd}").read()
        except OSError:
            continue
        ids |= {int(m) for m in re.findall(r"^prog_id:\s*(\d+)", info, re.M)}
    return ids


def running_child(pid):
    """Whether process @pid has a child that is a run of its (a `zctrace run` in its own group)."""
    try:
        children = open(f"/proc/{pid}/task/{pid}/children").read().split()
    except OSError:
        return False
    for c in children:
        try:
            if open(f"/proc/{c}/comm").read().strip() == "zctrace" and os.getpgid(int(c)) == int(c):
                return True
        except OSError:
            continue
    return False


@case("stock")
def sweep_loads_one_tracer():
    """A sweep loads its tracer once and runs every cell under it: while 6 runs of two workloads go,
    the sweep holds one set of programs, the same throughout, and every row still reconciles
    exactly (each run starts from a tracer reset to its load: nothing of the run before it is
    counted again)."""
    path = os.path.join(scratch, "once.csv")
    proc = subprocess.Popen([ZCTRACE, "sweep", "tcp-twocopy,tcp-onecopy", "--sizes", "4K", "--reps", "3",
                             "--messages", "300", "-o", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    held = []
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        # while a run goes: the tracer is loaded whole by then (a load the kernel refuses part of
        # is made again without it, before any run)
        ids = held_programs(proc.pid)
        if ids and running_child(proc.pid):
            # a set inside another is the same tracer, caught while it lets its programs go one by
            # one at the sweep's end (a detach child may still run then); new ids are a second one
            same = [i for i, h in enumerate(held) if ids <= h or h <= ids]
            if not same:
                held.append(ids)
            elif held[same[0]] < ids:
                held[same[0]] = ids
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, f"exit {proc.returncode}: {err[-1500:]}"
    rows = read_csv(path)[1]
    assert len(rows) == 6, rows
    for r in rows:
        what = f"{r['workload']} rep={r['rep']}"
        assert r["status"] == "ok", f"{what}: {r['error']}"
        sent = int(r["bytes"])
        assert_eq(f"{what} bytes", sent, 300 * 4096)
        assert_eq(f"{what} send_copy_bytes", int(r["send_copy_bytes"]), sent)
        assert_eq(f"{what} recv_copy_bytes", int(r["recv_copy_bytes"]), sent)
        assert_eq(f"{what} user_copy_bytes", int(r["user_copy_bytes"]), sent if r["workload"] == "tcp-twocopy" else 0)
    assert held, "the sweep held no BPF program while its runs went: each run loaded its own"
    assert len(held) == 1, f"more than one tracer loaded: {held}"
    assert len(held[0]) >= 10, f"only {len(held[0])} programs held: {held[0]}"


@case()
def sweep_uring_workloads():
    """zctrace sweep runs the io_uring workloads, their own options after '--': a row each, exact."""
    path = os.path.join(scratch, "uring.csv")
    p = sweep("uring-send,uring-sendzc", "--sizes", "64K", "--threads", "1,2", "--messages", "100",
              "-o", path, "--", "--async")
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}"
    rows = read_csv(path)[1]
    assert sorted((r["workload"], r["threads"]) for r in rows) == sorted(
        (w, t) for w in ("uring-send", "uring-sendzc") for t in ("1", "2")), rows
    for r in rows:
        what, sent = f"{r['workload']} threads={r['threads']}", int(r["bytes"])
        assert r["status"] == "ok" and r["checks_failed"] == "0", f"{what}: {r['failed_checks']}"
        assert_eq(f"{what} bytes", sent, 100 * 65536 * int(r["threads"]))
        zc = r["workload"] == "uring-sendzc"
        assert_eq(f"{what} send_copy_bytes", int(r["send_copy_bytes"]), 0 if zc else sent)
        assert_eq(f"{what} zc_pin_bytes", int(r["zc_pin_bytes"]), sent if zc else 0)
        assert_eq(f"{what} recv_copy_bytes", int(r["recv_copy_bytes"]), sent)


@case()
def sweep_json_rows():
    p, path = grid_sweep("json")
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}"
    doc = json.load(open(path))
    assert set(("host", "kernel", "started", "argv")) <= set(doc["meta"]), doc["meta"]
    assert doc["meta"]["argv"][:2] == ["zctrace", "sweep"], doc["meta"]["argv"]
    rows = doc["rows"]
    assert len(rows) == 8, f"{len(rows)} rows"
    columns = sweep_columns()
    for r in rows:
        assert [k for k in r if k != "checks"] == columns, list(r)
        assert r["status"] == "ok", r["error"]
        assert isinstance(r["checks"], list) and r["checks"] and all(c["ok"] for c in r["checks"]), r["checks"]
        assert r["checks_passed"] == len(r["checks"])
        assert r["recv_copy_bytes"] == r["bytes"] == r["messages"] * r["size"], r


@case()
def sweep_keeps_whole_ledgers():
    """--ledgers DIR keeps each run's whole ledger as DIR/run-K.json, K its row's run: the row's
    figures are that ledger's. A DIR that is a file is one line and exit 1, before any run."""
    d = tempfile.mkdtemp(dir=scratch)
    kept, out = os.path.join(d, "ledgers"), os.path.join(d, "rows.json")
    p = sweep("tcp-twocopy,tcp-onecopy", "--sizes", "4K", "--messages", "100", "--ledgers", kept, "-o", out)
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}"
    rows = json.load(open(out))["rows"]
    assert sorted(os.listdir(kept)) == sorted(f"run-{r['run']}.json" for r in rows) and len(rows) == 2, os.listdir(kept)
    for r in rows:
        led = json.load(open(os.path.join(kept, f"run-{r['run']}.json")))
        assert_eq(f"run {r['run']}: bytes", led["workload"]["bytes"], r["bytes"])
        for site in ("send_copy", "recv_copy", "user_copy"):
            assert_eq(f"run {r['run']}: {site}", led["sites"][site]["bytes"], r[f"{site}_bytes"])
        assert led["checks"] == r["checks"], (led["checks"], r["checks"])
    p = sweep("tcp-onecopy", "--messages", "10", "--ledgers", out, "-o", os.path.join(d, "none.json"))
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode == 1 and len(lines) == 1 and "is not a directory" in lines[0], (p.returncode, p.stderr)
    assert not os.path.exists(os.path.join(d, "none.json")), "rows written by a sweep that could not keep its ledgers"
    # a ledger that cannot be written (its name taken by a directory) stops the sweep after that run
    os.remove(os.path.join(kept, "run-1.json"))
    os.mkdir(os.path.join(kept, "run-1.json"))
    p = sweep("tcp-onecopy", "--messages", "10", "--reps", "2", "--ledgers", kept, "-o", out)
    assert p.returncode == 1, (p.returncode, p.stderr[-500:])
    assert re.search(r"cannot write .*run-1\.json", p.stderr) and "stopped after 1 of 2 runs: a run's ledger cannot be kept" in p.stderr, p.stderr
    assert len(json.load(open(out))["rows"]) == 1, "a row past the run whose ledger could not be kept"


@case()
def sweep_failed_run_recorded():
    """A run that fails is a row with its error, and the sweep goes on; one that hangs is stopped at
    its timeout with nothing left behind. ZCTRACE_WORKLOADS swaps the binaries in."""
    d = tempfile.mkdtemp(dir=scratch)
    tmp = tempfile.mkdtemp(dir=scratch)
    env = dict(os.environ, ZCTRACE_WORKLOADS=d, TMPDIR=tmp)
    os.symlink("/bin/false", os.path.join(d, "tcp-twocopy"))
    os.symlink(os.path.join(WORKLOADS, "tcp-onecopy"), os.path.join(d, "tcp-onecopy"))
    out = os.path.join(d, "failed.csv")
    p = sweep("tcp-twocopy,tcp-onecopy", "--sizes", "4K", "--messages", "100", "-o", out, env=env)
    assert p.returncode == 1, f"exit {p.returncode}: {p.stderr[-800:]}"
    header, rows = read_csv(out)
    assert len(rows) == 2, rows
    bad, good = rows
    assert bad["workload"] == "tcp-twocopy" and bad["status"] == "error", bad
    assert bad["exit_code"] == "1" and bad["error"], bad
    assert bad["bytes"] == "" and bad["throughput_gbit_s"] == "", "a failed run's figures must be empty"
    assert good["status"] == "ok" and int(good["bytes"]) == 100 * 4096, good
    assert "1 of 2 runs failed (1 error)" in p.stderr.splitlines()[-1], p.stderr[-300:]

    out = os.path.join(d, "timeout.csv")
    t0 = time.monotonic()
    p = sweep("tcp-onecopy", "--sizes", "4K", "--duration", "60", "--timeout", "2", "-o", out, env=env)
    assert time.monotonic() - t0 < 30, "the timeout did not stop the run"
    assert p.returncode == 1, f"exit {p.returncode}: {p.stderr[-800:]}"
    header, rows = read_csv(out)
    assert [r["status"] for r in rows] == ["timeout"], rows
    assert "timeout" in rows[0]["error"], rows[0]["error"]
    left = subprocess.run(["pgrep", "-f", d], capture_output=True, text=True)
    assert left.stdout.strip() == "", f"workload left running: {left.stdout}"
    assert os.listdir(tmp) == [], f"temporary files left: {os.listdir(tmp)}"


@case("stock", alone=True)
def sweep_stopped_leaves_nothing():
    """A sweep stopped by SIGINT mid-run records the run as interrupted, exits 130 and leaves nothing:
    no program of its shared tracer, no detach child, no workload, no temporary file. Killed
    outright (SIGKILL), its run in flight still ends on its own, and then nothing of either is left,
    in TMPDIR neither."""
    def quiet_by(deadline):
        while time.monotonic() < deadline:
            left = zctrace_programs() - before
            procs = detach_children() + [c for c in subprocess.run(
                ["pgrep", "-f", "workloads/tcp-onecopy"], capture_output=True, text=True).stdout.split()
                if not zombie(c)]
            if not left and not procs:
                return
            time.sleep(0.1)
        raise AssertionError(f"left: programs {sorted(left)}, processes {procs}")

    tmp = os.path.join(scratch, "stopped-tmp")
    os.makedirs(tmp, exist_ok=True)

    def start(path):
        proc = subprocess.Popen([ZCTRACE, "sweep", "tcp-onecopy", "--sizes", "4K", "--reps", "3",
                                 "--duration", "3", "-o", path], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=dict(os.environ, TMPDIR=tmp))
        deadline = time.monotonic() + 30
        while not running_child(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert running_child(proc.pid), "no run started"
        time.sleep(1)
        return proc

    before = zctrace_programs()
    path = os.path.join(scratch, "stopped.csv")
    proc = start(path)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, f"exit {proc.returncode}: {err[-800:]}"
    rows = read_csv(path)[1]
    assert [r["status"] for r in rows] == ["interrupted"], rows
    quiet_by(time.monotonic() + 15)

    proc = start(os.path.join(scratch, "killed.csv"))
    proc.kill()
    proc.communicate(timeout=60)
    # the run in flight finishes its 3 s and its report, then its references are the last
    quiet_by(time.monotonic() + 30)
    assert os.listdir(tmp) == [], f"temporary files left: {os.listdir(tmp)}"


@case(root=False)
def sweep_usage_errors():
    out = os.path.join(scratch, "usage")
    os.makedirs(out, exist_ok=True)
    cases = [
        (["tcp-onecopy", "--sizes", "12Q"], "invalid --sizes '12Q'"),
        (["tcp-onecopy", "--sizes", "1K,,4K"], "invalid --sizes"),
        (["tcp-onecopy", "--threads", "0"], "invalid --threads '0'"),
        (["tcp-onecopy", "--threads", "1,257"], "invalid --threads"),
        (["tcp-onecopy", "--reps", "0"], "invalid --reps '0'"),
        (["tcp-onecopy,tcp-2copy"], "unknown workload 'tcp-2copy'"),
        (["tcp-onecopy", "-o", os.path.join(out, "results.txt")], "cannot tell the format of"),
        (["tcp-onecopy", "--duration", "1", "--messages", "10"], "either --duration or --messages"),
        (["tcp-onecopy", "-m", "magic"], "unknown method 'magic'"),
        (["tcp-onecopy", "stray"], "unexpected argument 'stray'"),
        ([], "no workloads given"),
    ]
    for args, msg in cases:
        p = sweep(*args, timeout=30)
        assert p.returncode == 2, f"{args}: exit {p.returncode}"
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        assert len(lines) == 1 and msg in lines[0], f"{args}: {p.stderr!r}"
        assert p.stdout == "", f"{args}: wrote {p.stdout[:200]!r}"
    assert os.listdir(out) == [], os.listdir(out)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path}: not a PNG"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


@case(long=True)
def plot_writes_figures():
    p, path = grid_sweep("csv")
    assert os.path.exists(path), f"no sweep file: {p.stderr[-500:]}"
    outdir = os.path.join(scratch, "figures")
    plot = subprocess.run([os.path.join(ROOT, "tools", "plot"), path, "-o", outdir], capture_output=True,
                          text=True, timeout=300)
    assert plot.returncode == 0, plot.stdout + plot.stderr
    for name in FIGURES:
        png, svg = os.path.join(outdir, name + ".png"), os.path.join(outdir, name + ".svg")
        assert os.path.getsize(png) > 0, png
        assert png_size(png) == FIGURE_PX, f"{name}.png is {png_size(png)}, not {FIGURE_PX}"
        with open(svg) as f:
            assert "<svg" in f.read(2000), f"{svg}: not an SVG"
    # the JSON form plots the same figures
    jp, jpath = grid_sweep("json")
    plot = subprocess.run([os.path.join(ROOT, "tools", "plot"), jpath, "-o", os.path.join(scratch, "jfig"),
                           "--formats", "png"], capture_output=True, text=True, timeout=300)
    assert plot.returncode == 0 and sorted(os.listdir(os.path.join(scratch, "jfig"))) == sorted(
        [f + ".png" for f in FIGURES] + ["findings.json"]), plot.stderr
    assert "skipped copy_bound_vs_size: no membw rows in the sweep" in plot.stderr, plot.stderr
    # unreadable or empty input: one line, exit 2
    empty = os.path.join(scratch, "empty.csv")
    open(empty, "w").close()
    for bad in (empty, os.path.join(scratch, "missing.csv")):
        plot = subprocess.run([os.path.join(ROOT, "tools", "plot"), bad], capture_output=True, text=True,
                              timeout=60)
        assert plot.returncode == 2 and len(plot.stderr.strip().splitlines()) == 1, (plot.returncode, plot.stderr)


@case()
def plot_partial_file():
    """A partial sweep (a failed row, a single ok row, columns missing) still plots what it holds."""
    p, path = grid_sweep("csv")
    header, rows = read_csv(path)
    keep = [c for c in header if not c.startswith(("lat_", "ctx_")) and "_cpu_ns" not in c]
    partial = os.path.join(scratch, "partial.csv")
    with open(partial, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keep)
        w.writerow([rows[0][c] for c in keep])
        w.writerow(["timeout" if c == "status" else rows[1][c] if c in ("workload", "size", "threads") else ""
                    for c in keep])
    outdir = os.path.join(scratch, "partial-figures")
    plot = subprocess.run([os.path.join(ROOT, "tools", "plot"), partial, "-o", outdir], capture_output=True,
                          text=True, timeout=300)
    assert plot.returncode == 0, plot.stdout + plot.stderr
    made = sorted(f for f in os.listdir(outdir) if f.endswith(".png"))
    assert made == sorted(f + ".png" for f in ("throughput_vs_size", "throughput_vs_threads", "cpu_per_byte_vs_size",
                                               "cycles_per_byte_vs_size", "cache_misses_vs_size",
                                               "panel_16k_vs_threads", "copies_per_byte", "findings")), made
    assert "skipped latency_vs_threads" in plot.stderr and "skipped latency_vs_size" in plot.stderr, plot.stderr


def run_plot(path, outdir, *args):
    return subprocess.run([os.path.join(ROOT, "tools", "plot"), path, "-o", outdir, "--formats", "png", *args],
                          capture_output=True, text=True, timeout=300)


@case(root=False)
def findings_synthetic_crossovers():
    """The findings tool on rows with known answers: B overtakes A from 4K on in 4 of 5 reps (rep 5
    dips at 16K), C never overtakes B, D ties B at every size; the peak, the best thread counts and
    the copy bound (throughput x CPU copies per byte / memcpy bandwidth) exactly."""
    cols = ["run", "rep", "workload", "size", "threads", "status", "throughput_gbit_s", "cpu_copies_per_byte",
            "cpu_copy_sites", "send_copy_per_byte", "send_copy_bytes", "zc_pin_per_byte", "zc_pin_bytes",
            "memcpy_mb_s"]
    tput = {("A", 1024): 4.0, ("A", 4096): 8.0, ("A", 16384): 16.0,
            ("B", 1024): 3.0, ("B", 4096): 9.0, ("B", 16384): 20.0,
            ("C", 1024): 1.0, ("C", 4096): 2.0, ("C", 16384): 10.0,
            ("D", 1024): 3.0, ("D", 4096): 9.0, ("D", 16384): 20.0}
    rows, n = [], 0
    for rep in range(1, 6):
        n += 1
        rows.append([n, rep, "membw", 67108864, 1, "ok", "", "", "", "", "", "", "", 10000])
        for w in "ABCD":
            for size in (1024, 4096, 16384):
                for threads in (1, 2):
                    t = tput[(w, size)] * threads
                    if rep == 5 and w == "B" and size == 16384:
                        t = 15.0 * threads  # below A (16 x threads) in this repetition alone
                    copies = {"A": 3, "B": 2, "C": 2, "D": 2}[w]
                    pin = 1 if w == "C" else 0
                    n += 1
                    rows.append([n, rep, w, size, threads, "ok", t, copies, "send_copy", copies, copies * size,
                                 pin, pin * size, ""])
    path = os.path.join(scratch, "synthetic.csv")
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([cols] + rows)
    outdir = os.path.join(scratch, "synthetic-figures")
    plot = run_plot(path, outdir)
    assert plot.returncode == 0, plot.stdout + plot.stderr
    found = json.load(open(os.path.join(outdir, "findings.json")))
    assert found["runs"] == 120 and found["reps"] == 5, (found["runs"], found["reps"])
    assert found["copy_bandwidth"]["memcpy_mb_s"] == 10000 and found["copy_bandwidth"]["runs"] == 5
    assert (found["peak"]["workload"], found["peak"]["size"], found["peak"]["threads"],
            found["peak"]["throughput_gbit_s"]) == ("B", 16384, 2, 40.0), found["peak"]
    best = {(p["workload"], p["size"]): p["threads"] for p in found["best_threads"]}
    assert set(best.values()) == {2} and len(best) == 12, best
    cross = {(c["faster"], c["than"], c["threads"]): c for c in found["crossovers"]}
    assert set(cross) == {(a, b, t) for a, b in (("B", "A"), ("C", "B"), ("D", "C")) for t in (1, 2)}, set(cross)
    for t in (1, 2):
        ba = cross[("B", "A", t)]
        assert (ba["from_size"], ba["reps_holding"], ba["reps"]) == (4096, 4, 5), ba
        assert ba["text"].startswith(f"B >= A from 4K on, in 4 of 5 reps ({t} thread"), ba["text"]
        assert ba["cpu_copies_per_byte"] == {"B": 2, "A": 3}, ba
        cb = cross[("C", "B", t)]
        assert cb["from_size"] is None and cb["reps_holding"] == 0 and cb["reps"] == 5, cb
        assert cb["text"].startswith("C never overtakes B up to 16K (below it at 16K in 5 of 5 reps"), cb["text"]
        assert cb["pins_refs_per_byte"] == {"C": 1, "B": 0}, cb
        dc = cross[("D", "C", t)]
        assert dc["from_size"] == 1024 and dc["text"].startswith("D >= C at every size, in 5 of 5 reps"), dc
    share = {(p["workload"], p["size"], p["threads"]): p["copy_share"] for p in found["copy_bound"]}
    want = 16.0 * 2 * 1e9 / 8 * 3 / 10000e6  # A at 16K, 2 threads: 32 Gbit/s x 3 copies/B at 10 GB/s
    assert abs(share[("A", 16384, 2)] - want) < 1e-12, (share[("A", 16384, 2)], want)
    assert "B >= A from 4K on, in 4 of 5 reps (1 thread)" in plot.stdout, plot.stdout
    assert os.path.exists(os.path.join(outdir, "copy_bound_vs_size.png")), os.listdir(outdir)
    # --pairs chooses the comparisons; a bad one is one line and exit 2
    plot = run_plot(path, outdir, "--pairs", "C:A")
    found = json.load(open(os.path.join(outdir, "findings.json")))
    assert plot.returncode == 0 and {(c["faster"], c["than"]) for c in found["crossovers"]} == {("C", "A")}, found
    plot = run_plot(path, outdir, "--pairs", "C:Z")
    assert plot.returncode == 2 and "invalid --pairs item 'C:Z'" in plot.stderr, plot.stderr


@case(long=True)
def findings_from_a_real_sweep():
    """A small real sweep with --membw: membw's user_copy is exactly the bytes it memcpy'd, and the
    findings (peak, crossover reps, copy bound) are those the rows give, recomputed here."""
    path = os.path.join(scratch, "findings.csv")
    p = sweep("tcp-twocopy,tcp-onecopy", "--sizes", "4K,64K", "--threads", "1", "--reps", "2", "--messages", "400",
              "--membw", "16M", "-o", path)
    assert p.returncode in (0, 1), p.stderr[-1500:]
    rows = read_csv(path)[1]
    # membw's own claim, its copies no faster than the memcpy it timed at another moment, is one a
    # busy machine breaks (cost_of_user_copies holds it, alone); every other check holds here
    timed = "user_copy copies no faster than memcpy"
    bad = [(r["workload"], r["size"], r["rep"], r["status"], r["error"], r["failed_checks"]) for r in rows
           if r["status"] != "ok" and not (r["workload"] == "membw" and r["status"] == "check_failed"
                                           and set(r["failed_checks"].split(";")) == {timed})]
    assert not bad, bad
    assert p.returncode == (1 if any(r["status"] != "ok" for r in rows) else 0), p.stderr[-1500:]
    bw = [r for r in rows if r["workload"] == "membw"]
    assert len(bw) == 2 and all(float(r["memcpy_mb_s"]) > 0 for r in bw), bw
    for r in bw:  # membw's 50 passes and 2 warm-up passes, each a memcpy of the whole 16 MiB
        assert_eq("membw user_copy_bytes", int(r["user_copy_bytes"]), 52 * 16 << 20)
    assert rows[0]["machine"] and "L1d" in rows[0]["machine"] and "Linux" in rows[0]["machine"], rows[0]["machine"]
    outdir = os.path.join(scratch, "findings-figures")
    plot = run_plot(path, outdir)
    assert plot.returncode == 0, plot.stdout + plot.stderr
    found = json.load(open(os.path.join(outdir, "findings.json")))
    grid = [r for r in rows if r["workload"] != "membw"]
    med = {}
    for r in grid:
        med.setdefault((r["workload"], int(r["size"])), []).append(float(r["throughput_gbit_s"]))
    peak = max(med, key=lambda k: statistics.median(med[k]))
    assert (found["peak"]["workload"], found["peak"]["size"]) == peak, (found["peak"], peak)
    assert found["peak"]["throughput_gbit_s"] == statistics.median(med[peak])
    # the figures take the runs whose status is ok: a membw run whose timed claim a busy machine broke
    # gives no bandwidth
    ok_bw = [float(r["memcpy_mb_s"]) for r in bw if r["status"] == "ok"]
    if not ok_bw:
        assert not found["copy_bound"] and found["copy_bound_why"], found
    bw_bytes = statistics.median(ok_bw) * 1e6 if ok_bw else None
    for pt in found["copy_bound"]:
        mine = [r for r in grid if (r["workload"], int(r["size"])) == (pt["workload"], pt["size"])]
        want = statistics.median(float(r["throughput_gbit_s"]) * 1e9 / 8 * float(r["cpu_copies_per_byte"]) / bw_bytes
                                 for r in mine)
        assert abs(pt["copy_share"] - want) <= 1e-9 * want, (pt, want)
        assert pt["cpu_copies_per_byte"] == (3 if pt["workload"] == "tcp-twocopy" else 2), pt
    (c,) = found["crossovers"]
    assert (c["faster"], c["than"], c["reps"]) == ("tcp-onecopy", "tcp-twocopy", 2), c
    by_rep = {(r["workload"], int(r["size"]), r["rep"]): float(r["throughput_gbit_s"]) for r in grid}
    tail = [s for s in (4096, 65536) if c["from_size"] is not None and s >= c["from_size"]] or [65536]
    holding = sum(all(by_rep[("tcp-onecopy", s, rep)] >= by_rep[("tcp-twocopy", s, rep)] for s in tail)
                  for rep in ("1", "2"))
    assert c["reps_holding"] == holding, (c, holding)
    assert c["text"] in plot.stdout
    # the sampler measured the copies' share of the CPU time: the findings print it, not the estimate
    assert "copy time: the share of the traced tasks' CPU time in the copy routines" in plot.stdout, plot.stdout
    assert "copy bound: throughput x CPU copies/B" not in plot.stdout, plot.stdout
    # a point whose rows drew no sample (a busy machine, a short phase) has no share, and no finding
    sampled = {(r["workload"], int(r["size"])) for r in grid if r["copy_cpu_share"] != ""}
    assert len(found["copy_time"]) == len(sampled) >= 1, (found["copy_time"], sampled)
    for pt in found["copy_time"]:
        mine = [float(r["copy_cpu_share"]) for r in grid if (r["workload"], int(r["size"])) == (pt["workload"], pt["size"])
                and r["copy_cpu_share"] != ""]
        assert pt["copy_share"] == statistics.median(mine) and 0 <= pt["copy_share"] <= 1, (pt, mine)
    assert sorted(f for f in os.listdir(outdir) if f.endswith(".png")) == sorted(
        f + ".png" for f in FIGURES + ["copy_bound_vs_size"]), os.listdir(outdir)
    # no PMU here: the counter panels say so on the axis (the SVG keeps the text)
    if not has_hw_pmu():
        svgdir = os.path.join(scratch, "findings-svg")
        subprocess.run([os.path.join(ROOT, "tools", "plot"), path, "-o", svgdir, "--formats", "svg"],
                       capture_output=True, timeout=300, check=True)
        for name in ("cache_misses_vs_size", "panel_16k_vs_threads"):
            assert "not supported on this machine" in open(os.path.join(svgdir, name + ".svg")).read(), name
            assert png_size(os.path.join(outdir, name + ".png")) == FIGURE_PX


# microbenchmark sweeps: each one small, for the tests below and the figures
MICRO_SWEEPS = {
    "fileread": ("fileread", "--param", "file-size=256K,1M", "--param", "cache=cold,warm", "--", "--reps", "2",
                 "--reads", "16"),
    "memlat": ("memlat", "--param", "size=4K,4M", "--", "--reps", "3", "--iters", "20000"),
    "call": ("call", "--param", "args=3", "--", "--iters", "100000", "--reps", "10"),
    "filecache": ("filecache", "--param", "max-size=4M", "--", "--bytes", "8M", "--reps", "3"),
    "contention": ("contention", "--param", "procs=3", "--", "--file-size", "256K", "--reps", "2"),
    "timer": ("timer", "--", "--reps", "5000"),
}
MICRO_FIGURES = {"fileread": "fileread_vs_file_size", "memlat": "memlat_staircase", "call": "call_cost_vs_args",
                 "filecache": "filecache_knee", "contention": "contention_vs_procs", "timer": "timer_histograms"}
MICRO_SWEEP_HEAD = ["run", "rep", "workload"]
MICRO_SWEEP_COLUMNS = ["workload_args", "status", "exit_code", "error", "host", "kernel", "machine", "methods",
                       "elapsed_s", "bytes", "m_name", "m_unit", "m_samples", "m_min", "m_median", "m_mean", "m_p99",
                       "m_max", "assumptions_held", "assumptions_failed", "assumption_verdicts"]


def micro_sweep(name, ext="json"):
    """One of the small microbenchmark sweeps, run once per format and kept for the tests that read it."""
    return kept_sweep(os.path.join(scratch, f"micro-{name}.{ext}"), *MICRO_SWEEPS[name], timeout=300)


@case()
def sweep_micro_grid_rows():
    """fileread over file-size x cache: a row per point, in grid order, with the values, each measurement's
    distribution and every assumption's verdict, the kernel's page counts exact; the CSV carries the same."""
    p, path = micro_sweep("fileread")
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}"
    rows = json.load(open(path))["rows"]
    assert [(r["param_file_size"], r["param_cache"]) for r in rows] == [
        (262144, "cold"), (262144, "warm"), (1048576, "cold"), (1048576, "warm")], rows
    for r in rows:
        what = f"file-size={r['param_file_size']} cache={r['param_cache']}"
        assert r["status"] == "ok" and r["checks_failed"] == 0, f"{what}: {r['error']}"
        assert r["workload_args"] == f"--file-size {size_label(r['param_file_size'])} --cache {r['param_cache']}", r
        names = [m["name"] for m in r["measurements"]]
        assert names == [f"{p} 4K, {r['param_cache']}: {u}" for p in ("seq", "random") for u in ("MB/s", "us/read")], names
        for m in r["measurements"]:
            assert m["samples"] == 2 and 0 < m["min"] <= m["median"] <= m["p99"] <= m["max"], m
            assert m["hist"], m
        assert r["m_name"] == ";".join(names) and r["m_median"].count(";") == 3, r["m_median"]
        assert r["assumptions_held"] == len(r["assumptions"]) >= 4 and r["assumptions_failed"] == 0, r["assumptions"]
        for a in r["assumptions"]:
            assert a["holds"] and a["verdict"].startswith("holds ("), a
            assert a["min"] != a["max"] or a["measured"] == a["expected"], a
        # the kernel's count: a cold sample reads in every page of the file, a warm one none
        pages = [a for a in r["assumptions"] if a["measure"] == "page_cache_pages"]
        assert pages and all(a["measured"] == (a["expected"] if r["param_cache"] == "cold" else 0) for a in pages), pages
        if r["param_cache"] == "cold":
            assert pages[0]["measured"] == (2 + 1) * r["param_file_size"] // 4096, pages
        assert r["file_read_copy_bytes"] == r["bytes"] > 0, r
        assert r["assumption_verdicts"].count(": holds (") == len(r["assumptions"]), r["assumption_verdicts"]
    progress = [l for l in p.stderr.splitlines() if l.startswith("[")]
    assert len(progress) == 4 and "fileread file-size=256K cache=cold rep=1: ok" in progress[0], progress

    # the CSV form: the same columns, memlat's size axis set on --min-size and --max-size
    p, path = micro_sweep("memlat", "csv")
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}"
    header, rows = read_csv(path)
    assert header[:4] == MICRO_SWEEP_HEAD + ["param_size"], header
    assert header[4:4 + len(MICRO_SWEEP_COLUMNS)] == MICRO_SWEEP_COLUMNS, header
    assert "size" not in header and "throughput_gbit_s" not in header and "checks_failed" in header, header
    assert [(r["param_size"], r["workload_args"]) for r in rows] == [
        ("4096", "--min-size 4K --max-size 4K"), ("4194304", "--min-size 4M --max-size 4M")], rows
    for r in rows:
        assert r["status"] == "ok" and r["m_name"] == f"chase over {size_label(int(r['param_size']))}", r
        assert r["m_samples"] == "3" and float(r["m_median"]) > 0, r
        assert r["assumptions_held"] == "2" and r["assumptions_failed"] == "0", r
        assert "no page fault (the buffer was pre-faulted): holds (0 seen, page_faults)" in r["assumption_verdicts"], r


def size_label(v):
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if v >= 1 << shift and v % (1 << shift) == 0:
            return f"{v >> shift}{unit}"
    return str(v)


@case(root=False)
def sweep_micro_bad_param():
    """A bad axis name or value is one line naming it, exit 2, before any run; nothing written."""
    out = os.path.join(scratch, "micro-usage")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "x.json")
    cases = [
        (["memlat", "--param", "bogus=1"], "memlat has no option --bogus for --param bogus"),
        (["memlat", "--param", "size=3"], "invalid --param size=3: memlat: invalid --min-size '3'"),
        (["call", "--param", "args=8"], "invalid --param args=8: call: invalid --max-args '8' (0 to 7)"),
        (["fileread", "--param", "pattern=seq,cold"], "invalid --param pattern=cold: fileread: invalid --pattern"),
        (["memlat", "--param", "hugepages=yes"], "--hugepages takes no value, so the axis is on,off"),
        (["memlat", "--param", "size"], "invalid --param 'size' (NAME=V1,V2,..."),
        (["memlat", "--param", "size=4K,,8K"], "an empty value"),
        (["memlat", "--param", "size=4K", "--param", "size=8K"], "--param size is given twice"),
        (["memlat", "--sizes", "4K"], "--sizes is for the stream workloads"),
        (["tcp-onecopy", "--param", "size=4K"], "--param is for microbenchmarks"),
        (["memlat,tcp-onecopy"], "memlat is a microbenchmark and tcp-onecopy is not"),
    ]
    for args, msg in cases:
        p = sweep(*args, "-o", path, timeout=30)
        assert p.returncode == 2, f"{args}: exit {p.returncode}: {p.stderr}"
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        assert len(lines) == 1 and msg in lines[0], f"{args}: {p.stderr!r}"
    assert os.listdir(out) == [], os.listdir(out)


@case()
def plot_micro_figures():
    """tools/plot draws each microbenchmark figure from small real sweeps: valid PNG and SVG, and the
    caption (under the plot, printed, in figures.json) tallies the kernel-checked assumptions."""
    paths = []
    for name in MICRO_SWEEPS:
        p, path = micro_sweep(name)
        assert p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr[-1500:]}"
        paths.append(path)
    outdir = os.path.join(scratch, "micro-figures")
    plot = subprocess.run([os.path.join(ROOT, "tools", "plot"), *paths, "-o", outdir], capture_output=True,
                          text=True, timeout=300)
    assert plot.returncode == 0, plot.stdout + plot.stderr
    listing = json.load(open(os.path.join(outdir, "figures.json")))
    assert [f["figure"] for f in listing["figures"]] == [MICRO_FIGURES[n] for n in (
        "memlat", "call", "fileread", "filecache", "contention", "timer")], listing
    for fig in listing["figures"]:
        name = fig["figure"]
        assert png_size(os.path.join(outdir, name + ".png")) == FIGURE_PX, name
        svg = open(os.path.join(outdir, name + ".svg")).read()
        assert "<svg" in svg[:2000], name
        tallies = [l for l in fig["caption"] if re.search(r": passed in (\d+) of \1 runs", l)]
        assert tallies, f"{name}: {fig['caption']}"
        assert tallies[0] in plot.stdout and "passed in" in svg, name
    captions = {f["figure"]: "\n".join(f["caption"]) for f in listing["figures"]}
    assert re.search(r"each sample missed the page cache and read in all N pages of the file.*: passed in 2 of 2 "
                     r"runs, those with cache=cold", captions["fileread_vs_file_size"]), captions
    assert "chase over N: no page fault (the buffer was pre-faulted): passed in 2 of 2 runs" in captions[
        "memlat_staircase"], captions
    assert "the vDSO served all" in captions["timer_histograms"], captions
    # the staircase marks this machine's cache sizes
    caches = [l for l in open("/sys/devices/system/cpu/cpu0/cache/index0/size")]
    assert f"L1d {caches[0].strip()}" in open(os.path.join(outdir, "memlat_staircase.svg")).read(), caches
