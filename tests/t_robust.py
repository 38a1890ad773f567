"""Robustness: signals to zctrace and to its workload, crashes, concurrent runs, bad input, output
that takes nothing, missing capabilities, the detach after the report, high event rates, a full
targets map.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from harness import (
    case, declare, TIMEOUT, ZCTRACE, alive, asan_build, assert_eq, assert_nothing_left, descendants, detach_children,
    group_members, proc_start, site_bytes, Skip, traced, watched_run, zctrace, zctrace_lines,
    zctrace_programs)


# ---- robustness: signals, crashes, concurrent runs, bad input, capabilities, lost figures ----

def make_robust_sigkill_test(args, least, name):
    """SIGKILL of zctrace, which then cleans up nothing itself: within 2 s no process of its target
    is alive, by pid (every process seen under zctrace, its guard too) and by process group (the
    target's, at least @least processes, found in /proc), and the run's BPF objects are released."""
    def t():
        left = {}

        def kill_zctrace(z, procs):
            procs.update(descendants(z.pid))
            groups = {p for p in procs if os.getpgid(p) == p}
            assert len(groups) == 1, f"not one target process group under zctrace: {procs}"
            assert len(group_members(groups)) >= least, f"the target's processes are not all running: {procs}"
            os.kill(z.pid, signal.SIGKILL)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 2 and (group_members(groups) or alive(procs)):
                time.sleep(0.05)
            left.update(group=group_members(groups), procs=alive(procs), after=time.monotonic() - t0)

        rc, out, err, held, procs = watched_run(args, kill_zctrace)
        assert rc == -signal.SIGKILL, rc
        assert left["group"] == [] and left["procs"] == [], \
            f"{left['after']:.1f} s after zctrace's SIGKILL, alive: {left['group']} in the target's group, " \
            f"{left['procs']} of those seen under zctrace"
        assert_nothing_left(held, procs)
    t.__name__ = f"robust_sigkill_to_zctrace_{name}"
    return t


def make_robust_signal_test(sig):
    """SIGINT or SIGTERM to zctrace mid-run: the workload is stopped, the ledger of the run so far
    still reconciles exactly, one line says why it stopped, nothing is left."""
    def t():
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            rc, out, err, held, procs = watched_run(
                ["--json", f.name, "tcp-onecopy", "--size", "16K", "--duration", "20"],
                lambda z, procs: z.send_signal(sig))
            led = json.load(open(f.name))
        name = signal.Signals(sig).name
        assert zctrace_lines(err) == [f"zctrace: stopped by signal {int(sig)} ({name}); the ledger covers "
                                      "the run until then"], err
        assert "copy ledger" in out, out[-500:]
        wl = led["workload"]
        assert wl["elapsed_s"] < 15, f"not stopped: elapsed {wl['elapsed_s']}"
        assert wl["bytes"] > 0 and wl["bytes_received"] == wl["bytes"], wl
        assert_eq("send_copy", site_bytes(led, "send_copy"), wl["bytes"])
        assert_eq("recv_copy", site_bytes(led, "recv_copy"), wl["bytes_received"])
        # the workload stopped cleanly on zctrace's SIGTERM: every check holds, exit 0
        assert rc == 0, (rc, [c for c in led["checks"] if not c["ok"]])
        assert_nothing_left(held, procs)
    t.__name__ = f"robust_{signal.Signals(sig).name.lower()}_to_zctrace"
    return t


@case()
def robust_workload_sigkill():
    """SIGKILL of the workload (its receiver in a child process): a one-line report, the partial
    ledger, exit 1; the orphaned receiver is killed with its process group, nothing is left."""
    leader = []

    def kill_workload(z, procs):
        kids = [int(k) for k in open(f"/proc/{z.pid}/task/{z.pid}/children").read().split()]
        # the workload leads a process group of its own; zctrace's guard stays in zctrace's
        workload = [k for k in kids if os.getpgid(k) == k]
        assert len(workload) == 1, (kids, workload)
        assert len(group_members({workload[0]})) >= 2, f"the receiver process is not running: {procs}"
        leader.append(workload[0])
        os.kill(workload[0], signal.SIGKILL)

    rc, out, err, held, procs = watched_run(["tcp-onecopy", "--peer", "process", "--size", "16K",
                                             "--duration", "20"], kill_workload)
    assert rc == 1, (rc, err)
    assert zctrace_lines(err) == ["zctrace: workload tcp-onecopy killed by signal 9 (SIGKILL); the ledger "
                                  "covers the run until then"], err
    assert "copy ledger" in out and "[FAIL] workload succeeded: exit status 137" in out, out[-800:]
    assert re.search(r"^  send_copy +tp_btf +\d+ +[1-9]\d*", out, re.M), "the partial ledger counted nothing"
    assert_nothing_left(held, procs)


def make_robust_command_end_test(how, line):
    """A command that crashes or exits non-zero, with a background child still running: exit 1, one
    line on how it ended, the ledger, and the background child killed with the group."""
    def t():
        with tempfile.NamedTemporaryFile(suffix=".pid", mode="r") as f:
            def bg_seen(procs):
                f.seek(0)
                pid = f.read().strip()
                return pid.isdigit() and int(pid) in procs
            rc, out, err, held, procs = watched_run(
                ["--", "sh", "-c", f"sleep 300 & echo $! > {f.name}; sleep 3; {how}"], after=1.5, until=bg_seen)
            f.seek(0)
            bg = int(f.read())
        assert rc == 1, (rc, err)
        assert zctrace_lines(err) == [line], err
        assert "copy ledger" in out and "[FAIL] workload succeeded" in out, out[-800:]
        assert bg in procs, f"background sleep {bg} not seen under zctrace: {procs}"
        assert_nothing_left(held, procs)
    t.__name__ = "robust_command_" + ("crashes" if "kill" in how else "exits_nonzero")
    return t


for sig in (signal.SIGINT, signal.SIGTERM):
    declare(make_robust_signal_test(sig))
declare(make_robust_sigkill_test(["tcp-onecopy", "--duration", "8"], 1, "workload"))
declare(make_robust_sigkill_test(["--", "sh", "-c", "sleep 30 & sleep 30"], 3, "command"))
declare(make_robust_command_end_test("kill -SEGV $$", "zctrace: command sh killed by signal 11 (SIGSEGV); "
                                     "the ledger covers the run until then"))
declare(make_robust_command_end_test("exit 3", "zctrace: command sh exited with status 3"))


@case()
def robust_concurrent_runs():
    """Three runs at once, each on its own workload: each ledger counts its own processes only, and
    every byte check holds in each."""
    files = [tempfile.NamedTemporaryFile(suffix=".json") for _ in range(3)]
    runs = [("tcp-onecopy", "--size", "16K", "--duration", "4"),
            ("tcp-twocopy", "--size", "4K", "--duration", "4"),
            ("file-readwrite", "--file-size", "64M", "--size", "64K")]
    zs = [subprocess.Popen([ZCTRACE, "run", "--no-hist", "--json", f.name, *r], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True) for f, r in zip(files, runs)]
    try:
        outs = [z.communicate(timeout=180) for z in zs]
        leds = [json.load(open(f.name)) for f in files]
    finally:
        for z in zs:
            if z.poll() is None:
                z.kill()
        for f in files:
            f.close()
    for z, (out, err), r, led in zip(zs, outs, runs, leds):
        assert z.returncode == 0, (r[0], z.returncode, [c for c in led["checks"] if not c["ok"]], err[-300:])
        # LeakSanitizer stops the world at exit from a clone of its own: one more process there
        assert_eq(f"{r[0]} processes", led["processes"], 2 if asan_build(r[0]) else 1)
        assert all(c["ok"] for c in led["checks"]), (r[0], [c for c in led["checks"] if not c["ok"]])
    one, two, rw = (l["workload"] for l in leds)
    assert_eq("onecopy send_copy", site_bytes(leds[0], "send_copy"), one["bytes"])
    assert_eq("onecopy recv_copy", site_bytes(leds[0], "recv_copy"), one["bytes_received"])
    assert_eq("onecopy user_copy", site_bytes(leds[0], "user_copy"), 0)
    assert_eq("onecopy file_read_copy", site_bytes(leds[0], "file_read_copy"), 0)
    assert_eq("twocopy send_copy", site_bytes(leds[1], "send_copy"), two["bytes"])
    assert_eq("twocopy user_copy", site_bytes(leds[1], "user_copy"), two["bytes"])
    assert_eq("twocopy recv_copy", site_bytes(leds[1], "recv_copy"), two["bytes_received"])
    assert_eq("file-readwrite file_read_copy", site_bytes(leds[2], "file_read_copy"), rw["bytes"])
    assert_eq("file-readwrite file_write_copy", site_bytes(leds[2], "file_write_copy"), rw["bytes"])
    for site in ("send_copy", "recv_copy"):
        assert_eq(f"file-readwrite {site}", site_bytes(leds[2], site), 0)


BAD_SIZES = ["12Q", "-1", "1e99", "", "18446744073709551616", "9223372036854775808", "16777216T",
             "99999999999G"]


def gone_pid():
    """A PID no process has: one that just exited."""
    p = subprocess.Popen(["true"])
    p.wait()
    assert proc_start(p.pid) is None
    return p.pid


@case()
def robust_bad_input():
    """Every bad input is one line on stderr naming the problem, exit 2, nothing on stdout, no crash."""
    d = tempfile.mkdtemp()
    try:
        cases = [(["run", "tcp-2copy"], "unknown workload 'tcp-2copy'"),
                 (["frobnicate"], "unknown command 'frobnicate'"),
                 (["run", "--"], "nothing to trace"),
                 (["run", "-p", str(gone_pid()), "-d", "1"], "no process with PID"),
                 (["run", "--json", "/nonexistent/x.json", "tcp-onecopy"], "cannot write the --json file /nonexistent/x.json"),
                 (["run", "--json", d, "tcp-onecopy"], f"cannot write the --json file {d}: Is a directory")]
        for size in BAD_SIZES:
            cases += [(["run", "tcp-onecopy", "--size", size], f"tcp-onecopy: invalid --size '{size}'"),
                      (["run", "tcp-zerocopy", "--bytes", size], f"tcp-zerocopy: invalid --bytes '{size}'"),
                      (["run", "file-readwrite", "--size", size], f"file-readwrite: invalid --size '{size}'"),
                      (["run", "file-copyrange", "--file-size", size], f"invalid --file-size '{size}'"),
                      (["run", "serve-sendfile", "--chunk", size], f"serve-sendfile: invalid --size '{size}'"),
                      (["run", "memlat", "--max-size", size], f"memlat: invalid --max-size '{size}'"),
                      (["sweep", "tcp-onecopy", "--sizes", size], f"invalid --sizes '{size}'")]
        for threads in ("0", "100000"):
            cases += [(["run", "tcp-twocopy", "--threads", threads], f"invalid --threads '{threads}'"),
                      (["run", "serve-readsend", "--threads", threads], f"invalid --threads '{threads}'"),
                      (["sweep", "tcp-onecopy", "--threads", threads], f"invalid --threads '{threads}'")]
        cases += [(["run", "file-readwrite", "--threads", "2"], "--threads is not an option"),
                  (["run", "tcp-onecopy", "--messages", "9223372036854775808"], "invalid --messages"),
                  (["run", "remote-fileread", "--size", "0"], "remote-fileread: invalid --size '0'")]
        for args, msg in cases:
            p = zctrace(*args, timeout=60)
            lines = [l for l in p.stderr.splitlines() if l.strip()]
            assert p.returncode == 2, f"{args}: exit {p.returncode}: {p.stderr[-300:]}"
            assert len(lines) == 1 and msg in lines[0], f"{args}: {p.stderr!r}"
            assert p.stdout == "", f"{args}: wrote {p.stdout[:200]!r}"
        assert os.listdir(d) == [], os.listdir(d)
        assert not os.path.exists("/nonexistent/x.json")
    finally:
        shutil.rmtree(d)


@case()
def robust_json_path_written_or_left_alone():
    """--json FILE is opened before the run: written with the ledger, or, when the run stops before
    one exists, removed if zctrace made it and untouched if it was there."""
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "new.json")
        p = zctrace("run", "--json", path, "-p", str(os.getpid()), "-d", "0.2", "--method", "tracepoint")
        assert p.returncode in (0, 1) and json.load(open(path))["target"], (p.returncode, p.stderr)
        # refused before anything starts (no way to follow processes): no file left
        env = dict(os.environ, ZCTRACE_REFUSE="tp_btf:sched_process_fork,raw_tp:sched_process_fork")
        path2 = os.path.join(d, "never.json")
        p = subprocess.run([ZCTRACE, "run", "--json", path2, "tcp-onecopy"], capture_output=True, text=True,
                           env=env, timeout=60)
        assert p.returncode == 1 and not os.path.exists(path2), (p.returncode, p.stderr, os.listdir(d))
        open(path2, "w").write("kept")
        p = subprocess.run([ZCTRACE, "run", "--json", path2, "tcp-onecopy"], capture_output=True, text=True,
                           env=env, timeout=60)
        assert p.returncode == 1 and open(path2).read() == "kept", (p.returncode, open(path2).read())
    finally:
        shutil.rmtree(d)
    # a file that takes no ledger: the kernel's own reason, one line, exit 1 after a run that held
    for path, why in (("/proc/version", "Input/output error"), ("/dev/full", "No space left on device")):
        p = zctrace("run", "--no-hist", "--json", path, "syscall")
        assert "verdict: the ledger matches the expectation" in p.stdout, (path, p.stdout[-500:])
        assert p.returncode == 1, (path, p.returncode, p.stderr)
        assert zctrace_lines(p.stderr) == [f"zctrace: cannot write {path}: {why}"], (path, p.stderr)


@case()
def robust_stdout_unwritable():
    """stdout that takes nothing (/dev/full): every command exits 1 with one line saying so, not 0."""
    cases = [(["run", "--no-hist", "syscall"], "zctrace"), (["run", "--json", "-", "syscall"], "zctrace"),
             (["list"], "zctrace"), (["run", "--help"], "zctrace"),
             (["sweep", "tcp-onecopy", "--messages", "100"], "zctrace sweep")]
    for args, prog in cases:
        with open("/dev/full", "w") as full:
            p = subprocess.run([ZCTRACE, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
        assert p.returncode == 1, (args, p.returncode, p.stderr)
        assert zctrace_lines(p.stderr) == [f"{prog}: cannot write stdout: No space left on device"], (args, p.stderr)


@case()
def robust_missing_capabilities():
    """Without the capabilities it needs, zctrace names the one missing, in one line, and stops."""
    if not shutil.which("setpriv"):
        raise Skip("setpriv (util-linux) not installed")
    drop_all = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]
    cases = [(drop_all, "CAP_BPF"),
             (["--inh-caps=-bpf,-sys_admin", "--bounding-set=-bpf,-sys_admin"], "CAP_BPF"),
             (["--inh-caps=-perfmon,-sys_admin", "--bounding-set=-perfmon,-sys_admin"], "CAP_PERFMON")]
    for drop, cap in cases:
        for args in (["run", "--no-hist", "tcp-onecopy", "--messages", "10"], ["probes"]):
            p = subprocess.run(["setpriv", *drop, "--", ZCTRACE, *args], capture_output=True, text=True,
                               timeout=60)
            lines = [l for l in p.stderr.splitlines() if l.strip()]
            assert p.returncode == 1, (drop, args, p.returncode, p.stderr)
            assert len(lines) == 1 and f"needs {cap}" in lines[0], (drop, args, p.stderr)
            assert p.stdout == "", (drop, args, p.stdout[:300])
    # CAP_SYS_ADMIN alone covers both (kernels before 5.8 know no other)
    p = subprocess.run(["setpriv", "--inh-caps=-bpf,-perfmon", "--bounding-set=-bpf,-perfmon", "--", ZCTRACE,
                        "run", "--no-hist", "tcp-onecopy", "--size", "4K", "--messages", "200"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, (p.returncode, p.stderr, p.stdout[-500:])


@case("stock", alone=True)
def detach_after_the_report_leaves_nothing():
    """zctrace returns once its report is out; a child of its own ('zctrace-detach') holds the last
    references of the links, whose detach waits for the kernel's grace periods, and exits once the
    kernel has let them go: within 10 s no program of the run and no such child is left (but for its
    exit status, where init reaps no orphans), and the child never held the run's stdout (the pipe
    reached its end when zctrace exited)."""
    before, earlier = zctrace_programs(), set(detach_children())
    p = zctrace("run", "--no-hist", "--passes", "traced", "syscall", "--iters", "1000", "--reps", "1")
    assert p.returncode == 0, (p.returncode, p.stderr[-400:])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = zctrace_programs() - before
        children = set(detach_children()) - earlier
        if not left and not children:
            return
        time.sleep(0.1)
    raise AssertionError(f"after 10 s: programs {sorted(left)}, detach children {children}")


@case(long=True)
def robust_one_byte_messages_60s():
    """The highest event rate for a minute: 1-byte messages, every send and receive an event. The
    in-kernel aggregation loses nothing: send_copy == recv_copy == the workload's counts, exactly,
    and no map update failed."""
    p, led = traced("tcp-onecopy", "--size", "1", "--duration", "60", extra=("--passes", "traced"))
    wl = led["workload"]
    assert p.returncode == 0, (p.returncode, [c for c in led["checks"] if not c["ok"]], p.stderr[-300:])
    assert wl["bytes"] > 1_000_000, f"only {wl['bytes']} messages"
    assert_eq("send_copy", site_bytes(led, "send_copy"), wl["bytes"])
    assert_eq("recv_copy", site_bytes(led, "recv_copy"), wl["bytes_received"])
    assert_eq("bytes received", wl["bytes_received"], wl["bytes"])
    assert_eq("send_copy count (one per 1-byte message)", led["sites"]["send_copy"]["count"], wl["messages"])
    assert set(led["map_updates_dropped"].values()) == {0}, led["map_updates_dropped"]
    assert any(c["name"] == "kernel maps kept up" and c["ok"] for c in led["checks"]), led["checks"]
    print(f"  {wl['messages']} messages in {wl['elapsed_s']:.1f} s, {led['syscalls_total']} syscalls, "
          f"{led['sched']['switches']} switches, nothing dropped", flush=True)


@case(long=True)
def robust_full_map_is_reported():
    """The drop counters are real: a command forking more processes than the targets map holds
    (8192) loses the ones past it, and the ledger says so and fails."""
    n = 8400
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--json", f.name, "--", "sh", "-c",
                    f"i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done", timeout=600)
        led = json.load(open(f.name))
    dropped = led["map_updates_dropped"]
    assert p.returncode == 1, p.returncode
    assert_eq("processes not followed", dropped["targets"], n + 1 - 8192)  # the command itself is one
    check = next(c for c in led["checks"] if c["name"] == "kernel maps kept up")
    assert not check["ok"] and f"targets {dropped['targets']}" in check["detail"], check
    assert led["processes"] == 8192, led["processes"]
