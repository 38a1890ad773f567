#!/usr/bin/env python3
"""zctrace's test suite: unit tests, then end-to-end runs that really load BPF and trace workloads.

Every end-to-end test asserts kernel figures against independent ones (the workload's own byte
counts, the traffic a helper process generated), exactly. Ends with 'N passed, N failed, N skipped'.
"""

import csv
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from harness import (
    LIST_PROGS, PERF_DERIVED, ROOT, TIMEOUT, UNIT_TESTS, WORKLOADS, ZCTRACE, alive, asan_build, assert_eq,
    assert_nothing_left, bpf_fds_of, descendants, detach_children, group_members, has_hw_pmu, proc_start,
    read_csv, refused, results, scratch, site_bytes, Skip, sweep, test, traced, traced_cmd, traced_once,
    unskipped, wait_bpf_released, watched_run, zctrace, zctrace_lines, zctrace_named, zctrace_programs,
    zombie)
from checks import (
    COPY_SITES, EXPECT, FILE_SITES, FILE_SIZE, KERNEL, MESSAGES, NET_SITES, PIPE_EXPECT, PIPE_MESSAGES,
    PIPE_SITES, SIZES, TOP_PROGRAM, best_method, check_file_ledger, check_pipe_ends, check_pipe_ledger,
    check_remote_ends, check_remote_udp_ends, check_sides, check_tcp_ledger, check_veth, deferred_want,
    kernel_at_least, netns_holders, our_net_objects, pipe_paths_exact, probes_by_method, remote_ends_run,
    unskipped_pair)


# ---- unit tests ----

def unit_tests():
    p = subprocess.run([os.path.join(UNIT_TESTS, "test_units")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


# ---- the four TCP workloads: exact ledgers ----

def make_tcp_test(workload, size, threads):
    def t():
        check_tcp_ledger(workload, size, threads)
    t.__name__ = f"ledger_{workload}_{size}_{threads}thr"
    return t


# ---- schema, perf, probes ----

def json_schema():
    p, led = traced("tcp-onecopy", "--size", "4K", "--messages", "500")
    assert p.returncode == 0, p.stderr
    for key in ("workload", "sites", "sched", "perf", "probes", "checks", "syscalls", "page_faults"):
        assert key in led, f"missing {key}"
    for site in ("send_copy", "zc_pin", "splice_ref", "deferred_copy", "recv_copy", "user_copy"):
        s = led["sites"][site]
        assert set(("count", "bytes", "hist")) <= set(s), f"{site}: {s.keys()}"
        assert sum(b["count"] for b in s["hist"]) == s["count"], f"{site} histogram != count"
    assert set(("switches", "voluntary", "involuntary")) <= set(led["sched"])
    assert led["sched"]["switches"] == led["sched"]["voluntary"] + led["sched"]["involuntary"]
    for name in ("task-clock", "context-switches", "cpu-migrations", "page-faults"):
        assert isinstance(led["perf"][name], (int, float)), f"perf {name}: {led['perf'][name]}"
    assert led["perf"]["task-clock"] > 0
    # hardware counters: a number where the machine has them, null (never 0) where not
    for name in ("cycles", "instructions", "cache-misses", "branch-misses"):
        v = led["perf"][name]
        assert v is None or v > 0, f"perf {name} = {v!r}: unsupported must be null"
    # every sendmsg the workload made entered the kernel once
    assert led["syscalls"]["sendmsg"] >= 500, led["syscalls"]


def prog_stats_reported():
    """--prog-stats: every attached program's kernel statistics; sys_enter ran for each target syscall."""
    p, led = traced("syscall", "--call", "syscall", "--reps", "20", extra=("--prog-stats",))
    assert p.returncode == 0, p.stderr
    ps = led["prog_stats"]
    assert "programs" in ps, f"no statistics: {ps}"
    progs = {pr["name"]: pr for pr in ps["programs"]}
    enter = progs.get("sys_enter_btf") or progs.get("sys_enter_raw")
    assert enter, f"sys_enter program missing: {sorted(progs)}"
    # it runs for every syscall on the machine: at least the target's, counted by the ledger
    assert enter["events"] >= led["syscalls_total"], (enter["events"], led["syscalls_total"])
    assert enter["run_time_ns"] > 0 and enter["ns_per_event"] > 0, enter
    assert abs(enter["events_per_s"] * ps["duration_s"] - enter["events"]) <= 1 + enter["events"] * 1e-6, enter
    assert ps["total"]["events"] == sum(pr["events"] for pr in ps["programs"]), ps["total"]
    assert ps["total"]["run_time_ns"] == sum(pr["run_time_ns"] for pr in ps["programs"]), ps["total"]
    assert all(pr["attach"] for pr in ps["programs"]), ps["programs"]
    assert "BPF program costs over" in p.stdout and "sys_enter" in p.stdout, p.stdout[-800:]
    # off unless asked: the statistics cost two clock reads per event
    p, led = traced("syscall", "--call", "time", "--reps", "5")
    assert p.returncode == 0 and led["prog_stats"] is None, led.get("prog_stats")


HW_COUNTERS = ("cycles", "instructions", "cache-misses", "branch-misses", "L1-dcache-load-misses", "LLC-loads",
               "LLC-load-misses")


def perf_table(out):
    """The text report's counter rows: name -> the rest of its line."""
    block = out[out.index("\nperf counters ("):]
    block = block[:block.index("\nchecks\n")]
    return {m.group(1): m.group(2) for m in re.finditer(r"^  (\S+(?: \[stand-in: [\w-]+\])?) +(.*)$", block, re.M)}


def hw_counters_reported_honestly():
    """Every hardware counter and every figure derived from one is a number where the machine has a
    PMU, "not supported" (never 0) where it has none; the task-clock fallback is labelled as such."""
    p, led = traced("tcp-onecopy", "--size", "4K", "--messages", "300")
    assert p.returncode == 0, p.stderr
    text = zctrace("run", "--no-hist", "--full", "tcp-onecopy", "--size", "4K", "--messages", "300")
    assert text.returncode == 0, text.stderr
    rows, ev = perf_table(text.stdout), led["counters"]["events"]
    # the default report: the counters counted in a line, those the machine lacks named in another
    brief = zctrace("run", "--no-hist", "tcp-onecopy", "--size", "4K", "--messages", "300")
    assert brief.returncode == 0 and "\nperf counters (" not in brief.stdout, brief.stdout[-1500:]
    assert re.search(r"^perf \(whole run\): task-clock [\d.]+ ms, context-switches \d+", brief.stdout, re.M), \
        brief.stdout[-1500:]
    if not has_hw_pmu():
        assert re.search(r"^  not supported here: " + ", ".join(HW_COUNTERS) + r" \(no hardware counter for it here",
                         brief.stdout, re.M), brief.stdout[-1500:]
    for name in HW_COUNTERS:
        assert name in rows, f"{name} not in the counter table: {sorted(rows)}"
        assert not re.match(r"0\b", rows[name]), f"{name}: {rows[name]}"
        if has_hw_pmu():
            continue
        assert rows[name].startswith("not supported (no hardware counter for it here"), f"{name}: {rows[name]}"
        assert ev[name]["supported"] is False and ev[name]["whole"] is None and ev[name]["why"], ev[name]
        assert led["perf"][name] is None, led["perf"][name]
    if not has_hw_pmu():
        for key in PERF_DERIVED[:-1]:
            assert led["counters"]["derived"]["whole"][key] is None, (key, led["counters"]["derived"])
        assert led["counters"]["cycles_fallback"] == "task_clock_ns_per_byte", led["counters"]
        assert rows["cycles/byte"].startswith("not supported (cycles: no hardware counter"), rows["cycles/byte"]
        assert "(fallback)" in text.stdout and "not cycles" in text.stdout, text.stdout[-1500:]
    fallback = led["counters"]["derived"]["whole"]["task_clock_ns_per_byte"]
    want = led["perf"]["task-clock"] / led["workload"]["bytes"]
    assert abs(fallback - want) <= want * 1e-9, (fallback, want)
    # one side per process only where the sides are processes
    assert led["counters"]["roles"] == "whole" and "threads of one process" in led["counters"]["roles_why"], \
        led["counters"]
    assert "roles: sender and receiver are threads of one process" in text.stdout, text.stdout[-1500:]


def perf_roles_by_process():
    """--peer process: the workload's own process (the sender) and the other one (the receiver) are
    counted apart; they add up to the whole, each did work, and each role's ns/byte is its own."""
    p, led = traced("tcp-onecopy", "--size", "16K", "--messages", "2000", "--peer", "process")
    assert p.returncode == 0, p.stderr
    c = led["counters"]
    assert c["roles"] == "process" and c["roles_why"] is None, c
    for name in ("task-clock", "context-switches", "page-faults"):
        e = c["events"][name]
        whole, snd, rcv = e["whole"]["value"], e["sender"]["value"], e["receiver"]["value"]
        assert snd > 0 and rcv > 0, (name, e)
        assert abs(snd + rcv - whole) <= 1e-6 * whole, (name, snd, rcv, whole)
    d, payload = c["derived"], led["workload"]["bytes"]
    for role in ("whole", "sender", "receiver"):
        want = c["events"]["task-clock"][role]["value"] / payload
        assert abs(d[role]["task_clock_ns_per_byte"] - want) <= want * 1e-9, (role, d[role])
    # the hardware figures stay empty per role too where the machine has no PMU
    if not has_hw_pmu():
        assert all(d[r]["cycles_per_byte"] is None for r in ("whole", "sender", "receiver")), d


def perf_counter_paths_simulated():
    """The hardware counters' code paths on a machine without them: software events stand in
    (ZCTRACE_PERF_STANDIN), one is multiplexed (ZCTRACE_PERF_MULTIPLEX reads it as if on a PMU a
    quarter of the time, which scaling must undo), one refused (ZCTRACE_PERF_REFUSE)."""
    env = dict(os.environ, ZCTRACE_PERF_STANDIN="cycles=task-clock,instructions=task-clock,LLC-loads=page-faults,"
               "LLC-load-misses=page-faults", ZCTRACE_PERF_MULTIPLEX="cycles=0.25",
               ZCTRACE_PERF_REFUSE="L1-dcache-load-misses")
    p, led = traced("tcp-onecopy", "--size", "16K", "--messages", "2000", "--peer", "process", env=env)
    assert p.returncode == 0, p.stderr
    ev, payload = led["counters"]["events"], led["workload"]["bytes"]
    cyc, ins, clock = ev["cycles"], ev["instructions"], ev["task-clock"]
    assert cyc["standin"] == "task-clock" and cyc["simulated_running"] == 0.25, cyc
    for role in ("whole", "sender", "receiver"):
        # read as a quarter of its count over a quarter of its time: scaled back to the real count
        assert cyc[role]["running_fraction"] == 0.25, (role, cyc)
        assert ins[role]["running_fraction"] == 1, (role, ins)
        assert abs(cyc[role]["value"] / ins[role]["value"] - 1) < 0.02, (role, cyc[role], ins[role])
        assert abs(ins[role]["value"] / clock[role]["value"] - 1) < 0.02, (role, ins[role], clock[role])
    d = led["counters"]["derived"]
    assert_eq("cycles/byte from the stand-in", d["whole"]["cycles_per_byte"], cyc["whole"]["value"] / payload)
    assert abs(d["sender"]["ipc"] - ins["sender"]["value"] / cyc["sender"]["value"]) < 1e-12, d["sender"]
    assert_eq("LLC miss rate (the same event twice)", d["whole"]["llc_miss_rate"], 1.0)
    assert ev["L1-dcache-load-misses"]["supported"] is False, ev["L1-dcache-load-misses"]
    assert ev["L1-dcache-load-misses"]["why"] == "refused by ZCTRACE_PERF_REFUSE", ev["L1-dcache-load-misses"]
    assert d["whole"]["l1d_misses_per_kib"] is None, d["whole"]
    assert led["counters"]["cycles_fallback"] is None, led["counters"]
    text = subprocess.run([ZCTRACE, "run", "--no-hist", "--full", "tcp-onecopy", "--size", "16K", "--messages", "500"],
                          capture_output=True, text=True, env=env, timeout=TIMEOUT)
    rows = perf_table(text.stdout)
    assert re.search(r"multiplexed: on a PMU 25\.0% of its enabled time, scaled x4\.00 \(simulated",
                     rows["cycles [stand-in: task-clock]"]), rows
    assert rows["L1-dcache-load-misses"] == "not supported (refused by ZCTRACE_PERF_REFUSE)", rows
    assert "(fallback)" not in text.stdout, "the fallback label with a cycle count"
    # the sweep carries the scaling and the derived figures
    out = os.path.join(scratch, "simulated.csv")
    sw = subprocess.run([ZCTRACE, "sweep", "tcp-onecopy", "--sizes", "16K", "--messages", "500", "-o", out,
                         "--", "--peer", "process"], capture_output=True, text=True, env=env, timeout=300)
    assert sw.returncode == 0, sw.stderr[-800:]
    r = read_csv(out)[1][0]
    assert r["perf_multiplexed"] == "cycles=0.25" and r["perf_roles"] == "process", r
    assert float(r["cycles_per_byte"]) > 0 and float(r["sender_ipc"]) > 0 and r["l1d_misses_per_kib"] == "", r
    assert abs(float(r["sender_cycles_per_byte"]) + float(r["receiver_cycles_per_byte"])
               - float(r["cycles_per_byte"])) < 1e-6 * float(r["cycles_per_byte"]), r


def probes_report():
    p = zctrace("probes")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for site in ("send_copy", "zc_pin", "splice_ref", "deferred_copy", "recv_copy", "user_copy",
                 "sched", "syscalls", "page_faults", "targets"):
        assert re.search(rf"^{site}\s+(fentry|kprobe|tp_btf|raw_tp|usdt)\s", out, re.M), f"{site}:\n{out}"
    # a site that did not get the best method says why the better ones were refused
    for m in re.finditer(r"^(send_copy|recv_copy)\s+(\w+)", out, re.M):
        if m.group(2) != "fentry":
            assert "refused fentry:" in out, out
    # each method's reason once a site, though several of its candidates use that method
    for block in re.split(r"^(?=\S)", out, flags=re.M):
        refusals = re.findall(r"^\s+refused .*$", block, re.M)
        assert len(refusals) == len(set(refusals)), block
    p = zctrace("probes", "--method=tracepoint")
    # the send sites' tracepoint is from 2025: a kernel without it says so
    assert p.returncode == 0 and (re.search(r"^send_copy\s+tp_btf", p.stdout, re.M) or re.search(
        r"^send_copy\s+none.*\n(.*\n)*?.*refused tp_btf: tp_btf:tcp_sendmsg_locked: tracepoint tcp_sendmsg_locked "
        r"not in this kernel", p.stdout, re.M)), p.stdout


def fentry_path():
    method, why = best_method("recv_copy")
    if method != "fentry":
        raise Skip(f"fentry refused on this kernel: {why}")
    for w in ("tcp-twocopy", "tcp-zerocopy", "tcp-sendfile"):
        check_tcp_ledger(w, "64K", 1)


def kprobe_path():
    p = zctrace("probes", "--method=kprobe")
    m = re.search(r"^recv_copy\s+(\w+)", p.stdout, re.M)
    if not m or m.group(1) != "kprobe":
        why = re.search(r"refused kprobe: (.*)", p.stdout)
        raise Skip(f"kprobes unavailable: {why.group(1) if why else p.stdout[-200:]}")
    for w in ("tcp-twocopy", "tcp-onecopy"):
        p, led = traced(w, "--size", "64K", "--messages", "200", extra=("--method", "kprobe"))
        assert p.returncode == 0, p.stdout[-800:]


# ---- every method, site by site: what the kernel offers runs exactly, what it lacks says why ----

# io_uring's zerocopy send (IORING_OP_SEND_ZC) came with 6.0
SEND_ZC = kernel_at_least(6, 0)

# the attach points whose absence makes a site "not supported", by the method that needs them
LACKS = re.compile(r"not in this kernel|not in kernel BTF|not in /proc/kallsyms")


def make_method_matrix_test(method):
    want_method = {"fentry": "fentry", "kprobe": "kprobe", "tracepoint": "tp_btf"}[method]

    def t():
        chosen, out = probes_by_method(method)
        if method != "tracepoint" and chosen.get("recv_copy") != want_method:
            if not KERNEL:  # this machine: tested under QEMU by make test-kernels instead
                why = re.search(rf"refused {want_method}: (.*)", out)
                raise Skip(f"{method} refused here ({why.group(1) if why else '?'}); run by make test-kernels")
            raise AssertionError(f"{method} not used on {KERNEL}:\n{out}")
        for site in COPY_SITES:
            if chosen[site] == "none":
                # a kernel that lacks the site's attach points says so, by name
                block = re.search(rf"^{site}\s+none.*?(?=^\w)", out, re.M | re.S).group(0)
                assert LACKS.search(block), f"{site} not supported without a missing attach point:\n{block}"
            else:
                assert chosen[site] == want_method, f"{site}: {chosen[site]} under --method {method}"
        for w in EXPECT:
            if w == "uring-sendzc" and not SEND_ZC:
                continue
            p, led = traced(w, "--size", "64K", "--messages", "100", extra=("--method", method))
            sent = led["workload"]["bytes"]
            assert_eq(f"{w} bytes sent", sent, 100 * 65536)
            checks = {c["name"]: c for c in led["checks"]}
            wants = dict(EXPECT[w], recv_copy="sent")
            for site, want in wants.items():
                if site == "user_copy":
                    continue
                if chosen[site] == "none":
                    assert led["sites"][site] is None, f"{w} {site}: unmeasured site shown as figures"
                    c = [c for n, c in checks.items() if n.startswith(site + " bytes")]
                    assert c and not c[0]["ok"] and "not measured" in c[0]["detail"], (w, site, c)
                    assert p.returncode == 1, f"{w}: a site not measured must fail the run"
                    continue
                want = sent if want == "sent" else want
                if site == "deferred_copy":
                    want = deferred_want(led, want)
                assert_eq(f"{w} {site} ({chosen[site]})", site_bytes(led, site), want)
                assert led["probes"][site] == want_method, (site, led["probes"][site])
            if all(chosen[s] != "none" for s in wants if s != "user_copy"):
                assert p.returncode == 0, f"{w}: exit {p.returncode}: {p.stdout[-1200:]}"
        # the file sites: every file copy exact through this method's probes, where the kernel has
        # them (5.10: no filemap_read, and no BTF for ext4's tracepoints, a module's)
        by_method = []
        for site in FILE_SITES:
            if chosen[site] == want_method:
                by_method.append(site)
                continue
            block = re.search(rf"^{site}\s+\w+.*?(?=^\w)", out, re.M | re.S).group(0)
            assert re.search(rf"refused {want_method}: .*({LACKS.pattern})", block), \
                f"{site}: {chosen[site]} under --method {method}:\n{out}"
        for w, cache in (("file-readwrite", "cold"), ("file-sendfile", "warm"), ("file-splice", "warm"),
                         ("file-copyrange", "warm"), ("serve-readsend", "warm")):
            led = check_file_ledger(w, cache, "64K", extra=("--method", method),
                                    unmeasured=[s for s in COPY_SITES + FILE_SITES if chosen[s] == "none"])
            assert all(led["probes"][s] == want_method for s in by_method), led["probes"]
        method_matrix_pipes(method, want_method, chosen, out)
    t.__name__ = f"method_matrix_{method}"
    return t


def method_matrix_pipes(method, want_method, chosen, out):
    """The pipe sites under --method: the copies through this method's probes (a kernel without
    their functions says so, and falls back to the syscall's return), pipe_ref by the syscall's
    return on every kernel; pipe-copy (both peers) and pipe-vmsplice exact."""
    for site in PIPE_SITES:
        want = "tp_btf" if site == "pipe_ref" else want_method
        if chosen[site] != want:
            block = re.search(rf"^{site}\s+\w+.*?(?=^\w)", out, re.M | re.S).group(0)
            assert chosen[site] == "tp_btf" and LACKS.search(block), f"{site}: {chosen[site]} under --method {method}:\n{block}"
    extra, unmeasured = ("--method", method), [s for s in COPY_SITES + FILE_SITES if chosen[s] == "none"]
    for threads, args in ((1, ()), (2, ("--peer", "process"))):
        led = check_pipe_ledger("pipe-copy", "64K", threads, args, extra=extra, unmeasured=unmeasured)
        assert all(led["probes"][s] == chosen[s] for s in PIPE_SITES), led["probes"]
        if args:
            check_pipe_ends(led)
    led = check_pipe_ledger("pipe-vmsplice", "64K", 1, extra=extra, unmeasured=unmeasured)
    assert all(led["probes"][s] == chosen[s] for s in PIPE_SITES), led["probes"]
    led = pipe_paths_exact(extra)
    assert all(led["probes"][s] == chosen[s] for s in PIPE_SITES), led["probes"]


def kprobe_flavours_pass_verifier():
    """Where kprobes cannot attach, their programs must still load: the verifier accepts every
    kprobe/kretprobe flavour of the object on this kernel."""
    p = subprocess.run([os.path.join(UNIT_TESTS, "load_flavours")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr[-1500:]
    assert re.search(r"kprobe flavours: \d+ programs, load ok", p.stdout), p.stdout


def tracepoint_forced_matches_default():
    """--method tracepoint must give the same exact ledger as the default choice."""
    p, led = traced("tcp-twocopy", "--size", "16K", "--messages", "500", extra=("--method", "tracepoint"))
    assert p.returncode == 0, p.stdout[-800:]
    assert set(led["probes"][s] for s in ("send_copy", "recv_copy")) == {"tp_btf"}, led["probes"]
    assert_eq("send_copy", site_bytes(led, "send_copy"), led["workload"]["bytes"])


# ---- target filtering ----

def unrelated_traffic_not_counted():
    """An untraced busy process moving loopback traffic next to the traced run adds nothing."""
    busy = subprocess.Popen([os.path.join(WORKLOADS, "tcp-onecopy"), "--size", "64K", "--duration", "20"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        assert busy.poll() is None, "busy process died"
        p, led = traced("tcp-twocopy", "--size", "16K", "--messages", "1000", extra=("--no-phase",))
        assert p.returncode == 0, p.stdout[-800:]
        sent = led["workload"]["bytes"]
        assert_eq("send_copy", site_bytes(led, "send_copy"), sent)
        assert_eq("recv_copy", site_bytes(led, "recv_copy"), sent)
        assert busy.poll() is None, "busy process finished before the traced run"
        # the traced command alone: a sleeping shell sees none of the busy process's bytes
        p, led = traced_cmd(["sleep", "0.5"])
        assert p.returncode == 0, p.stdout[-500:]
        for site in ("send_copy", "recv_copy", "zc_pin", "splice_ref", "deferred_copy"):
            assert_eq(site, site_bytes(led, site), 0)
    finally:
        busy.send_signal(signal.SIGTERM)
        busy.wait(timeout=30)


# A helper program in Python: forked children, one after another, each send their N bytes over
# loopback TCP to the parent (argv: N[,N...] CHUNK [one-cpu]); it prints each child's pid and N.
# With one-cpu, all of them run on one CPU.
FORK_SENDER = r"""
import os, socket, sys
counts, chunk = [int(a) for a in sys.argv[1].split(",")], int(sys.argv[2])
if sys.argv[3:] == ["one-cpu"]:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(len(counts))
port = ls.getsockname()[1]
pids = []
for n in counts:
    pid = os.fork()
    if pid == 0:
        s = socket.create_connection(("127.0.0.1", port))
        buf, left = b"x" * chunk, n
        while left:
            left -= s.send(buf[:min(chunk, left)])
        s.close(); os._exit(0)
    pids.append(pid)
    c, _ = ls.accept(); got = 0
    while True:
        d = c.recv(1 << 16)
        if not d: break
        got += len(d)
    os.waitpid(pid, 0)
    assert got == n, (got, n)
print("senders", " ".join(f"{p}:{n}" for p, n in zip(pids, counts)), flush=True)
"""


def command_and_children_traced():
    n = 3_000_000
    p, led = traced_cmd([sys.executable, "-c", FORK_SENDER, str(n), "10000"])
    assert p.returncode == 0, p.stdout[-500:] + p.stderr[-500:]
    assert led["processes"] >= 2, f"forked child not followed: {led['processes']} processes"
    assert led["tasks_forked"] >= 1 and led["tasks_exited"] >= 2, (led["tasks_forked"], led["tasks_exited"])
    assert_eq("send_copy (child)", site_bytes(led, "send_copy"), n)
    assert_eq("recv_copy (parent)", site_bytes(led, "recv_copy"), n)
    assert led["sites"]["user_copy"]["bytes"] == 0


# A helper program in Python: N sleeps of MS milliseconds each; it prints what they took, measured.
SLEEPER = r"""
import sys, time
n, ms = int(sys.argv[1]), int(sys.argv[2])
total = 0
for _ in range(n):
    a = time.monotonic_ns(); time.sleep(ms / 1000); total += time.monotonic_ns() - a
print("slept_ns", total, flush=True)
"""


def offcpu_time_covers_sleeps():
    """A traced program's N sleeps of 20 ms are off-CPU time: at least N x 20 ms in all, each in the
    histogram's 16-32 ms slot or above, and no more than the run's wall time, for the tp_btf
    program and for the raw_tp one (the clock read through probe reads there)."""
    n, ms = 25, 20
    for points, method in (([], "tp_btf"), (["tp_btf:sched_switch"], "raw_tp")):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            start = time.monotonic_ns()
            p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "--", sys.executable, "-c",
                                SLEEPER, str(n), str(ms)], capture_output=True, text=True,
                               env=refused(points), timeout=TIMEOUT)
            wall = time.monotonic_ns() - start
            try:
                led = json.load(open(f.name))
            except ValueError:
                raise AssertionError(f"{method}: no JSON ledger; exit {p.returncode}: {p.stderr[-300:]}")
        assert p.returncode == 0 and led["probes"]["sched"] == method, (p.returncode, led["probes"], p.stderr[-300:])
        slept = int(re.search(r"^slept_ns (\d+)$", p.stdout, re.M).group(1))
        sc = led["sched"]
        assert slept >= n * ms * 1_000_000, slept
        # one sleep may go unseen: a loaded run once counted 483.5 ms for 25 sleeps of 20 ms, with every
        # check held (no storage refused); the cause is not known, and 12 runs beside 3 busy loops kept all 25
        assert (n - 1) * ms * 1_000_000 <= sc["offcpu_ns"] <= wall, (method, sc["offcpu_ns"], n * ms * 1_000_000, wall)
        hist = sc["offcpu_us_hist"]
        long_ones = sum(b["count"] for b in hist if b["lo"] >= 16384)
        assert long_ones >= n - 1, (method, hist)
        assert sum(b["count"] for b in hist) <= sc["switches"], (method, hist, sc)


# A TCP sender over loopback: N sends of SIZE bytes with MSG_ZEROCOPY on a socket without
# SO_ZEROCOPY (the kernel declines and copies), then N plain ones; a thread drains the receiver.
# Prints the bytes each kind of send returned.
DECLINED_ZC_SENDER = r"""
import socket, sys, threading
n, size = int(sys.argv[1]), int(sys.argv[2])
MSG_ZEROCOPY = 0x4000000
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
s = socket.create_connection(ls.getsockname()); c, _ = ls.accept()
def drain():
    while c.recv(1 << 20):
        pass
t = threading.Thread(target=drain); t.start()
buf, sent = b"d" * size, {"zerocopy": 0, "plain": 0}
for kind, flags in (("zerocopy", MSG_ZEROCOPY), ("plain", 0)):
    for _ in range(n):
        sent[kind] += s.send(buf, flags)
s.close(); t.join()
print("sent", sent["zerocopy"], sent["plain"], flush=True)
"""


def tcp_send_copies_one_per_call():
    """A TCP send that copies is one copy of what it returned, however many chunks its loop took,
    on the tracepoint path as fexit counts it: 64 KiB sends, plain and MSG_ZEROCOPY on a socket
    without SO_ZEROCOPY (the kernel copies those too). send_copy is exactly their bytes, its copies
    exactly the send calls of the boundary account, and nothing is pinned."""
    n, size = 300, 65536
    p, led = traced_cmd([sys.executable, "-c", DECLINED_ZC_SENDER, str(n), str(size)])
    assert p.returncode == 0, p.stdout[-500:] + p.stderr[-500:]
    zc, plain = map(int, re.search(r"^sent (\d+) (\d+)$", p.stdout, re.M).groups())
    assert_eq("send_copy", site_bytes(led, "send_copy"), zc + plain)
    assert_eq("zc_pin", site_bytes(led, "zc_pin"), 0)
    calls = sum(r["calls"] for r in led["boundary"]["calls"] if r["file"] == "TCP socket" and r["call"] == "sendto")
    assert_eq("send_copy copies == sendto calls on the TCP socket", led["sites"]["send_copy"]["count"], calls)
    assert calls >= 2 * n, calls


def processes_sharing_a_cpu_counted_apart():
    """A site's per-CPU slot belongs to the first process that counts there: the others on that CPU
    count in the shared map, and each process still gets exactly its own bytes."""
    counts = [1_000_003, 700_001, 400_009, 250_007]
    p, led = traced_cmd([sys.executable, "-c", FORK_SENDER, ",".join(map(str, counts)), "4096", "one-cpu"])
    assert p.returncode == 0, p.stdout[-500:] + p.stderr[-500:]
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("senders "))
    sent = dict((int(a), int(b)) for a, b in (w.split(":") for w in line.split()[1:]))
    procs = {q["pid"]: q for q in led["by_process"]}
    for pid, n in sent.items():
        assert pid in procs, f"child {pid} has no row: {sorted(procs)}"
        assert_eq(f"send_copy of child {pid}", procs[pid]["sites"]["send_copy"]["bytes"], n)
    assert_eq("send_copy", site_bytes(led, "send_copy"), sum(counts))
    assert_eq("recv_copy", site_bytes(led, "recv_copy"), sum(counts))


PID_SENDER = r"""
import socket, sys, time
n = int(sys.argv[1])
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
a = socket.create_connection(ls.getsockname()); b, _ = ls.accept()
print("ready", flush=True)
sys.stdin.readline()
a.sendall(b"y" * n); a.close()
got = 0
while True:
    d = b.recv(1 << 16)
    if not d: break
    got += len(d)
print(got, flush=True)
time.sleep(30)
"""


def attach_to_running_pid():
    n = 2_000_000
    proc = subprocess.Popen([sys.executable, "-c", PID_SENDER, str(n)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            z = subprocess.Popen([ZCTRACE, "run", "--no-hist", "--json", f.name, "-p", str(proc.pid),
                                  "-d", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # the traffic starts once the tracer says it is attached (seconds under QEMU)
            line = z.stderr.readline()
            assert line.startswith(f"zctrace: tracing pid {proc.pid}"), line
            proc.stdin.write("go\n")
            proc.stdin.flush()
            assert int(proc.stdout.readline()) == n
            out, err = z.communicate(timeout=60)
            assert z.returncode == 0, out[-500:] + line + err
            led = json.load(open(f.name))
        assert_eq("send_copy", site_bytes(led, "send_copy"), n)
        assert_eq("recv_copy", site_bytes(led, "recv_copy"), n)
    finally:
        proc.kill()
        proc.wait()


# ---- control: signals, exit status, usage errors, leaks ----

def sigint_stops_cleanly():
    """Only this run's programs and processes are looked at (by zctrace's descriptors and process
    tree, helpers in the robustness block): other runs may go on at the same time."""
    t0 = []
    rc, out, err, held, procs = watched_run(["tcp-onecopy", "--size", "16K", "--duration", "60"],
                                            lambda z, procs: (t0.append(time.monotonic()), z.send_signal(signal.SIGINT)))
    assert time.monotonic() - t0[0] < 15, "took too long to stop"
    assert "copy ledger" in out, out[-500:]
    assert "stopped by signal" in err, err
    assert_nothing_left(held, procs)


def live_view_on_a_terminal():
    """-i under a pseudo-terminal: redraws in place every interval; SIGINT ends it with exit 0 and
    the final ledger."""
    import pty
    import select
    master, slave = pty.openpty()
    z = subprocess.Popen([ZCTRACE, "run", "-i", "0.5", "tcp-onecopy", "--size", "4K", "--duration", "30"],
                         stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""

    def drain(seconds):
        nonlocal out
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the other side closed
                    return
                if not data:
                    return
                out += data
    try:
        drain(1.0)
        t0 = time.monotonic()
        drain(2.6)
        draws_in_window = out.count(b"zctrace live:")
        z.send_signal(signal.SIGINT)
        rc = z.wait(timeout=30)
        drain(1.0)
    finally:
        if z.poll() is None:
            z.kill()
        os.close(master)
    text = out.decode(errors="replace")
    draws = text.count("zctrace live:")
    # 3.6 s of a 0.5 s view: at least 5 drawings, each after the first drawn over the one before
    assert draws >= 5, f"{draws} drawings"
    assert draws_in_window >= 3, draws_in_window
    assert text.count("\x1b[J") == draws - 1, (text.count("\x1b[J"), draws)
    assert "--- " not in text, "timestamped blocks on a terminal"
    assert rc == 0, f"exit {rc}"
    assert "verdict: the ledger matches the expectation" in text, text[-800:]


def live_view_to_a_pipe():
    """-i with stdout not a terminal: one timestamped block per interval, no escape sequences."""
    p = zctrace("run", "-i", "0.3", "--no-hist", "tcp-onecopy", "--size", "4K", "--duration", "1.6")
    assert p.returncode == 0, p.stdout[-800:]
    blocks = re.findall(r"^--- \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d ---$", p.stdout, re.M)
    assert len(blocks) >= 4, f"{len(blocks)} blocks"
    assert p.stdout.count("zctrace live:") == len(blocks)
    assert "\x1b[" not in p.stdout, "escape sequences in a pipe"
    # the live rates add up to the final ledger: the last block's total never exceeds it
    totals = re.findall(r"^  send_copy +\S+ \S+ +\S+ \S+ +(\d+) +(\d+)$", p.stdout, re.M)
    assert totals, p.stdout[:1500]
    final = int(re.search(r"^  send_copy +tp_btf +\d+ +(\d+)", p.stdout, re.M).group(1))
    assert int(totals[-1][1]) <= final, (totals[-1], final)
    assert [int(t[1]) for t in totals] == sorted(int(t[1]) for t in totals), "totals went down"


def usage_errors():
    cases = [
        (["run", "tcp-2copy"], "unknown workload 'tcp-2copy'"),
        (["run"], "nothing to trace"),
        (["run", "-p", "abc", "-d", "1"], "invalid PID"),
        (["run", "-p", "1"], "-p needs -d"),
        (["run", "--method", "magic", "tcp-twocopy"], "unknown method"),
        (["frobnicate"], "unknown command"),
        (["run", "-p", "999999999", "-d", "1"], "no process with PID"),
        (["run", "--bogus", "tcp-twocopy"], "unrecognized option"),
        (["run", "-i", "0", "tcp-twocopy"], "invalid interval '0'"),
        (["run", "-i", "x", "tcp-twocopy"], "invalid interval 'x'"),
    ]
    for args, msg in cases:
        p = zctrace(*args)
        assert p.returncode == 2, f"{args}: exit {p.returncode}"
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        assert lines and msg in lines[0], f"{args}: {p.stderr!r}"


def failing_command_fails_run():
    p = zctrace("run", "--no-hist", "--", "false")
    assert p.returncode == 1, p.returncode
    assert "[FAIL] workload succeeded" in p.stdout, p.stdout[-500:]
    # checked before anything starts: a usage error
    p = zctrace("run", "--no-hist", "--json", "/nonexistent-dir/x.json", "tcp-onecopy", "--messages", "10")
    assert p.returncode == 2 and "cannot write the --json file /nonexistent-dir/x.json" in p.stderr, \
        (p.returncode, p.stderr)
    assert p.stdout == "", p.stdout[:300]
    p = zctrace("run", "--no-hist", "tcp-onecopy", "--size", "0")
    assert p.returncode == 2, p.returncode
    assert "invalid --size" in p.stderr, p.stderr


# ---- file workloads: exact ledgers, cache state and syscalls per chunk ----

def make_file_test(workload, cache, size=None, threads=1):
    def t():
        check_file_ledger(workload, cache, size, threads)
    t.__name__ = f"file_{workload}_{cache}" + (f"_{size}" if size else "") + (f"_{threads}thr" if threads > 1 else "")
    return t


def file_tests():
    tests = []
    for w in ("file-readwrite", "file-sendfile", "file-splice", "file-copyrange"):
        for cache in ("cold", "warm"):
            tests.append(make_file_test(w, cache))
    tests += [make_file_test("file-readwrite", "warm", "4K"), make_file_test("file-readwrite", "cold", "1M"),
              make_file_test("file-sendfile", "warm", "64K"), make_file_test("file-splice", "cold", "64K"),
              make_file_test("file-copyrange", "warm", "1M")]
    for w in ("serve-readsend", "serve-sendfile"):
        for size in ("4K", "64K"):
            tests.append(make_file_test(w, "cold", size, 2 if size == "4K" else 1))
        tests.append(make_file_test(w, "warm", "64K", 2))
    return tests


def file_sites_on_a_filesystem_without_write_events():
    """On tmpfs (mounted here for the test) there is no per-folio write event: write() is counted
    from its returns, exactly, and the ledger says so; a copy_file_range the tracepoint path cannot
    see is reported as not measured (a failed check), never as a clone or as 0 copies."""
    d = tempfile.mkdtemp()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "zctrace-test", d], check=True)
        try:
            p, led = traced("file-readwrite", "--file-size", str(FILE_SIZE), "--dir", d)
            assert p.returncode == 0, p.stdout[-1200:]
            assert_eq("fs", led["workload"]["fs"], "tmpfs")
            assert_eq("file_write_copy", site_bytes(led, "file_write_copy"), FILE_SIZE)
            assert_eq("write bytes counted from returns", led["write_bytes_by_return"], FILE_SIZE)
            assert_eq("file_read_copy", site_bytes(led, "file_read_copy"), FILE_SIZE)
            assert "counted from write()'s return" in p.stdout, p.stdout[-1500:]
            p, led = traced("file-copyrange", "--file-size", str(FILE_SIZE), "--dir", d)
            assert p.returncode == 1, f"exit {p.returncode}"
            assert_eq("unseen bytes", led["file_bytes_unseen"], FILE_SIZE)
            bad = [c for c in led["checks"] if not c["ok"]]
            assert len(bad) == 1 and "not measured" in bad[0]["detail"], bad
            assert "cloned" not in bad[0]["detail"], bad
        finally:
            subprocess.run(["umount", d], check=True)
    finally:
        os.rmdir(d)


def file_workload_bad_options():
    """A TCP option given to a file workload, or a bad cache mode, is refused by name before the run
    (a usage error, exit 2); a directory that cannot hold the files fails the run."""
    for args, msg in ((["--messages", "5"], "--messages is not an option"),
                      (["--cache", "lukewarm"], "invalid --cache 'lukewarm'"),
                      (["--file-size", "12Q"], "invalid --file-size '12Q'")):
        p = zctrace("run", "--no-hist", "file-readwrite", *args)
        assert p.returncode == 2, f"{args}: exit {p.returncode}"
        assert msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, f"{args}: {p.stderr!r}"
        assert p.stdout == "", p.stdout[-300:]
    p = zctrace("run", "--no-hist", "file-readwrite", "--dir", "/nonexistent-dir")
    assert p.returncode == 1, f"exit {p.returncode}"
    assert "cannot make the files in /nonexistent-dir" in p.stderr, p.stderr
    assert "[FAIL] workload succeeded" in p.stdout, p.stdout[-300:]


def check_can_fail():
    """The checks are real: tcp-onecopy's expectation (user_copy == 0) applied to the twocopy
    binary, which does copy in user space, must fail. ZCTRACE_WORKLOADS swaps the binary in."""
    env = dict(os.environ, ZCTRACE_WORKLOADS=tempfile.mkdtemp())
    try:
        os.symlink(os.path.join(WORKLOADS, "tcp-twocopy"), os.path.join(env["ZCTRACE_WORKLOADS"], "tcp-onecopy"))
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "tcp-onecopy", "--size", "4K", "--messages", "200"],
                           capture_output=True, text=True, env=env, timeout=TIMEOUT)
    finally:
        link = os.path.join(env["ZCTRACE_WORKLOADS"], "tcp-onecopy")
        if os.path.lexists(link):
            os.unlink(link)
        os.rmdir(env["ZCTRACE_WORKLOADS"])
    assert p.returncode == 1, f"exit {p.returncode}"
    assert re.search(r"\[FAIL\] user_copy bytes == 0: kernel 819200", p.stdout), p.stdout[-800:]


# ---- sweeps and plots ----

SWEEP_HEAD = ["run", "rep", "workload", "size", "threads", "status", "exit_code", "error", "host", "kernel",
              "machine", "methods", "elapsed_s", "bytes", "bytes_received", "messages", "throughput_gbit_s",
              "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_max_ns"]
SWEEP_MIDDLE = ["cpu_copies_per_byte", "cpu_copy_sites", "ctx_switches", "ctx_voluntary", "ctx_involuntary", "offcpu_ns",
                "syscalls", "page_faults_user", "page_faults_kernel", "task_clock_ns", "cpu_ns_per_byte",
                "unattributed_bytes"]
SWEEP_TAIL = ["checks_passed", "checks_failed", "failed_checks"]
SWEEP_GRID = ("tcp-onecopy,tcp-twocopy", "--sizes", "1K,64K", "--threads", "1,2", "--reps", "1",
              "--messages", "200")
# every figure tools/plot draws from a sweep without membw rows (copy_bound_vs_size needs them)
FIGURES = ["throughput_vs_size", "throughput_vs_threads", "latency_vs_size", "latency_vs_threads",
           "cpu_per_byte_vs_size", "cycles_per_byte_vs_size", "cache_misses_vs_size", "panel_16k_vs_threads",
           "copies_per_byte", "ctx_switches_vs_threads", "findings"]
FIGURE_PX = (1600, 1000)
PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (\S+) size=(\w+) threads=(\d+) rep=(\d+): (ok|check_failed|error|timeout|"
                      r"interrupted)( [\d.]+ Gbit/s)?.* \(elapsed \d+s, ETA \d+s\)$")

sweep_cache = {}


# ---- microbenchmarks: each assumption is checked by the kernel ----

# A small run of each microbenchmark; its assumptions must all hold.
MICRO_RUNS = {
    "syscall": ["--iters", "1000", "--reps", "20", "--warmup", "2"],
}
# CPU and clock, memory
MICRO_RUNS.update({
    "timer": ["--reps", "20000", "--warmup", "100"],
    "loop": ["--iters", "100000", "--reps", "20", "--warmup", "2"],
    "call": ["--iters", "100000", "--reps", "10", "--warmup", "1"],
    "memlat": ["--min-size", "4K", "--max-size", "2M", "--iters", "10000", "--reps", "5"],
    "membw": ["--size", "8M", "--reps", "5", "--warmup", "1"],
})

# tasks and scheduling
MICRO_RUNS.update({
    "proc-create": ["--iters", "5", "--reps", "4", "--warmup", "1"],
    "thread-create": ["--iters", "50", "--reps", "5", "--warmup", "1"],
    "ctxswitch": ["--iters", "200", "--reps", "5", "--warmup", "1"],
    "pagefault": ["--file-size", "1M"],
})

# network
MICRO_RUNS.update({
    "tcp-rtt": ["--iters", "200", "--reps", "10", "--warmup", "1"],
    "tcp-bw": ["--bytes", "4M", "--reps", "5", "--warmup", "1"],
    "tcp-connect": ["--iters", "20", "--reps", "10", "--warmup", "1"],
})

# files
MICRO_RUNS.update({
    "filecache": ["--min-size", "256K", "--max-size", "4M", "--bytes", "16M", "--reps", "10"],
    "fileread": ["--file-size", "4M", "--reads", "256", "--reps", "3"],
    "contention": ["--max-procs", "3", "--file-size", "256K", "--reps", "3"],
})



def check_micro(workload, args):
    """Runs a microbenchmark traced; every assumption holds, every distribution is consistent."""
    p, led = traced(workload, *args)
    failed = [c for c in led["checks"] if not c["ok"]]
    assert p.returncode == 0 and led["ok"], f"exit {p.returncode}, failed checks {failed}; {p.stderr.strip()[-300:]}"
    assert led["assumptions"], "the workload stated no assumption"
    for a in led["assumptions"]:
        assert a["holds"] and a["min"] <= a["measured"] <= a["max"], f"{a}"
    steps = {s["step"] for s in led["steps"]}
    assert {a["step"] for a in led["assumptions"]} <= steps, "an assumption names an unknown step"
    for r in led["workload"]["results"]:
        assert r["samples"] >= 1, r["name"]
        assert r["min"] <= r["median"] <= r["p99"] <= r["max"], r
        assert r["min"] <= r["mean"] <= r["max"], r
        assert sum(b["count"] for b in r["hist"]) == r["samples"], f"{r['name']}: histogram != samples"
    return led


def make_micro_test(workload):
    def t():
        check_micro(workload, MICRO_RUNS[workload])
    t.__name__ = f"micro_{workload.replace('-', '_')}"
    return t


def micro_syscall_counts_exact():
    """Every getpid, both ways, is one sys_enter; the vDSO clock calls are none."""
    led = check_micro("syscall", ["--iters", "1000", "--reps", "30", "--warmup", "3"])
    by = {a["claim"]: a for a in led["assumptions"]}
    assert len(by) == 4, by.keys()
    calls = 33 * 1000
    got = {s["name"]: s["syscalls"] for s in led["steps"]}
    assert_eq("syscall(SYS_getpid) step syscalls", got["syscall(SYS_getpid)"], calls)
    assert_eq("glibc getpid() step syscalls", got["getpid() (glibc)"], calls)
    assert_eq("time() step syscalls", got["time() (vDSO)"], 0)
    assert_eq("phase getpid count", led["phase_syscalls"]["getpid"], 2 * calls)


def micro_assumption_can_fail():
    """Claiming the vDSO clock enters the kernel must fail, with the kernel's 0 shown."""
    p, led = traced("syscall", "--call", "clock_gettime", "--assume", "kernel", "--iters", "1000",
                    "--reps", "5", "--warmup", "1")
    assert p.returncode == 1, f"exit {p.returncode}"
    (a,) = led["assumptions"]
    assert not a["holds"] and a["measured"] == 0 and a["expected"] == 6000, a
    assert not led["ok"]
    out = zctrace("run", "--no-hist", "syscall", "--call", "clock_gettime", "--assume", "kernel",
                  "--iters", "100", "--reps", "2", "--warmup", "0")
    assert re.search(r"assumption: each clock_gettime.*entered the kernel once — FAILS \(0 of 200", out.stdout), \
        out.stdout[-800:]


def micro_unmeasured_is_not_zero():
    """A step figure whose probe did not attach is null, not 0, and a claim on it is not checked."""
    env = dict(os.environ, ZCTRACE_REFUSE="tp_btf:sys_enter,raw_tp:sys_enter")
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "syscall", "--call", "syscall",
                            "--iters", "100", "--reps", "2", "--warmup", "0"], capture_output=True, text=True,
                           env=env, timeout=TIMEOUT)
        led = json.load(open(f.name))
    assert p.returncode == 1, p.returncode
    (step,) = led["steps"]
    assert step["syscalls"] is None and step["forks"] == 0, step
    (a,) = led["assumptions"]
    assert a["measured"] is None and not a["holds"] and "syscalls not supported" in a["why"], a
    assert "NOT CHECKED (syscalls not supported" in p.stdout and " n/s " in p.stdout, p.stdout[-1500:]


def micro_options_documented():
    """zctrace list documents each microbenchmark's options exactly as its --help lists them."""
    out = zctrace("list").stdout
    documented = dict(re.findall(r"^(\S+) .*\n\s+checked: .*\n\s+options: (.*)$", out, re.M))
    assert set(MICRO_RUNS) <= set(documented), f"undocumented: {set(MICRO_RUNS) - set(documented)}"
    for w, line in documented.items():
        h = subprocess.run([os.path.join(WORKLOADS, w), "--help"], capture_output=True, text=True, timeout=10)
        assert h.returncode == 0, f"{w} --help: exit {h.returncode}"
        listed = set(re.findall(r"^\s+(--[a-z-]+)", h.stdout, re.M))
        assert set(re.findall(r"--[a-z-]+", line)) == listed, f"{w}: list says {line}, --help says {sorted(listed)}"
        bad = subprocess.run([os.path.join(WORKLOADS, w), "--no-such-option"], capture_output=True, text=True,
                             timeout=10)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1, f"{w}: {bad.returncode} {bad.stderr!r}"


def micro_step(led, name):
    (s,) = [s for s in led["steps"] if s["name"] == name]
    return s


def micro_proc_create_counts_exact():
    """Each way made and ended exactly its processes; fork is clone, posix_spawn clone3."""
    led = check_micro("proc-create", ["--iters", "4", "--reps", "3", "--warmup", "1"])
    n = 4 * 4
    for name in ("fork+_exit+waitpid", "fork+execve(/bin/true)+waitpid", "posix_spawn(/bin/true)+waitpid"):
        st = micro_step(led, name)
        assert_eq(f"{name} forks", st["forks"], n)
        assert_eq(f"{name} exits", st["exits"], n)
    sc = led["phase_syscalls"]
    assert_eq("phase clone", sc.get("clone", 0), 2 * n)
    assert_eq("phase clone3", sc.get("clone3", 0), n)
    assert_eq("phase wait4", sc.get("wait4", 0), 3 * n)
    assert_eq("phase execve", sc.get("execve", 0), 2 * n)
    assert_eq("phase exit_group", sc.get("exit_group", 0), 3 * n)
    for site in PIPE_SITES:  # posix_spawn reports through shared memory, not a pipe
        assert_eq(site, site_bytes(led, site), 0)


def micro_thread_create_counts_exact():
    """Each way made and ended exactly its threads: clone3 for pthread_create, clone for the bare one."""
    led = check_micro("thread-create", ["--iters", "30", "--reps", "4", "--warmup", "1"])
    n = 30 * 5
    for name in ("pthread_create+pthread_join", "clone(CLONE_VM|CLONE_THREAD)+futex join"):
        st = micro_step(led, name)
        assert_eq(f"{name} forks", st["forks"], n)
        assert_eq(f"{name} exits", st["exits"], n)
    sc = led["phase_syscalls"]
    assert_eq("phase clone3", sc.get("clone3", 0), n)
    assert_eq("phase clone", sc.get("clone", 0), n)
    assert_eq("phase exit", sc.get("exit", 0), 2 * n)


def micro_ctxswitch_counts():
    """The pipe alone never switched; each ping-pong handed the CPU over 2N times (within the stated
    margin), and the reads and writes of the whole phase are exact."""
    led = check_micro("ctxswitch", ["--iters", "300", "--reps", "4", "--warmup", "1"])
    n = 300 * 5
    assert_eq("pipe alone voluntary switches", micro_step(led, "pipe write+read, one task")["voluntary_switches"], 0)
    for name in ("ping-pong, two processes", "ping-pong, two threads"):
        h = micro_step(led, name)["handoffs"]
        assert 2 * n - 2 * n // 1000 <= h <= 2 * n + 2 * n // 200, f"{name}: {h} handoffs for {n} round trips"
    # the peers' first reads were entered before the phase, asleep
    sc = led["phase_syscalls"]
    assert_eq("phase write", sc.get("write", 0), 5 * n)
    assert_eq("phase read", sc.get("read", 0), 5 * n - 2)
    measures = {a["measure"] for a in led["assumptions"]}
    assert {"handoffs", "voluntary_switches", "syscall:read", "syscall:write"} <= measures, measures
    # the one-byte tokens: 2 per round trip of each pair, 1 per pass of the pipe alone
    assert_eq("tokens passed", led["workload"]["bytes"], 5 * n)
    assert_eq("pipe_write_copy", site_bytes(led, "pipe_write_copy"), 5 * n)
    assert_eq("pipe_read_copy", site_bytes(led, "pipe_read_copy"), 5 * n)
    assert_eq("pipe_ref", site_bytes(led, "pipe_ref"), 0)


def micro_pagefault_counts_exact():
    """MADV_RANDOM: each touched page one fault and one page read in; warm: one fault per window."""
    led = check_micro("pagefault", ["--file-size", "2M"])
    cold = micro_step(led, "cold: touch a page out of the page cache")
    assert_eq("cold faults", cold["page_faults"], 512)
    assert_eq("cold pages read in", cold["page_cache_pages"], 512)
    warm = micro_step(led, "warm: touch a page in the page cache")
    assert 512 // 16 <= warm["page_faults"] <= 512 // 16 + 1, f"warm faults {warm['page_faults']}"
    assert_eq("warm pages read in", warm["page_cache_pages"], 0)


def micro_pagefault_readahead_breaks_claim():
    """With normal advice readahead and fault-around hide faults: "one fault per page" must FAIL."""
    p, led = traced("pagefault", "--file-size", "2M", "--advice", "normal")
    assert p.returncode == 1, f"exit {p.returncode}"
    by = {a["claim"]: a for a in led["assumptions"]}
    (a,) = [a for c, a in by.items() if c.startswith("cold, advice normal: one fault per touched page")]
    assert not a["holds"] and a["expected"] == 512 and a["measured"] < 512, a
    failed = [c for c, a in by.items() if not a["holds"]]
    assert failed == [a["claim"]], f"only the fault claim may fail: {failed}"


def micro_fileread_pages_exact():
    """Cold reads: every sample reads in exactly the file's pages (sequential: readahead stops at
    the end of the file) or exactly the random blocks' own (POSIX_FADV_RANDOM: no readahead)."""
    led = check_micro("fileread", ["--file-size", "2M", "--block", "8K", "--reads", "100", "--reps", "2",
                                   "--warmup", "1"])
    seq, rnd = led["steps"]
    assert_eq("sequential step pages", seq["page_cache_pages"], 3 * 512)
    assert_eq("random step pages", rnd["page_cache_pages"], 3 * 100 * 2)
    by = {a["measure"]: a for a in led["assumptions"]}
    assert_eq("read() calls", by["syscall:read"]["measured"], 3 * 256)
    assert_eq("pread64() calls", by["syscall:pread64"]["measured"], 3 * 100)
    assert_eq("file_read_copy", site_bytes(led, "file_read_copy"), 3 * (2 << 20) + 3 * 100 * 8192)
    assert_eq("workload's own byte count", led["workload"]["bytes"], 3 * (2 << 20) + 3 * 100 * 8192)


def micro_fileread_warm_and_direct_add_no_page():
    """A warm file's reads bring in no page; O_DIRECT reads neither add pages nor copy from the cache."""
    led = check_micro("fileread", ["--file-size", "1M", "--cache", "warm", "--reads", "64", "--reps", "2"])
    assert [s["page_cache_pages"] for s in led["steps"]] == [0, 0], led["steps"]
    assert_eq("warm file_read_copy", site_bytes(led, "file_read_copy"), 3 * (1 << 20) + 3 * 64 * 4096)
    led = check_micro("fileread", ["--file-size", "1M", "--direct", "--reads", "64", "--reps", "2"])
    assert [s["page_cache_pages"] for s in led["steps"]] == [0, 0], led["steps"]
    assert_eq("O_DIRECT file_read_copy", site_bytes(led, "file_read_copy"), 0)
    # the device's DMA into user pages: the direct_io site, all of it, and nothing unattributed
    assert_eq("O_DIRECT direct_io", site_bytes(led, "direct_io"), 3 * (1 << 20) + 3 * 64 * 4096)
    assert_eq("unattributed", led["unattributed"], 0)
    assert led["workload"]["direct"] is True and led["workload"]["claim"] == "direct"


def micro_fileread_warm_claimed_cold_fails():
    """Claiming a warm file's reads missed the cache must fail, with the kernel's 0 pages shown."""
    p, led = traced("fileread", "--file-size", "1M", "--cache", "warm", "--claim", "cold", "--pattern", "seq",
                    "--reps", "2", "--warmup", "0")
    assert p.returncode == 1, f"exit {p.returncode}"
    bad = [a for a in led["assumptions"] if not a["holds"]]
    assert len(bad) == 1 and bad[0]["measure"] == "page_cache_pages", led["assumptions"]
    assert bad[0]["measured"] == 0 and bad[0]["expected"] == 2 * 256, bad[0]
    assert not led["ok"]
    assert re.search(r"assumption: each sample missed the page cache.* — FAILS \(0 of 512", p.stdout), \
        p.stdout[-800:]


def micro_filecache_served_from_cache():
    """Re-reads of a warm file bring in no page, one read() per block, and the note names the largest
    size the cache held (every size here)."""
    led = check_micro("filecache", ["--min-size", "64K", "--max-size", "1M", "--block", "16K",
                                    "--bytes", "2M", "--reps", "8", "--warmup", "1"])
    sizes = [64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20]
    assert [s["page_cache_pages"] for s in led["steps"]] == [0] * len(sizes), led["steps"]
    reads = {a["step"]: a["measured"] for a in led["assumptions"] if a["measure"] == "syscall:read"}
    for i, size in enumerate(sizes):
        samples = min(8, max(1, (2 << 20) // size))
        assert_eq(f"read() calls for {size}", reads[i + 1], (samples + 1) * size // (16 << 10))
    rereads = sum((min(8, (2 << 20) // s) + 1) * s for s in sizes)
    assert_eq("file_read_copy", site_bytes(led, "file_read_copy"), rereads + sum(sizes))
    assert any("largest file served entirely from the page cache: 1M" in n for n in led["workload"]["notes"]), \
        led["workload"]["notes"]


def micro_contention_counts_exact():
    """Every round forks N readers and reaps them, and each reads its whole cold file in."""
    led = check_micro("contention", ["--max-procs", "4", "--file-size", "128K", "--reps", "2", "--warmup", "1"])
    for n, st in enumerate(led["steps"], 1):
        assert_eq(f"N={n} forks", st["forks"], 3 * n)
        assert_eq(f"N={n} exits", st["exits"], 3 * n)
        assert_eq(f"N={n} pages", st["page_cache_pages"], 3 * n * 32)
    assert [r["samples"] for r in led["workload"]["results"]] == [2, 4, 6, 8]
    assert_eq("file_read_copy", site_bytes(led, "file_read_copy"), 3 * 10 * (128 << 10))
    for site in PIPE_SITES:  # the readers start at their start pipe's end of file: no byte in it
        assert_eq(site, site_bytes(led, site), 0)


def micro_timer_vdso_clock():
    """Reading CLOCK_MONOTONIC 2 x 3000 times made no clock_gettime syscall: the vDSO served it."""
    led = check_micro("timer", ["--clock", "clock_gettime", "--reps", "2000", "--warmup", "1000"])
    (step,) = led["steps"]
    assert_eq("timed step syscalls", step["syscalls"], 0)
    assert "clock_gettime" not in led["phase_syscalls"], led["phase_syscalls"]
    (a,) = [a for a in led["assumptions"] if a["measure"] == "syscall:clock_gettime"]
    assert a["measured"] == 0 and "6000 clock_gettime" in a["claim"], a
    (r,) = led["workload"]["results"]
    assert r["samples"] == 2000 and r["unit"] == "ns", r


def micro_call_not_optimised_away():
    """Each timed loop of call really calls its out-of-line callee (objdump), with the loop
    measured first; every step made no syscall and never switched out on its own."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", os.path.join(WORKLOADS, "call")],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    for n in range(8):
        body = re.search(rf"<run{n}>:\n(.*?)\n\n", dis, re.S)
        assert body and re.search(rf"\bcall\s+[0-9a-f]+ <call{n}>", body.group(1)), f"run{n} makes no call to call{n}"
    led = check_micro("call", ["--iters", "20000", "--reps", "5", "--warmup", "1", "--max-args", "3"])
    names = [s["name"] for s in led["steps"]]
    assert names == ["empty loop (the overhead)"] + [f"call, {n} argument{'s' if n != 1 else ''}" for n in range(4)], names
    for s in led["steps"]:
        assert s["syscalls"] == 0 and s["voluntary_switches"] == 0, s
    assert len(led["workload"]["results"]) == 5


def micro_membw_user_copy_exact():
    """user_copy counts exactly the bytes membw memcpy'd (9 calls x 8 MiB, warm-up included),
    and none when only the read and write passes run; no timed pass faulted."""
    size = 8 << 20
    led = check_micro("membw", ["--size", "8M", "--reps", "7", "--warmup", "2"])
    assert_eq("workload memcpy calls", led["workload"]["memcpy_calls"], 9)
    assert_eq("user_copy bytes", site_bytes(led, "user_copy"), 9 * size)
    assert_eq("user_copy copies", led["sites"]["user_copy"]["count"], 9)
    assert [s["page_faults"] for s in led["steps"]] == [0, 0, 0], led["steps"]
    led = check_micro("membw", ["--size", "8M", "--reps", "3", "--warmup", "0", "--kind", "read"])
    assert_eq("user_copy bytes, read only", site_bytes(led, "user_copy"), 0)
    assert_eq("workload bytes, read only", led["workload"]["bytes"], 0)


def micro_membw_unfaulted_buffers_fail():
    """Without pre-faulting, the first memcpy faults every page of both buffers once (the source
    maps the zero page, the destination a new page): the no-fault assumption fails with that count."""
    size = 8 << 20
    p, led = traced("membw", "--size", "8M", "--reps", "3", "--warmup", "0", "--kind", "memcpy", "--no-prefault")
    assert p.returncode == 1 and not led["ok"], f"exit {p.returncode}"
    (a,) = [a for a in led["assumptions"] if a["measure"] == "page_faults"]
    assert not a["holds"], a
    pages = 2 * size // os.sysconf("SC_PAGE_SIZE")
    if asan_build("membw"):
        # ASan's memcpy reads the shadow of both buffers (a byte per 8) first: those pages fault
        # too, one more at each end of a buffer whose shadow straddles a page
        assert pages + pages // 8 <= a["measured"] <= pages + pages // 8 + 2, \
            f"page faults of the unfaulted memcpy step (ASan): kernel {a['measured']}, buffers {pages}"
    else:
        assert_eq("page faults of the unfaulted memcpy step", a["measured"], pages)
    assert_eq("user_copy bytes", site_bytes(led, "user_copy"), 3 * size)


def micro_memlat_structure():
    """memlat chases one size per step, doubling from --min-size up to --max-size (3M stops at
    2M); the kernel saw no fault and no syscall in any chase; bad sizes are refused in one line."""
    led = check_micro("memlat", ["--min-size", "4K", "--max-size", "3M", "--iters", "4000", "--reps", "3"])
    sizes = [r["size"] for r in led["workload"]["results"]]
    assert sizes == [4096 << i for i in range(10)], sizes
    assert len(led["steps"]) == 10, led["steps"]
    for s in led["steps"]:
        assert s["page_faults"] == 0 and s["syscalls"] == 0, s
    assert {a["measure"] for a in led["assumptions"]} == {"page_faults", "syscalls"}
    assert len(led["assumptions"]) == 20
    for pl in led["workload"]["plateaus"]:
        assert 4096 <= pl["first_size"] < pl["last_size"] <= 2 << 20, pl
    for args, msg in ((["--min-size", "5000"], "invalid --min-size 5000 (a power of two)"),
                      (["--min-size", "8K", "--max-size", "4K"], "is below --min-size")):
        bad = subprocess.run([os.path.join(WORKLOADS, "memlat"), *args], capture_output=True, text=True,
                             timeout=10)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and msg in bad.stderr, bad.stderr


def assumption(led, measure, claim_part=""):
    """The one assumption on @measure whose claim contains @claim_part."""
    found = [a for a in led["assumptions"] if a["measure"] == measure and claim_part in a["claim"]]
    assert len(found) == 1, f"{measure} / {claim_part!r}: {[a['claim'] for a in led['assumptions']]}"
    return found[0]


def micro_tcp_rtt_exact(peer=()):
    """Every round trip is one sendto and one whole recvfrom per side; the copy sites see exactly
    the bytes both sides counted, 2 x size x round trips each way."""
    led = check_micro("tcp-rtt", ["--size", "100", "--iters", "100", "--reps", "10", "--warmup", "2", *peer])
    wl, n = led["workload"], 12 * 100
    assert_eq("round trips", wl["round_trips"], n)
    assert_eq("step sendto", assumption(led, "syscall:sendto")["measured"], 2 * n)
    assert_eq("step recvfrom", assumption(led, "syscall:recvfrom", "whole")["measured"], 2 * n)
    assert_eq("phase sendto", led["phase_syscalls"]["sendto"], 2 * n)
    assert_eq("phase recvfrom", led["phase_syscalls"]["recvfrom"], 2 * n)
    assert_eq("workload bytes sent", wl["bytes"], 2 * n * 100)
    assert_eq("workload bytes received", wl["bytes_received"], 2 * n * 100)
    assert_eq("send_copy", site_bytes(led, "send_copy"), 2 * n * 100)
    assert_eq("recv_copy", site_bytes(led, "recv_copy"), 2 * n * 100)
    if not peer:
        check_micro_server(led, "thread")
    return led


def micro_tcp_rtt_short_reads_fail():
    """A message larger than the most a receive queue may hold cannot arrive in one recv(): the
    'arrived whole' claim must fail with the kernel's larger count, which equals the workload's own."""
    rmem_max = int(open("/proc/sys/net/ipv4/tcp_rmem").read().split()[2])
    size = 64 << 20
    if size <= rmem_max:
        raise Skip(f"tcp_rmem max {rmem_max} is not below the largest --size")
    p, led = traced("tcp-rtt", "--size", "64M", "--iters", "1", "--reps", "2", "--warmup", "0")
    assert p.returncode == 1 and not led["ok"], f"exit {p.returncode}"
    whole = assumption(led, "syscall:recvfrom", "whole")
    own = assumption(led, "syscall:recvfrom", "counted")
    assert not whole["holds"] and whole["measured"] > whole["expected"] == 4, whole
    assert own["holds"] and own["measured"] == led["workload"]["recv_calls"], own
    assert_eq("send_copy", site_bytes(led, "send_copy"), 4 * size)
    assert_eq("recv_copy", site_bytes(led, "recv_copy"), 4 * size)
    assert re.search(r"arrived whole in one recv\(\) \(no short reads\) — FAILS \(\d+ of 4,", p.stdout), \
        p.stdout[-1500:]


def micro_tcp_bw_exact(peer=()):
    """Each write is one sendto, each counted read one recvfrom; the bytes per sample round up to
    whole writes, and the copy sites see exactly the bytes moved."""
    led = check_micro("tcp-bw", ["--size", "16K", "--bytes", "1000K", "--reps", "4", "--warmup", "1", *peer])
    wl = led["workload"]
    per_sample = 63 * 16384  # 1000K rounded up to whole 16K writes
    assert_eq("bytes per sample", wl["bytes_per_sample"], per_sample)
    assert_eq("step sendto", assumption(led, "syscall:sendto")["measured"], 5 * 63)
    assert_eq("phase sendto", led["phase_syscalls"]["sendto"], 5 * 63)
    assert_eq("step recvfrom", assumption(led, "syscall:recvfrom")["measured"], wl["recv_calls"])
    assert_eq("phase recvfrom", led["phase_syscalls"]["recvfrom"], wl["recv_calls"])
    assert_eq("bytes sent", wl["bytes"], 5 * per_sample)
    assert_eq("bytes received", wl["bytes_received"], 5 * per_sample)
    assert_eq("send_copy", site_bytes(led, "send_copy"), 5 * per_sample)
    assert_eq("recv_copy", site_bytes(led, "recv_copy"), 5 * per_sample)
    return led


def micro_tcp_connect_exact(peer=()):
    """N connections are N socket, connect, accept4 and end-of-stream reads, 2N closes, no copies;
    with a FIN close and with SO_LINGER 0 (RST). Too many connections for one run are refused."""
    leds = []
    for how in ("fin", "rst"):
        led = check_micro("tcp-connect", ["--iters", "25", "--reps", "3", "--warmup", "1", "--close", how, *peer])
        leds.append(led)
        n = 4 * 25
        assert_eq(f"{how}: connections", led["workload"]["connections"], n)
        for call, want in (("socket", n), ("connect", n), ("accept4", n), ("recvfrom", n), ("close", 2 * n)):
            assert_eq(f"{how}: step {call}", assumption(led, f"syscall:{call}")["measured"], want)
            assert_eq(f"{how}: phase {call}", led["phase_syscalls"][call], want)
        for site in ("send_copy", "recv_copy"):
            assert_eq(f"{how}: {site}", site_bytes(led, site), 0)
    bad = subprocess.run([os.path.join(WORKLOADS, "tcp-connect"), "--iters", "20000", "--reps", "2",
                          "--warmup", "0"], capture_output=True, text=True, timeout=10)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "40000 connections" in bad.stderr, \
        f"{bad.returncode} {bad.stderr!r}"
    return leds


def check_micro_server(led, where):
    """The client and the server of a network microbenchmark, each where --peer put it: the report
    and the ledger name the peer and the path, and each side's own copies are its own calls'."""
    wl, net = led["workload"], led["network"]
    assert wl["peer"] == net["peer"] == where, (wl["peer"], net)
    assert wl["path"] == net["path"] == ("veth" if where == "netns" else "loopback"), (wl["path"], net)
    roles = {p["role"]: p for p in led["by_process"]}
    if where == "thread":
        assert wl["client_pid"] == wl["server_pid"], wl
        return
    assert wl["client_pid"] != wl["server_pid"], wl
    if wl.get("bytes"):
        assert "client" in roles and "server" in roles, list(roles)
        assert_eq("client pid", roles["client"]["pid"], wl["client_pid"])
        assert_eq("server pid", roles["server"]["pid"], wl["server_pid"])
    for p in roles.values():
        assert p["netns"] == (net["namespaces"]["sender" if p["role"] == "client" else "receiver"]
                              if where == "netns" else "host"), p
    return roles


def micro_tcp_rtt_peer(where):
    """The same exact round trips to a server process, on loopback or across veth; each side
    sent and received half the bytes, under its own pid, in its own namespace."""
    led = micro_tcp_rtt_exact(("--peer", where))
    roles, half = check_micro_server(led, where), 1200 * 100
    for role in ("client", "server"):
        for site in ("send_copy", "recv_copy"):
            assert_eq(f"{role} {site}", roles[role]["sites"][site]["bytes"], half)
    return [led]


def micro_tcp_bw_peer(where):
    """The same exact transfer from a server process, on loopback or across veth: the server's
    send_copy is every byte it wrote, the client's recv_copy every byte it read, nothing the other way."""
    led = micro_tcp_bw_exact(("--peer", where))
    roles, wl = check_micro_server(led, where), led["workload"]
    assert_eq("server send_copy", roles["server"]["sites"]["send_copy"]["bytes"], wl["bytes"])
    assert_eq("client recv_copy", roles["client"]["sites"]["recv_copy"]["bytes"], wl["bytes_received"])
    assert_eq("server recv_copy", roles["server"]["sites"]["recv_copy"]["bytes"], 0)
    assert_eq("client send_copy", roles["client"]["sites"]["send_copy"]["bytes"], 0)
    return [led]


def micro_tcp_connect_peer(where):
    """The same exact connections to a server process, on loopback or across veth."""
    leds = micro_tcp_connect_exact(("--peer", where))
    for led in leds:
        check_micro_server(led, where)
        name = "connect() over veth" if where == "netns" else "connect() over loopback"
        assert [r["name"] for r in led["workload"]["results"]][0] == name, led["workload"]["results"]
    return leds


def make_micro_peer_test(check, where):
    """@check with the server in a process (@where: process or netns); with netns, the namespaces,
    the veth pair and every process in them are gone once zctrace is."""
    def t():
        before = our_net_objects()
        for led in check(where):
            for ino in (led["network"]["namespaces"] or {}).values():
                if isinstance(ino, int):
                    assert not netns_holders(ino), f"net:[{ino}] still held by {netns_holders(ino)}"
        assert_eq("namespaces and links left", our_net_objects(), before)
    t.__name__ = f"{check.__name__}_{where}"
    return t


def micro_tcp_peer_bad():
    """A --peer that is not thread, process or netns is one line and exit 2, from zctrace as from
    the workload; --peer netns outside zctrace too, since only zctrace makes the namespaces."""
    for w in ("tcp-rtt", "tcp-bw", "tcp-connect"):
        for cmd in ([ZCTRACE, "run", "--no-hist", w, "--peer", "bogus"], [os.path.join(WORKLOADS, w), "--peer", "bogus"],
                    [ZCTRACE, "run", "--no-hist", w, "--peer=remote"]):
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            assert p.returncode == 2 and p.stderr.count("\n") == 1, f"{cmd}: {p.returncode} {p.stderr!r}"
            assert "invalid --peer" in p.stderr and "thread|process|netns" in p.stderr, p.stderr
        p = subprocess.run([os.path.join(WORKLOADS, w), "--peer", "netns"], capture_output=True, text=True, timeout=10)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "zctrace run" in p.stderr, \
            f"{p.returncode} {p.stderr!r}"


# Tests beyond the small run, by group.
MICRO_TESTS = [micro_syscall_counts_exact, micro_assumption_can_fail, micro_options_documented,
               micro_unmeasured_is_not_zero]
# CPU and clock, memory
MICRO_TESTS += [micro_timer_vdso_clock, micro_call_not_optimised_away, micro_membw_user_copy_exact,
                micro_membw_unfaulted_buffers_fail, micro_memlat_structure]

# tasks and scheduling
MICRO_TESTS += [micro_proc_create_counts_exact, micro_thread_create_counts_exact, micro_ctxswitch_counts,
                micro_pagefault_counts_exact, micro_pagefault_readahead_breaks_claim]

# network
MICRO_TESTS += [micro_tcp_rtt_exact, micro_tcp_rtt_short_reads_fail, micro_tcp_bw_exact, micro_tcp_connect_exact]
MICRO_TESTS += [make_micro_peer_test(check, where) for check in (micro_tcp_rtt_peer, micro_tcp_bw_peer, micro_tcp_connect_peer)
                for where in ("process", "netns")] + [micro_tcp_peer_bad]

# files
MICRO_TESTS += [micro_fileread_pages_exact, micro_fileread_warm_and_direct_add_no_page,
                micro_fileread_warm_claimed_cold_fails, micro_filecache_served_from_cache,
                micro_contention_counts_exact]


def micro_tests():
    return [make_micro_test(w) for w in MICRO_RUNS] + MICRO_TESTS


def sweep_columns():
    """The documented columns; sites and perf counters in the order a ledger lists them."""
    p, led = traced("tcp-onecopy", "--size", "4K", "--messages", "10")
    sites = [c for s in led["sites"] for c in (f"{s}_copies", f"{s}_bytes", f"{s}_per_byte")]
    perf = ["perf_" + name.replace("-", "_") for name in led["perf"]] + ["perf_roles", "perf_multiplexed"]
    perf += [f"{role}{key}" for role in ("", "sender_", "receiver_") for key in PERF_DERIVED] + ["memcpy_mb_s"]
    return SWEEP_HEAD + sites + SWEEP_MIDDLE + perf + SWEEP_TAIL


def grid_sweep(ext):
    """The 8-run grid, swept once per output format and kept for the tests that read it."""
    if ext not in sweep_cache:
        path = os.path.join(scratch, f"grid.{ext}")
        p = sweep(*SWEEP_GRID, "-o", path)
        sweep_cache[ext] = (p, path)
    return sweep_cache[ext]


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


def plot_partial_file():
    """A partial sweep (a failed row, a single ok row, columns missing) still plots what it holds."""
    p, path = grid_sweep("csv")
    header, rows = read_csv(path)
    keep = [c for c in header if not c.startswith(("lat_", "ctx_"))]
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


def findings_from_a_real_sweep():
    """A small real sweep with --membw: membw's user_copy is exactly the bytes it memcpy'd, and the
    findings (peak, crossover reps, copy bound) are those the rows give, recomputed here."""
    path = os.path.join(scratch, "findings.csv")
    p = sweep("tcp-twocopy,tcp-onecopy", "--sizes", "4K,64K", "--threads", "1", "--reps", "2", "--messages", "400",
              "--membw", "16M", "-o", path)
    assert p.returncode == 0, p.stderr[-1500:]
    rows = read_csv(path)[1]
    bw = [r for r in rows if r["workload"] == "membw"]
    assert len(bw) == 2 and all(r["status"] == "ok" and float(r["memcpy_mb_s"]) > 0 for r in bw), bw
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
    bw_bytes = statistics.median(float(r["memcpy_mb_s"]) for r in bw) * 1e6
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
    assert c["text"] in plot.stdout and "copy bound: throughput x CPU copies/B against memcpy" in plot.stdout
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
    key = (name, ext)
    if key not in sweep_cache:
        path = os.path.join(scratch, f"micro-{name}.{ext}")
        p = sweep("-o", path, *MICRO_SWEEPS[name], timeout=300)
        sweep_cache[key] = (p, path)
    return sweep_cache[key]


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


# ---- installed as the tools beside it are: make install, the manual page, bash completion ----

MAN_PAGE = os.path.join(ROOT, "docs", "zctrace.8")
COMPLETION = os.path.join(ROOT, "tools", "zctrace.bash-completion")


def help_options(text):
    """The long options an option list prints: argp's lines ("  -x, --name=ARG", "      --name")
    and the workloads' and probes' ("  --name ARG")."""
    return set(re.findall(r"^  (?:-[^-], |    )?(--[a-z][a-z0-9-]*)", text, re.M))


def workload_names():
    p = zctrace("list", "--names")
    assert p.returncode == 0 and p.stdout.strip(), (p.returncode, p.stderr)
    return p.stdout.split()


def man_page_covers_the_cli():
    """docs/zctrace.8 cannot fall behind the CLI: every command 'zctrace --help' names, every long
    option 'zctrace CMD --help' and 'zctrace run WORKLOAD --help' print, and every workload of
    'zctrace list --names' is in it; man renders it without a warning."""
    src = open(MAN_PAGE).read()
    # the text as read: troff's escaped hyphens and font changes undone
    text = re.sub(r"\\f[BIRP]|\\&|\\c", "", src.replace("\\-", "-"))
    missing = []

    def need(word, where):
        if not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text):
            missing.append(f"{word} ({where})")

    top = zctrace("--help")
    assert top.returncode == 0, top.stderr
    commands = sorted(set(re.findall(r"^(?:usage:)? +zctrace ([a-z]+)\b", top.stdout, re.M)))
    assert {"run", "sweep", "probes", "list"} <= set(commands), commands
    for cmd in commands:
        if not re.search(rf'^\.SS "?{cmd}\b', src, re.M):
            missing.append(f"a section for {cmd}")
        p = zctrace(cmd, "--help")
        assert p.returncode == 0, f"zctrace {cmd} --help: exit {p.returncode}: {p.stderr.strip()}"
        for opt in help_options(p.stdout):
            need(opt, f"zctrace {cmd} --help")
    names = workload_names()
    for name in names:
        need(name, "zctrace list --names")
        p = zctrace("run", name, "--help")
        assert p.returncode == 0, f"zctrace run {name} --help: exit {p.returncode}: {p.stderr.strip()}"
        for opt in help_options(p.stdout):
            need(opt, f"zctrace run {name} --help")
    assert not missing, f"docs/zctrace.8 lacks {', '.join(sorted(set(missing)))}"
    p = subprocess.run(["man", "--warnings", "-l", MAN_PAGE], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, MANWIDTH="80"))
    assert p.returncode == 0 and p.stderr == "", (p.returncode, p.stderr)
    assert "zctrace run" in p.stdout and "EXIT STATUS" in p.stdout, p.stdout[:500]


def installed_files(workloads, prefix="usr/local", unitdir="usr/local/lib/systemd/system"):
    return sorted([f"{prefix}/sbin/zctrace", f"{prefix}/bin/zctrace-plot", f"{prefix}/share/zctrace/plot",
                   f"{prefix}/share/zctrace/findings.py", f"{prefix}/share/zctrace/microfigures.py",
                   f"{prefix}/share/man/man8/zctrace.8",
                   f"{prefix}/share/bash-completion/completions/zctrace", f"{unitdir}/zctrace-export.service"]
                  + [f"{prefix}/libexec/zctrace/{w}" for w in workloads])


def tree_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def tools_module(name):
    """A module of tools/ (docblocks, samples), imported as the Makefile runs it."""
    if os.path.join(ROOT, "tools") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "tools"))
    return __import__(name)


def generated_docs_match_the_table():
    """The manual page's workload and option blocks and the workload tables of docs/ are what
    'zctrace list --format man|markdown' prints now: a change to the workload table or to the
    options' lines that was not rebuilt fails here, and so would a block edited by hand; a block
    the generator prints that no file holds is an error; a bad --format is one line and exit 2."""
    docblocks = tools_module("docblocks")
    files = {"man": [MAN_PAGE], "markdown": [os.path.join(ROOT, "docs", "workloads.md"),
                                             os.path.join(ROOT, "docs", "microbenchmarks.md")]}
    for fmt, paths in files.items():
        p = zctrace("list", "--format", fmt)
        assert p.returncode == 0 and "BEGIN GENERATED" in p.stdout, (fmt, p.returncode, p.stderr)
        differ = docblocks.splice(paths, p.stdout, check=True)
        assert not differ, f"out of date (run make docs): {differ}"
        with tempfile.TemporaryDirectory() as d:
            copies = [shutil.copy(path, d) for path in paths]
            text = open(copies[0]).read()
            name, block = next(iter(docblocks.parse(text)[0].items()))
            lines = block.splitlines(keepends=True)
            edited = lines[0] + lines[1].rstrip("\n") + " (edited)\n" + "".join(lines[2:])
            open(copies[0], "w").write(text.replace(block, edited, 1))
            differ = docblocks.splice(copies, p.stdout, check=True)
            assert differ == [f"{copies[0]}: {name}"], (fmt, differ)
            try:
                docblocks.splice(copies[1:] or [os.path.join(ROOT, "README.md")], p.stdout, check=True)
                assert False, f"{fmt}: a block that no file holds was not refused"
            except ValueError as e:
                assert "no file holds" in str(e), e
    assert zctrace("list", "--format", "text").stdout == zctrace("list").stdout
    for args, what in ((["--format", "roff"], "unknown --format 'roff'"), (["--format"], "--format needs a value"),
                       (["--format=man", "x"], "unexpected argument 'x'")):
        p = zctrace("list", *args)
        assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1 and what in p.stderr, \
            (args, p.returncode, p.stderr)


def readme_samples_have_the_shape_of_a_fresh_run():
    """README.md's sample outputs (make samples) have the shape of a run of their commands now:
    the same lines, each with its indent and first word (digits masked), lines that start with a
    figure left out; the numbers are free to differ."""
    samples = tools_module("samples")
    have = samples.checked_in()
    assert set(have) == set(samples.SAMPLES), sorted(have)
    for name in samples.SAMPLES:
        fresh = samples.text(name, ZCTRACE)
        want, got = samples.shape(have[name]), samples.shape(fresh)
        assert want == got, (name, [l for l in want if l not in got], [l for l in got if l not in want],
                             fresh[-2500:])


def make_install_runs_from_destdir():
    """make install DESTDIR=... lays out zctrace, its workloads, the manual page, completion, the plot
    tool and the exporter's unit, and nothing else; the installed zctrace finds its workloads
    there (no ZCTRACE_WORKLOADS, the tree out of sight) and a traced run balances; zctrace-plot runs
    from there; make uninstall takes every file away."""
    dest = tempfile.mkdtemp(prefix="install.", dir=scratch)
    p = subprocess.run(["make", "-s", "install", f"DESTDIR={dest}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout[-1000:] + p.stderr[-1000:]
    names = workload_names()
    assert_eq("installed files", tree_files(dest), installed_files(names))
    prefix = os.path.join(dest, "usr", "local")
    zct = os.path.join(prefix, "sbin", "zctrace")
    env = {k: v for k, v in os.environ.items() if k != "ZCTRACE_WORKLOADS"}
    run = lambda *a, **kw: subprocess.run([zct, *a], capture_output=True, text=True, cwd="/",  # noqa: E731
                                          env=env, timeout=TIMEOUT, **kw)
    p = run("probes")
    assert p.returncode == 0 and re.search(r"^send_copy\s+\S+", p.stdout, re.M), (p.returncode, p.stderr)
    p = run("list", "--names")
    assert p.returncode == 0 and p.stdout.split() == names, (p.returncode, p.stdout, p.stderr)
    p = run("list")
    assert p.returncode == 0 and "tcp-onecopy" in p.stdout, p.stderr
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = run("run", "--no-hist", "--passes", "traced", "--json", f.name, "tcp-onecopy", "--size", "4K",
                "--messages", "500")
        assert p.returncode == 0, (p.returncode, p.stderr[-500:], p.stdout[-800:])
        led = json.load(open(f.name))
    assert_eq("send_copy (installed)", site_bytes(led, "send_copy"), led["workload"]["bytes"])
    assert_eq("bytes sent (installed)", led["workload"]["bytes"], 500 * 4096)
    unit = open(os.path.join(prefix, "lib", "systemd", "system", "zctrace-export.service")).read()
    assert "ExecStart=/usr/local/sbin/zctrace export --listen 127.0.0.1:9435\n" in unit, unit
    p = subprocess.run([os.path.join(prefix, "bin", "zctrace-plot"), "--help"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and "SWEEP_FILE" in p.stdout, (p.returncode, p.stderr)
    assert not os.path.exists(os.path.join(prefix, "share", "zctrace", "__pycache__")), "bytecode left installed"
    p = subprocess.run(["make", "-s", "uninstall", f"DESTDIR={dest}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and tree_files(dest) == [], (p.stderr, tree_files(dest))


def deb_build_depends_match_install_deps():
    """debian/control's Build-Depends and tools/install-deps.sh agree: every library the build
    links or includes (a -dev package there), clang, bpftool and pkg-config is a build dependency,
    and every build dependency is one install-deps installs (CI builds the .deb with what it put)."""
    deps = re.findall(r'^\s*"([a-z0-9.+-]+):', open(os.path.join(ROOT, "tools", "install-deps.sh")).read(), re.M)
    control = open(os.path.join(ROOT, "debian", "control")).read()
    field = re.search(r"^Build-Depends:(.*?)^\S", control, re.M | re.S).group(1)
    build_deps = {re.match(r"\s*([a-z0-9.+-]+)", d).group(1) for d in field.split(",") if d.strip()}
    build_deps.discard("debhelper-compat")  # debhelper's own way of naming its version
    # the sanitizer and libFuzzer runtimes serve make sanitize and make fuzz, not the package, and
    # dpkg-dev is what builds it (build-essential)
    wanted = {d for d in deps if d.endswith("-dev") and not d.startswith(("libclang-rt", "dpkg-dev"))}
    wanted |= {"clang", "bpftool", "pkg-config"}
    assert wanted <= build_deps, f"debian/control's Build-Depends lack {sorted(wanted - build_deps)}"
    assert build_deps <= set(deps), f"tools/install-deps.sh does not install {sorted(build_deps - set(deps))}"


def complete(*words):
    """What the completion script offers for the command line @words (the last one being typed)."""
    script = (f"source {COMPLETION}\n"
              "COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1))\n"
              "_zctrace\n"
              "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    p = subprocess.run(["bash", "-c", script, "bash", ZCTRACE, *words], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", (words, p.returncode, p.stderr)
    return p.stdout.split()


def bash_completion_offers_workloads_and_options():
    """The completion script parses, and a real call of its function offers the commands, the
    workload names, run's and a workload's options and an option's values, all asked of zctrace."""
    p = subprocess.run(["bash", "-n", COMPLETION], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert {"run", "sweep", "probes", "list"} <= set(complete("")), complete("")
    assert complete("run", "tcp-one") == ["tcp-onecopy"], complete("run", "tcp-one")
    assert set(complete("run", "")) == set(workload_names()), complete("run", "")
    assert "--json=" in complete("run", "--j"), complete("run", "--j")
    assert "--prog-stats" in complete("run", "--"), complete("run", "--")
    assert "--messages" in complete("run", "-j", "x.json", "tcp-onecopy", "--size", "4K", "--"), "workload options"
    assert complete("run", "--passes", "") == ["both", "traced"], complete("run", "--passes", "")
    assert complete("probes", "--method", "=", "tr") == ["tracepoint"], complete("probes", "--method", "=", "tr")
    assert complete("sweep", "tcp-twocopy,udp-z") == ["tcp-twocopy,udp-zerocopy"], complete("sweep", "tcp-twocopy,udp-z")
    assert complete("list", "--") == ["--names"], complete("list", "--")
    assert "--max-keys=" in complete("top", "--"), complete("top", "--")
    assert complete("top", "-j", "") == [], "top's -j takes no argument"


# ---- two hosts: network namespaces joined by veth ----

def make_netns_tcp_test(workload, size, threads):
    def t():
        before = our_net_objects()
        led = check_tcp_ledger(workload, size, threads, ("--netns",))
        check_veth(led)
        assert_eq("namespaces and links left", our_net_objects(), before)
    t.__name__ = f"netns_ledger_{workload}_{size}_{threads}thr"
    return t


def make_peer_process_test(workload):
    def t():
        led = check_tcp_ledger(workload, "64K", 2, ("--peer", "process"))
        assert led["network"]["path"] == "loopback" and led["network"]["namespaces"] is None, led["network"]
        snd, rcv = check_sides(led)
        assert snd["netns"] == rcv["netns"] == "host", (snd, rcv)
    t.__name__ = f"peer_process_ledger_{workload}"
    return t


def make_netns_zerocopy_path_test(workload):
    def t():
        netns_zerocopy_path(workload)
    t.__name__ = "netns_zerocopy_path" if workload == "tcp-zerocopy" else f"netns_{workload}_path"
    return t


def netns_zerocopy_path(workload):
    """On veth the zerocopy skbs leave the sender's end and reach the receiver's still holding the
    pinned pages (SKBFL_DONT_ORPHAN); the copy comes on delivery there, and the notices say COPIED."""
    led = check_tcp_ledger(workload, "64K", 1, ("--netns",))
    net = led["network"]
    path = {(e["stage"], e["dev"]): e for e in led["zerocopy_path"]}
    tx = path.get(("xmit", net["veth"]["sender"]))
    rx = path.get(("receive", net["veth"]["receiver"]))
    assert tx and rx, led["zerocopy_path"]
    assert tx["netns_role"] == "sender" and rx["netns_role"] == "receiver", (tx, rx)
    for e in (tx, rx):
        assert e["skbs"] > 0 and e["dont_orphan"] == e["skbs"], e
        assert e["bytes"] >= led["workload"]["bytes"], (e, led["workload"]["bytes"])
    # nothing on loopback: every zerocopy skb took the veth pair
    assert all(e["dev"] != "lo" for e in led["zerocopy_path"]), led["zerocopy_path"]
    zc = led["workload"]["zerocopy"]
    assert_eq("COPIED notices", zc["notices_copied"], zc["notices"])


# ---- io_uring: requests issued by the submitter, io-wq workers or an SQPOLL thread ----

def io_threads_of(pid):
    """The io_uring kernel threads of process @pid ("iou-wrk-TID", "iou-sqp-PID"): listed in
    /proc/PID/task, they are threads of its thread group, with its tgid."""
    names = set()
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            except OSError:
                continue
            if name.startswith("iou-"):
                names.add(name[:8])
    except OSError:
        pass
    return names


def traced_watching(seen):
    """traced(), noting in @seen {pid: io_uring thread kinds} what the workload's processes ran while
    the run went: io-wq workers end with the thread they work for, before any report."""
    def run(workload, *wargs):
        with tempfile.NamedTemporaryFile(suffix=".json") as f, tempfile.TemporaryFile("w+") as out:
            z = subprocess.Popen([ZCTRACE, "run", "--no-hist", "--json", f.name, workload, *wargs],
                                 stdout=out, stderr=subprocess.STDOUT, text=True)
            deadline = time.monotonic() + TIMEOUT
            while z.poll() is None and time.monotonic() < deadline:
                for pid in descendants(z.pid):
                    seen.setdefault(pid, set()).update(io_threads_of(pid))
                time.sleep(0.005)
            z.kill() if z.poll() is None else None
            z.wait()
            out.seek(0)
            p = subprocess.CompletedProcess(z.args, z.returncode, out.read(), "")
            try:
                led = json.load(open(f.name))
            except ValueError:
                raise AssertionError(f"no JSON ledger; exit {p.returncode}: {p.stdout[-300:]}")
        return p, led
    return run


def make_uring_issue_test(workload, how, peer):
    """Bytes sent through a ring are the submitting process's, whichever of its threads issues the
    request: io-wq workers (--async, seen while the run went) and SQPOLL threads are of its thread
    group. With the receiver in its own process, each side's ledger is exact by pid."""
    def t():
        seen = {}
        led = check_tcp_ledger(workload, "64K", 2 if how == "--async" else 1, (how, *peer),
                               runner=traced_watching(seen))
        ring, sender = led["workload"]["io_uring"], led["workload"]["sender_pid"]
        want = "iou-wrk-" if how == "--async" else "iou-sqp-"
        assert ring["async" if how == "--async" else "sqpoll"], ring
        assert want in seen.get(sender, ()), (want, sender, seen)
        if how == "--sqpoll":
            assert ring["sqpoll_threads"] == 1, ring
        if peer:
            check_sides(led)
    t.__name__ = f"uring_{how[2:]}_{workload}_{peer[1] if peer else 'thread'}"
    return t


def uring_sendzc_without_usage_reports():
    """Most applications do not ask io_uring whether their zerocopy data was copied: the copies on
    delivery are still counted, from the skbs, and no notification is taken to say copied."""
    led = check_tcp_ledger("uring-sendzc", "64K", 1, ("--no-usage-report",))
    zc = led["workload"]["zerocopy"]
    assert zc["usage_reports"] is False and zc["notices_copied"] is None, zc
    assert zc["usage_reports_why"] == "not asked (--no-usage-report)", zc
    assert_eq("deferred_copy without usage reports", site_bytes(led, "deferred_copy"),
              deferred_want(led, led["workload"]["bytes"]))


def uring_options_only_for_uring():
    """--async and --sqpoll belong to the uring-* workloads: another workload refuses them by name,
    in one line, before anything runs."""
    for args in (["tcp-onecopy", "--async"], ["tcp-zerocopy", "--sqpoll"]):
        p = zctrace("run", "--no-hist", *args)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        assert p.returncode == 2 and len(lines) == 1 and f"{args[1]} is not an option" in lines[0], \
            (args, p.returncode, p.stderr)


def uring_notices_fall_back():
    """Without the io_uring_complete tracepoint (simulated with ZCTRACE_REFUSE) zc_notices falls back
    to the error queue alone: MSG_ZEROCOPY's notices stay exact, and io_uring's notifications are
    not claimed: the check against the workload's count fails, it does not pass on 0 = 0."""
    env = refused(["tp_btf:io_uring_complete"])
    p = subprocess.run([ZCTRACE, "probes"], capture_output=True, text=True, timeout=TIMEOUT, env=env)
    block = re.search(r"^zc_notices\s.*?(?=^\w)", p.stdout, re.M | re.S).group(0)
    assert "io_uring_complete (SEND_ZC" not in block.splitlines()[0], block
    assert "tp_btf:io_uring_complete: refused by ZCTRACE_REFUSE" in block, block
    for w, ok in (("tcp-zerocopy", True), ("uring-sendzc", False)):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            r = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, w, "--messages", "100"],
                               capture_output=True, text=True, timeout=TIMEOUT, env=env)
            led = json.load(open(f.name))
        checks = {c["name"]: c for c in led["checks"]}
        notices = checks["zerocopy notices == workload's count"]
        assert notices["ok"] == ok and r.returncode == (0 if ok else 1), (w, r.returncode, notices)
        if not ok:
            assert notices["detail"] == f"kernel 0, workload {led['workload']['zerocopy']['notices']}", notices
            # the bytes themselves do not depend on the notices
            assert_eq("zc_pin", site_bytes(led, "zc_pin"), led["workload"]["bytes"])


# ---- io_uring on files: each request's bytes at the file sites, whoever issues it ----

URING_FILE_SIZE = 5_001_216  # 1221 pages: whole blocks for O_DIRECT, not a multiple of a request
URING_FILE_REQUEST = 65536


def hist_of(led, site):
    """A site's copy sizes, {bucket's lo: copies}, the empty buckets left out."""
    return {b["lo"]: b["count"] for b in led["sites"][site]["hist"] if b["count"]}


def request_hist(led, site, sizes):
    """The copy sizes a site must show for requests of @sizes, one copy each, in its buckets."""
    want = {}
    for n in sizes:
        lo = [b["lo"] for b in led["sites"][site]["hist"] if b["lo"] <= n <= b["hi"]][0]
        want[lo] = want.get(lo, 0) + 1
    return want


def check_uring_file_ledger(*args, extra=(), runner=None, unmeasured=()):
    """uring-file's ledger with @args, exact against the workload's own counts: the bytes its
    requests read and wrote are file_read_copy and file_write_copy (with --direct direct_io, and no
    copy), one copy per request of the request's size, in the boundary account under the
    request's opcode and explained there, and every io_uring_enter() it made is the kernel's count
    in the measured phase. @unmeasured: sites the method asked (extra) cannot measure on this
    kernel, shown as such, whose checks alone fail. Returns the ledger."""
    wargs = ("--file-size", str(URING_FILE_SIZE), *args)
    p, led = runner("uring-file", *wargs) if runner else traced("uring-file", *wargs, extra=extra)
    assert p.returncode == (1 if unmeasured else 0), f"exit {p.returncode}: {p.stdout[-1500:]} {p.stderr[-300:]}"
    wl, ring, direct = led["workload"], led["workload"]["io_uring"], "--direct" in args
    assert wl["verified"] is True, "the workload's own check of the data failed"
    assert_eq("direct", wl["direct"], direct)
    assert_eq("fixed", ring["fixed"], "--fixed" in args)
    assert_eq("vectored", ring["vectored"], "--vectored" in args)
    assert_eq("bytes read", wl["bytes_read"], URING_FILE_SIZE)
    assert_eq("bytes written", wl["bytes_written"], URING_FILE_SIZE)
    # no request came back short: one read and one write per request's worth of the file
    sizes = [URING_FILE_REQUEST] * (URING_FILE_SIZE // URING_FILE_REQUEST) + [URING_FILE_SIZE % URING_FILE_REQUEST]
    assert_eq("reads", ring["reads"], len(sizes))
    assert_eq("writes", ring["writes"], len(sizes))
    want = {"file_read_copy": 0 if direct else wl["bytes_read"],
            "file_write_copy": 0 if direct else wl["bytes_written"],
            "direct_io": wl["bytes_read"] + wl["bytes_written"] if direct else 0}
    want.update({s: 0 for s in NET_SITES + ("kernel_copy", "user_copy", "pipe_write_copy", "pipe_ref",
                                            "pipe_read_copy")})
    for site, n in want.items():
        if site in unmeasured:
            assert led["sites"][site] is None, f"{site}: unmeasured site shown as figures"
            continue
        assert_eq(site, site_bytes(led, site), n)
    copies = {"direct_io": sizes * 2} if direct else {"file_read_copy": sizes, "file_write_copy": sizes}
    for site, each in copies.items():
        assert_eq(f"{site} copies", led["sites"][site]["count"], len(each))
        assert_eq(f"{site} copy sizes", hist_of(led, site), request_hist(led, site, each))
    # the account's rows: the requests' opcodes, on the file as opened, and every byte explained
    op = "_FIXED" if "--fixed" in args else "V" if "--vectored" in args else ""
    kind = "O_DIRECT file" if direct else "regular file"
    rows = {(r["call"], r["file"]): r for r in led["boundary"]["calls"]}
    for call, n in ((f"io_uring READ{op}", wl["bytes_read"]), (f"io_uring WRITE{op}", wl["bytes_written"])):
        row = rows.get((call, kind))
        assert row and row["bytes"] == n and row["calls"] == len(sizes), (call, kind, rows)
    assert_eq("unattributed", led["unattributed"], 0)
    calls = wl["calls"]["io_uring_enter"]
    assert_eq("io_uring_enter calls", led["phase_syscalls"].get("io_uring_enter", 0), calls)
    assert_eq("io_uring_enter calls per chunk", calls, 2 * len(sizes))
    failed = [c for c in led["checks"] if not c["ok"]]
    assert all(c["name"].split(" ")[0] in unmeasured and "not measured" in c["detail"] for c in failed), failed
    return led


def make_uring_file_test(*args):
    """uring-file's ledger holds exactly with @args (check_uring_file_ledger())."""
    def t():
        led = check_uring_file_ledger(*args)
        if "--cache" in args:
            pages = led["workload"]["source"]["pages"]
            assert led["page_cache"]["source_pages_added"] * 100 >= pages * 99, led["page_cache"]
    t.__name__ = "uring_file_" + ("_".join(a.strip("-") for a in args) or "buffered")
    return t


def make_uring_file_issue_test(how):
    """The requests' bytes are the submitting process's whichever of its threads issues them: io-wq
    workers (--async) and the SQPOLL thread (--sqpoll), seen while the run went, are of its thread
    group; buffered and O_DIRECT alike."""
    def t():
        for direct in ((), ("--direct",)):
            seen = {}
            led = check_uring_file_ledger(how, *direct, runner=traced_watching(seen))
            want = "iou-wrk-" if how == "--async" else "iou-sqp-"
            assert_eq("issued by", led["workload"]["io_uring"]["issue"], how[2:])
            assert any(want in kinds for kinds in seen.values()), (want, seen)
            # one process holds every byte: the workload's, its io_uring threads' counted in it
            procs = [p for p in led["by_process"] if any(v["bytes"] for v in p["sites"].values())]
            assert len(procs) == 1 and procs[0]["comm"] == "uring-file" and want in seen.get(procs[0]["pid"], ()), \
                (procs, seen)
            for site in ("file_read_copy", "file_write_copy", "direct_io"):
                assert_eq(f"{site} of the process", procs[0]["sites"][site]["bytes"], site_bytes(led, site))
    t.__name__ = f"uring_file_{how[2:]}"
    return t


def make_uring_file_method_test(method):
    """uring-file's ledger is exact through each method's file probes (buffered and O_DIRECT): the
    copies inside a syscall are theirs, the io_uring requests' are counted at their completion, and
    nothing twice. A method this kernel refuses is run in the guests instead."""
    want_method = {"fentry": "fentry", "kprobe": "kprobe", "tracepoint": "tp_btf"}[method]

    def t():
        chosen, out = probes_by_method(method)
        if any(chosen.get(s) != want_method for s in ("file_read_copy", "file_write_copy")):
            if not KERNEL:
                raise Skip(f"{method} refused for the file sites here; run in the guests")
            raise AssertionError(f"{method} not used on {KERNEL}:\n{out}")
        for site in ("file_read_copy", "file_write_copy", "direct_io"):
            line = re.search(rf"^{site}\s.*$", out, re.M).group(0)
            assert "io_uring_complete" in line, line
        unmeasured = [s for s in COPY_SITES if chosen[s] == "none"]
        for args in ((), ("--direct",)):
            led = check_uring_file_ledger(*args, extra=("--method", method), unmeasured=unmeasured)
            for site in ("file_read_copy", "file_write_copy"):
                assert_eq(f"{site} method", led["probes"][site], want_method)
    t.__name__ = f"uring_file_method_{method}"
    return t


def uring_file_without_completions():
    """Without the io_uring_complete tracepoint (simulated with ZCTRACE_REFUSE) the file sites fall
    back to their candidates without it and say so: the syscalls' copies are still counted, and
    uring-file's ledger fails against the workload's count, it does not pass on what was unseen."""
    env = refused(["tp_btf:io_uring_complete"])
    p = subprocess.run([ZCTRACE, "probes"], capture_output=True, text=True, timeout=TIMEOUT, env=env)
    for site in ("file_read_copy", "file_write_copy", "direct_io"):
        block = re.search(rf"^{site}\s.*?(?=^\w)", p.stdout, re.M | re.S).group(0)
        assert "io_uring_complete" not in block.splitlines()[0], block
        assert "tp_btf:io_uring_complete: refused by ZCTRACE_REFUSE" in block, block
    p, led = traced("uring-file", "--file-size", str(URING_FILE_SIZE), env=env)
    assert p.returncode == 1, f"exit {p.returncode}"
    failed = {c["name"]: c for c in led["checks"] if not c["ok"]}
    assert set(failed) == {"file_read_copy bytes == bytes read", "file_write_copy bytes == bytes written"}, failed
    for c in failed.values():
        assert c["detail"].startswith(f"kernel 0, expected {URING_FILE_SIZE} "), c
    p, led = traced("file-readwrite", "--file-size", str(URING_FILE_SIZE), env=env)
    assert p.returncode == 0, f"exit {p.returncode}: {p.stdout[-1200:]}"


def uring_file_command_explained():
    """A command doing buffered io_uring file I/O (the uring-file program, run as a command: its
    whole run traced, the files' making and checking too): the account's io_uring READ and WRITE
    rows on regular files are the program's own counts, and the file sites hold every byte of the
    program's own reads and writes, io_uring's and the others, to the byte: nothing is unattributed.
    The one exception is none of the program's: where file_read_copy is counted inside
    filemap_read() (fentry, kprobes), the dynamic loader's reads of the libraries on a filesystem
    whose reads bypass the page cache (the guests' shared root) have no copy to see."""
    for args in ((), ("--async",)):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            p = zctrace("run", "--no-hist", "--json", f.name, "--", os.path.join(WORKLOADS, "uring-file"),
                        "--file-size", str(URING_FILE_SIZE), *args)
            led = json.load(open(f.name))
        assert p.returncode == 0, f"exit {p.returncode}: {p.stdout[-1500:]} {p.stderr[-300:]}"
        # the program's own report, on its first line: no zctrace pipe for a command's
        own = json.loads(p.stdout.splitlines()[0])
        rows = {(r["call"], r["file"]): r for r in led["boundary"]["calls"]}
        for call, n in (("io_uring READ", own["bytes_read"]), ("io_uring WRITE", own["bytes_written"])):
            row = rows.get((call, "regular file"))
            assert row and row["bytes"] == n == URING_FILE_SIZE, (call, rows)

        def reg(*calls):
            return sum(r["bytes"] for (c, t), r in rows.items() if t == "regular file" and c in calls)
        groups = {g["group"]: g for g in led["boundary"]["groups"]}
        # reads: the program's own (io_uring's, and the check's pread64 of the copy), then the
        # loader's read() and pread64() of the libraries' headers, a few KiB
        reads, own_reads = groups["regular file read"], reg("io_uring READ") + URING_FILE_SIZE
        loader = reads["account_bytes"] - own_reads
        assert_eq("regular file reads", reads["account_bytes"], reg("io_uring READ", "pread64", "read"))
        assert 0 < loader < 65536 and reg("pread64") >= URING_FILE_SIZE, (reads, rows)
        unseen = reads["unattributed"]
        assert unseen == 0 or (unseen == loader and led["probes"]["file_read_copy"] in ("fentry", "kprobe")), \
            (reads, rows, led["probes"]["file_read_copy"])
        assert_eq("file_read_copy", site_bytes(led, "file_read_copy"), reads["account_bytes"] - unseen)
        # writes: io_uring's and the source's filling write()
        writes = groups["regular file write"]
        assert_eq("regular file writes", writes["account_bytes"], reg("io_uring WRITE", "write"))
        assert_eq("file_write_copy", site_bytes(led, "file_write_copy"), writes["account_bytes"])
        assert reads["sites_beyond_calls"] == 0 and writes["unattributed"] == writes["sites_beyond_calls"] == 0, \
            (reads, writes)
        assert_eq("unattributed", led["unattributed"], unseen)
        assert all(c["ok"] for c in led["checks"]), [c for c in led["checks"] if not c["ok"]]


URING_FILE_TESTS = [make_uring_file_test(), make_uring_file_test("--cache", "cold"),
                    make_uring_file_test("--direct"), make_uring_file_test("--fixed"),
                    make_uring_file_test("--direct", "--fixed"), make_uring_file_test("--vectored"),
                    make_uring_file_test("--direct", "--vectored"), make_uring_file_issue_test("--async"),
                    make_uring_file_issue_test("--sqpoll"), make_uring_file_method_test("fentry"),
                    make_uring_file_method_test("kprobe"), make_uring_file_method_test("tracepoint"),
                    uring_file_without_completions, uring_file_command_explained]


def netns_serve_ledgers():
    for w in ("serve-readsend", "serve-sendfile"):
        before = our_net_objects()
        p, led = traced(w, "--file-size", "32M", "--chunk", "64K", "--threads", "2", "--netns")
        assert p.returncode == 0, f"{w}: exit {p.returncode}: {p.stdout[-1500:]} {p.stderr[-300:]}"
        assert all(c["ok"] for c in led["checks"]), [c for c in led["checks"] if not c["ok"]]
        assert_eq(f"{w} bytes", led["workload"]["bytes"], 2 * (32 << 20))
        assert led["workload"]["verified"], led["workload"]
        check_veth(led)
        assert_eq("namespaces and links left", our_net_objects(), before)


def check_remote_fileread(pattern, peer, cache="warm", size="64K"):
    before = our_net_objects()
    p, led = traced("remote-fileread", "--file-size", "32M", "--size", size, "--pattern", pattern,
                    "--cache", cache, *peer)
    assert p.returncode == 0, f"exit {p.returncode}: {p.stdout[-1500:]} {p.stderr[-300:]}"
    assert all(c["ok"] for c in led["checks"]), [c for c in led["checks"] if not c["ok"]]
    wl = led["workload"]
    blocks = (32 << 20) // SIZES.get(size, 4096)
    assert_eq("bytes served", wl["bytes"], 32 << 20)
    assert_eq("bytes received", wl["bytes_received"], 32 << 20)
    assert_eq("requests", wl["messages"], blocks)
    assert_eq("request bytes", wl["request_bytes"], 16 * blocks)
    assert wl["verified"] and wl["pattern"] == pattern, wl
    assert_eq("file_read_copy", site_bytes(led, "file_read_copy"), wl["bytes"])
    assert_eq("send_copy", site_bytes(led, "send_copy"), wl["bytes"] + wl["request_bytes"])
    assert_eq("recv_copy", site_bytes(led, "recv_copy"), wl["bytes_received"] + wl["request_bytes"])
    assert_eq("pread64 calls", led["phase_syscalls"]["pread64"], wl["calls"]["pread64"])
    for site in PIPE_SITES:  # the client's start (an end of file) and its result cross no pipe
        assert_eq(site, site_bytes(led, site), 0)
    assert wl["ms_per_mib"] > 0, wl
    if peer:
        check_veth(led) if "--netns" in peer else check_sides(led, wl["request_bytes"])
    assert_eq("namespaces and links left", our_net_objects(), before)
    return led


def make_remote_fileread_test(pattern, peer, cache="warm"):
    def t():
        check_remote_fileread(pattern, peer, cache)
    where = "netns" if "--netns" in peer else peer[1] if peer else "thread"
    t.__name__ = f"remote_fileread_{pattern}_{where}_{cache}"
    return t


# ---- pipes: exact ledgers ----

def pipe_copy_thread():
    """Writer and reader threads of one process, two pipes: user->pipe and pipe->user, exactly."""
    led = check_pipe_ledger("pipe-copy", "64K", 2)
    wl = led["workload"]
    assert wl["peer"] == "thread" and wl["sender_pid"] == wl["receiver_pid"] and wl["verified"], wl
    assert led["phase_syscalls"]["write"] >= 2 * PIPE_MESSAGES, led["phase_syscalls"]


def pipe_copy_process():
    """The readers in a child process: each end's ledger by pid, nothing the other way, and the
    child's result (shared memory) crosses no pipe."""
    led = check_pipe_ledger("pipe-copy", "1M", 2, ("--peer", "process"))
    check_pipe_ends(led)


def pipe_vmsplice_loopback():
    """vmsplice into a pipe, splice into the socket: page references twice, one copy (the receive)."""
    led = check_pipe_ledger("pipe-vmsplice", "64K", 2)
    calls = led["phase_syscalls"]
    assert calls["vmsplice"] >= 2 * PIPE_MESSAGES and calls["splice"] >= calls["vmsplice"], calls


def pipe_vmsplice_netns():
    """The same over veth, the receiver in its own namespace: each side's ledger by pid."""
    before = our_net_objects()
    led = check_pipe_ledger("pipe-vmsplice", "64K", 1, ("--netns",))
    check_veth(led)
    assert_eq("namespaces and links left", our_net_objects(), before)


def pipe_workload_bad_options():
    """pipe-copy's readers are on this host: --peer netns, --netns and --port are refused by name."""
    for args, msg in ((["--peer", "netns"], "invalid --peer 'netns' (thread or process)"),
                      (["--netns"], "--netns is not an option"), (["--port", "9"], "--port is not an option")):
        p = zctrace("run", "--no-hist", "pipe-copy", *args)
        assert p.returncode == 2, f"{args}: exit {p.returncode}"
        assert msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, f"{args}: {p.stderr!r}"


def pipe_sites_by_raw_tp():
    """Where tp_btf is refused at the syscalls, the pipe sites that count from the syscall's return
    use raw_tp sys_exit, entered by the syscalls probe's own raw_tp sys_enter: as exact (pipe_ref
    and pipe_read_copy, whose better flavours need the syscall too; pipe_write_copy keeps fexit or
    kretprobe where the kernel has them). The file sites have no raw_tp flavour: not measured."""
    env = refused(["tp_btf:sys_enter", "tp_btf:sys_exit"])
    led = check_pipe_ledger("pipe-copy", "64K", 2, ("--peer", "process"), unmeasured=FILE_SITES, env=env)
    check_pipe_ends(led)
    probes = led["probes"]
    assert {probes[s] for s in ("pipe_ref", "pipe_read_copy", "syscalls")} == {"raw_tp"}, probes
    assert probes["pipe_write_copy"] == ("raw_tp" if best_method("pipe_write_copy")[0] == "tp_btf"
                                         else best_method("pipe_write_copy")[0]), probes
    led = check_pipe_ledger("pipe-vmsplice", "64K", 1, unmeasured=FILE_SITES, env=env)
    assert led["probes"]["pipe_ref"] == "raw_tp", led["probes"]


def pipe_workloads_listed_and_swept():
    """zctrace list shows both pipe workloads with their expectation; a sweep over sizes and threads
    runs them, every row ok, its pipe columns the payload exactly."""
    p = zctrace("list")
    assert p.returncode == 0, p.stderr
    for w in PIPE_EXPECT:
        assert re.search(rf"^{w}\s", p.stdout, re.M), p.stdout[-2000:]
    out = os.path.join(scratch, "pipes.csv")
    p = sweep("pipe-copy,pipe-vmsplice", "--sizes", "4K,64K", "--threads", "1,2", "--messages", "100", "-o", out)
    assert p.returncode == 0, p.stdout[-800:] + p.stderr[-800:]
    _, rows = read_csv(out)
    assert_eq("rows", len(rows), 8)
    for r in rows:
        assert r["status"] == "ok" and r["checks_failed"] == "0", r
        payload = 100 * int(r["threads"]) * int(r["size"])
        copies = {"pipe-copy": ("pipe_write_copy", "pipe_read_copy"), "pipe-vmsplice": ("pipe_ref", "splice_ref")}
        for site in PIPE_SITES + ("splice_ref",):
            assert_eq(f"{r['workload']} {r['size']} {site}", int(r[f"{site}_bytes"]),
                      payload if site in copies[r["workload"]] else 0)


def pipe_report_without_phase():
    """With --no-phase the workload's report to zctrace (its result pipe) is a pipe write of the
    run: pipe_write_copy is exactly its length, which the check adds to what it expects."""
    p, led = traced("tcp-onecopy", "--size", "4K", "--messages", "100", extra=("--no-phase",))
    assert p.returncode == 0, p.stdout[-1200:]
    got = site_bytes(led, "pipe_write_copy")
    (c,) = [c for c in led["checks"] if c["name"].startswith("pipe_write_copy bytes")]
    assert c["ok"] and c["name"].endswith("+ its report to zctrace"), c
    assert got > 100 and f"kernel {got}, expected {got} " in c["detail"], (got, c)
    assert_eq("pipe_write_copy count (one report)", led["sites"]["pipe_write_copy"]["count"], 1)
    assert_eq("pipe_read_copy (zctrace reads it, untraced)", site_bytes(led, "pipe_read_copy"), 0)


PIPE_TESTS = [pipe_copy_thread, pipe_copy_process, pipe_vmsplice_loopback, pipe_vmsplice_netns,
              pipe_workload_bad_options, pipe_sites_by_raw_tp, pipe_workloads_listed_and_swept, pipe_paths_exact,
              pipe_report_without_phase]


# ---- UDP and Unix sockets: exact ledgers ----

# site -> "sent" or "received"; every site not named must show 0
SOCK_EXPECT = {
    "udp-copy": {"udp_send_copy": "sent", "udp_recv_copy": "received"},
    "udp-zerocopy": {"zc_pin": "sent", "deferred_copy": "sent", "udp_recv_copy": "received"},
    "unix-stream": {"unix_send_copy": "sent", "unix_recv_copy": "received"},
}
# the boundary groups each one's calls fall in: (send group, receive group)
SOCK_GROUPS = {"udp-copy": ("TCP/UDP send", "UDP receive"), "udp-zerocopy": ("TCP/UDP send", "UDP receive"),
               "unix-stream": ("Unix socket send", "Unix socket receive")}
SOCK_SIZES = {"udp-copy": 1400, "udp-zerocopy": 1400, "unix-stream": 65536}
SOCK_MESSAGES = 1000


def have_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def check_sock_ledger(workload, threads=1, args=(), size=None, per_send=1):
    """@workload's ledger, every site exact against the workload's own counts, its boundary calls
    all explained, and (UDP) every datagram received: none lost."""
    size = size or SOCK_SIZES[workload]
    p, led = traced(workload, "--size", str(size), "--threads", str(threads), "--messages", str(SOCK_MESSAGES),
                    *args)
    failed = [c for c in led["checks"] if not c["ok"]]
    assert p.returncode == 0, f"exit {p.returncode}: {failed} {p.stderr[-300:]}"
    wl = led["workload"]
    n = SOCK_MESSAGES * threads
    assert_eq("messages", wl["messages"], n)
    assert_eq("workload bytes sent", wl["bytes"], n * size)
    assert_eq("workload bytes received", wl["bytes_received"], wl["bytes"])
    assert wl["verified"], wl
    if "datagrams" in wl:
        dg = wl["datagrams"]
        assert dg["sent"] == dg["received"] == n * per_send and dg["lost"] == 0, dg
    want = {"sent": wl["bytes"], "received": wl["bytes_received"]}
    expect = dict(SOCK_EXPECT[workload])
    if workload == "udp-zerocopy" and not kernel_at_least(5, 19):
        # before 5.19 the kernel copies each datagram's head into the skb (up to MAX_HEADER with
        # the headers) and pins the rest: the same bytes of each
        head = site_bytes(led, "udp_send_copy")
        assert head > 0 and head % (n * per_send) == 0, (head, n * per_send)
        want.update(head=head, pinned=wl["bytes"] - head)
        expect.update(udp_send_copy="head", zc_pin="pinned", deferred_copy="pinned")
    for site in led["sites"]:
        if (site in FILE_SITES or site == "tx_copy") and led["sites"][site] is None:
            continue  # no claim on the file sites (zctrace list); tx_copy: no fentry or kprobes
        assert_eq(site, site_bytes(led, site), want.get(expect.get(site), 0))
    groups = {g["group"]: g for g in led["boundary"]["groups"]}
    snd, rcv = SOCK_GROUPS[workload]
    assert_eq(f"{snd} calls' bytes", groups[snd]["account_bytes"], wl["bytes"])
    assert_eq(f"{rcv} calls' bytes", groups[rcv]["account_bytes"], wl["bytes_received"])
    assert_eq("unattributed", led["unattributed"], 0)
    if "zerocopy" in wl:
        zc, notices = wl["zerocopy"], led["zerocopy_notices"]
        assert_eq("completed calls == sends", zc["completed"], zc["sends"])
        assert_eq("sends", zc["sends"], n)
        assert_eq("notices", notices["notices"], zc["notices"])
        assert_eq("COPIED notices", notices["notices_copied"], zc["notices_copied"])
        assert_eq("completed calls", notices["calls_completed"], zc["completed"])
        assert_eq("bytes of COPIED notices", notices["bytes_copied_notice"], want.get("pinned", wl["bytes"]))
    assert not failed, failed
    return led


def check_sock_ends(led, workload):
    """The receivers in another process: each end's sites under its own pid, nothing the other way."""
    wl = led["workload"]
    procs = {p["role"]: p for p in led["by_process"]}
    snd, rcv = procs["sender"], procs["receiver"]
    assert_eq("sender pid", snd["pid"], wl["sender_pid"])
    assert_eq("receiver pid", rcv["pid"], wl["receiver_pid"])
    assert snd["pid"] != rcv["pid"], (snd["pid"], rcv["pid"])
    for site, what in SOCK_EXPECT[workload].items():
        if site == "deferred_copy":
            continue  # the sender's pinned pages, copied where they were delivered
        ends = {"sender": snd, "receiver": rcv}
        mine = "sender" if what == "sent" else "receiver"
        other = "receiver" if what == "sent" else "sender"
        assert_eq(f"{mine}'s {site}", ends[mine]["sites"][site]["bytes"], wl["bytes" if what == "sent" else "bytes_received"])
        assert_eq(f"{other}'s {site}", ends[other]["sites"][site]["bytes"], 0)
    return snd, rcv


def make_sock_test(workload, threads, peer):
    def t():
        led = check_sock_ledger(workload, threads, ("--peer", peer))
        wl = led["workload"]
        if peer == "process":
            check_sock_ends(led, workload)
        else:
            assert wl["sender_pid"] == wl["receiver_pid"], wl
        if workload != "unix-stream":  # one send call a datagram (with --gso, a send)
            call = "sendmsg" if workload == "udp-zerocopy" else "sendto"
            assert_eq(f"{call} calls", led["phase_syscalls"].get(call, 0), wl["messages"])
    t.__name__ = f"sock_{workload}_{threads}thr_{peer}"
    return t


def make_udp_netns_test(workload, threads, args=(), size=None, per_send=1, name=""):
    def t():
        before = our_net_objects()
        led = check_sock_ledger(workload, threads, ("--netns", *args), size, per_send)
        net = led["network"]
        assert net and net["path"] == "veth" and net["peer"] == "netns", net
        snd, rcv = check_sock_ends(led, workload)
        assert snd["netns"] == net["namespaces"]["sender"] and rcv["netns"] == net["namespaces"]["receiver"], \
            (snd["netns"], rcv["netns"], net)
        assert_eq("namespaces and links left", our_net_objects(), before)
    t.__name__ = f"sock_{workload}_netns_{threads}thr{name}"
    return t


def make_udp_gso_test(workload, peer):
    """60000 bytes a send, cut by the kernel into 43 datagrams of 1400 (the last 1200): the sends'
    bytes exactly, each datagram received alone."""
    def t():
        led = check_sock_ledger(workload, 1, ("--gso", "1400", "--peer", peer), 60000, 43)
        assert_eq("udp_recv_copy count (one a datagram)", led["sites"]["udp_recv_copy"]["count"],
                  43 * SOCK_MESSAGES)
        assert led["workload"]["gso_segment"] == 1400, led["workload"]
    t.__name__ = f"sock_{workload}_gso_{peer}"
    return t


def make_udp_ipv6_test(workload):
    def t():
        if not have_ipv6_loopback():
            raise Skip("no ::1 on this host")
        led = check_sock_ledger(workload, 2, ("--ipv6",))
        assert led["workload"]["ip"] == "IPv6", led["workload"]
    t.__name__ = f"sock_{workload}_ipv6"
    return t


def sock_workload_bad_options():
    """Sizes a datagram cannot have and options a workload does not take: refused by name, in one
    line, before anything is made."""
    cases = [
        (["udp-copy", "--size", "65508"], "udp-copy: --size 65508 is larger than a UDP datagram can be (at most 65507)"),
        (["udp-zerocopy", "--size", "64K"], "--size 65536 is larger than a UDP datagram can be"),
        (["udp-zerocopy", "--gso", "2000"], "--gso 2000 is larger than --size 1400"),
        (["udp-zerocopy", "--size", "60000", "--gso", "500"], "--gso 500 cuts --size 60000 into more than 64 datagrams"),
        (["udp-zerocopy", "--size", "8000", "--gso", "4000", "--netns"],
         "--gso 4000 does not fit the veth link's MTU (at most 1472 bytes a segment)"),
        (["udp-zerocopy", "--size", "4000", "--netns"],
         "udp-zerocopy: --size 4000 does not fit one packet on the veth link (at most 1472 bytes): IP would "
         "fragment it"),
        (["udp-copy", "--gso", "0"], "invalid --gso '0'"),
        (["udp-copy", "--ipv6", "--netns"], "--ipv6 is for loopback (::1)"),
        (["udp-copy", "--port", "9"], "--port is not an option of this workload"),
        (["unix-stream", "--gso", "1400"], "unix-stream: --gso is not an option of this workload"),
        (["unix-stream", "--ipv6"], "--ipv6 is not an option of this workload"),
        (["unix-stream", "--netns"], "--netns is not an option of this workload"),
        (["unix-stream", "--peer", "netns"], "invalid --peer 'netns' (thread or process)"),
        (["tcp-onecopy", "--gso", "1400"], "--gso is not an option of this workload"),
    ]
    before = our_net_objects()
    for args, msg in cases:
        p = zctrace("run", "--no-hist", *args)
        assert p.returncode == 2, f"{args}: exit {p.returncode}"
        assert msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, f"{args}: {p.stderr!r}"
    assert_eq("namespaces and links left", our_net_objects(), before)


def sock_workloads_listed_and_swept():
    """zctrace list shows the socket workloads; a sweep runs them, every row ok, its socket columns
    the payload exactly; a size past a datagram's is refused before any run."""
    p = zctrace("list")
    assert p.returncode == 0, p.stderr
    for w in SOCK_EXPECT:
        assert re.search(rf"^{w}\s", p.stdout, re.M), p.stdout[-2000:]
    out = os.path.join(scratch, "sockets.csv")
    p = sweep(",".join(SOCK_EXPECT), "--sizes", "1400,8K", "--threads", "1,2", "--messages", "100", "-o", out)
    assert p.returncode == 0, p.stdout[-800:] + p.stderr[-800:]
    _, rows = read_csv(out)
    assert_eq("rows", len(rows), 12)
    sites = sorted({s for e in SOCK_EXPECT.values() for s in e} | {"send_copy", "recv_copy"})
    for r in rows:
        assert r["status"] == "ok" and r["checks_failed"] == "0", r
        payload = 100 * int(r["threads"]) * int(r["size"])
        for site in sites:
            assert_eq(f"{r['workload']} {r['size']} {site}", int(r[f"{site}_bytes"]),
                      payload if site in SOCK_EXPECT[r["workload"]] else 0)
    p = sweep("udp-copy", "--messages", "10")
    assert p.returncode == 2 and "udp-copy takes --size up to 65507" in p.stderr, (p.returncode, p.stderr)


SOCK_TESTS = ([make_sock_test(w, t, peer) for w in SOCK_EXPECT for t in (1, 2) for peer in ("thread", "process")]
              + [make_udp_netns_test(w, t) for w in ("udp-copy", "udp-zerocopy") for t in (1, 2)]
              + [make_udp_gso_test("udp-zerocopy", peer) for peer in ("thread", "process")]
              + [make_udp_gso_test("udp-copy", "thread"),
                 make_udp_netns_test("udp-zerocopy", 1, ("--gso", "1400"), 14000, 10, "_gso"),
                 make_udp_ipv6_test("udp-copy"), make_udp_ipv6_test("udp-zerocopy"),
                 sock_workload_bad_options, sock_workloads_listed_and_swept])


def workload_pids(zpid):
    """The workload processes under a zctrace run: its children and theirs."""
    out, todo = [], [zpid]
    while todo:
        pid = todo.pop()
        for tid in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else []:
            try:
                kids = open(f"/proc/{pid}/task/{tid}/children").read().split()
            except OSError:
                kids = []
            out += kids
            todo += kids
    return [int(k) for k in out]


def make_netns_signal_test(sig):
    def t():
        before = our_net_objects()
        z = subprocess.Popen([ZCTRACE, "run", "--no-hist", "tcp-onecopy", "--netns", "--size", "16K",
                              "--duration", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ours = os.readlink("/proc/self/ns/net")
        deadline, inside = time.monotonic() + 20, []
        while time.monotonic() < deadline and len(inside) < 2:
            time.sleep(0.2)
            inside = []
            for pid in workload_pids(z.pid):
                try:
                    ns = os.readlink(f"/proc/{pid}/ns/net")
                except OSError:
                    continue
                if ns != ours:
                    inside.append((pid, ns))
        try:
            assert len({ns for _, ns in inside}) == 2, f"sender and receiver not in two namespaces: {inside}"
            # mid-run: the namespaces are held by descriptor, their names already gone
            assert_eq("names during the run", our_net_objects(), before)
        finally:
            z.send_signal(sig)
            out, err = z.communicate(timeout=60)
        assert "copy ledger" in out, out[-500:]
        assert "stopped by signal" in err, err
        for pid, _ in inside:
            assert not os.path.exists(f"/proc/{pid}"), f"workload process {pid} left running"
        for ino in {ns[5:-1] for _, ns in inside}:
            holders = netns_holders(ino)
            assert holders == [], f"namespace net:[{ino}] still held by {holders}"
        assert_eq("namespaces and links left", our_net_objects(), before)
    t.__name__ = f"netns_{signal.Signals(sig).name.lower()}_leaves_nothing"
    return t


def netns_refused_without_rights():
    """Without CAP_SYS_ADMIN/CAP_NET_ADMIN: one line, a non-zero exit, nothing made."""
    if not shutil.which("setpriv"):
        raise Skip("setpriv (util-linux) not installed")
    before = our_net_objects()
    p = subprocess.run(["setpriv", "--inh-caps=-all", "--bounding-set=-all", ZCTRACE, "run", "tcp-zerocopy",
                        "--netns", "--messages", "10"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "CAP_SYS_ADMIN" in lines[0] and "--netns" in lines[0], p.stderr
    assert p.stdout == "", p.stdout
    assert_eq("namespaces and links left", our_net_objects(), before)


def netns_usage_errors():
    before = our_net_objects()
    for args, what in ((["tcp-onecopy", "--rate", "1gbit"], "needs --netns"),
                       (["tcp-onecopy", "--netns", "--rate", "fast"], "invalid --rate"),
                       (["tcp-onecopy", "--netns", "--delay", "-1ms"], "invalid --delay"),
                       (["tcp-onecopy", "--peer", "router"], "invalid --peer"),
                       (["tcp-onecopy", "--listen", "198.18.3.2"], "invalid --listen"),
                       (["tcp-onecopy", "--connect", "host:5201"], "invalid --connect"),
                       (["tcp-onecopy", "--connect", "198.18.3.2:70000"], "invalid --connect"),
                       (["tcp-onecopy", "--listen", "198.18.3.2:5201", "--connect", "198.18.3.2:5201"],
                        "give one of them"),
                       (["tcp-onecopy", "--connect", "198.18.3.2:5201", "--netns"], "no --peer or --netns"),
                       (["udp-copy", "--connect", "198.18.3.2:5201", "--ipv6"], "no --ipv6"),
                       (["pipe-copy", "--connect", "198.18.3.2:5201"], "not an option"),
                       (["remote-fileread", "--pattern", "zigzag"], "invalid --pattern"),
                       (["remote-fileread", "--threads", "2"], "not an option")):
        p = zctrace("run", *args)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and what in lines[0], (args, p.stderr)
    # a workload without a receiver refuses --netns itself, as it refuses any option not its own
    p = zctrace("run", "--no-hist", "file-readwrite", "--netns")
    assert p.returncode == 2 and "--netns is not an option" in p.stderr, (p.returncode, p.stderr)
    # the workload alone cannot make the namespaces
    p = subprocess.run([os.path.join(WORKLOADS, "tcp-onecopy"), "--netns"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 2 and "zctrace run" in p.stderr, (p.returncode, p.stderr)
    assert_eq("namespaces and links left", our_net_objects(), before)


def remote_ends_across_namespaces():
    """--listen and --connect: one end each, each traced by its own zctrace, as on two hosts. Over
    loopback (tcp-onecopy) and across a veth pair between the host and a namespace the test makes
    (198.18.3.0/30; tcp-zerocopy, uring-sendzc, tcp-sendfile): the sending end's ledger has the send sites and,
    for pinned pages, their copy on delivery in the other end's process (deferred_copy, charged
    to their owner); the receiving end's has recv_copy alone; both are exact, the two reports name
    the same run, the sender learns what the receiver got, and each says it ran once. UDP
    (udp-copy, udp-zerocopy with and without --gso) sends with no window between the two ends: each
    end is exact to its own count, the two agree on what was sent and received, and what was not
    received is counted lost."""
    port = 5471
    tx, rx = remote_ends_run("tcp-onecopy", (), "127.0.0.1", port, ("--threads", "2", "--messages", "500"))
    sent = check_remote_ends(tx, rx, "loopback")
    assert_eq("send_copy", site_bytes(tx[1], "send_copy"), sent)
    ns, a, b = "zcrmt", "198.18.3.1", "198.18.3.2"
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    try:
        for cmd in (["ip", "netns", "add", ns], ["ip", "link", "add", "zcrmt0", "type", "veth", "peer", "name", "zcrmt1"],
                    ["ip", "link", "set", "zcrmt1", "netns", ns], ["ip", "addr", "add", f"{a}/30", "dev", "zcrmt0"],
                    ["ip", "link", "set", "zcrmt0", "up"],
                    ["ip", "-n", ns, "addr", "add", f"{b}/30", "dev", "zcrmt1"], ["ip", "-n", ns, "link", "set", "zcrmt1", "up"],
                    ["ip", "-n", ns, "link", "set", "lo", "up"]):
            subprocess.run(cmd, check=True, capture_output=True, timeout=30)
        for workload in ("tcp-zerocopy", "uring-sendzc", "tcp-sendfile"):
            port += 1
            tx, rx = unskipped_pair(lambda attempt: remote_ends_run(workload, ("ip", "netns", "exec", ns), b,
                                                                    port + 10 * attempt,
                                                                    ("--threads", "2", "--messages", "300")))
            sent = check_remote_ends(tx, rx, "veth")
            assert tx[1]["workload"]["remote"]["dev"] == "zcrmt0", tx[1]["workload"]["remote"]
            assert_eq(f"{workload} send_copy", site_bytes(tx[1], "send_copy"), 0)
            assert_eq(f"{workload} pins and page references",
                      site_bytes(tx[1], "zc_pin") + site_bytes(tx[1], "splice_ref"), sent)
        # UDP: no window between two hosts, so a datagram may be lost; each end exact to its own count
        for workload, extra in (("udp-copy", ()), ("udp-zerocopy", ()), ("udp-zerocopy", ("--gso", "1400", "--size", "14000"))):
            port += 1
            tx, rx = unskipped_pair(lambda attempt: remote_ends_run(workload, ("ip", "netns", "exec", ns), b,
                                                                    port + 10 * attempt,
                                                                    ("--threads", "2", "--messages", "300", *extra)))
            sent = check_remote_udp_ends(tx, rx, "veth")
            if workload == "udp-zerocopy":
                assert_eq(f"{workload} {extra} zc_pin", site_bytes(tx[1], "zc_pin"), sent)
                assert_eq(f"{workload} {extra} udp_send_copy", site_bytes(tx[1], "udp_send_copy"), 0)
        # the two ends must run the same workload: the receiving end says so, and neither run passes
        port += 30
        rx = subprocess.Popen(["ip", "netns", "exec", ns, ZCTRACE, "run", "--no-hist", "tcp-zerocopy", "--listen",
                               f"{b}:{port}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            tx = zctrace("run", "--no-hist", "tcp-onecopy", "--connect", f"{b}:{port}", "--messages", "2000")
            out, err = rx.communicate(timeout=TIMEOUT)
        finally:
            if rx.poll() is None:
                rx.kill()
                rx.communicate()
        assert rx.returncode == 1 and "the sending end runs tcp-onecopy: run the same workload at both ends" in err, \
            (rx.returncode, err[-800:])
        assert tx.returncode != 0, (tx.returncode, tx.stdout[-1500:])
    finally:
        subprocess.run(["ip", "link", "del", "zcrmt0"], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def netns_link_shaping():
    """--rate shapes the sender's veth end (tbf); --delay needs netem, refused clearly without it."""
    led = check_tcp_ledger("tcp-onecopy", "64K", 1, ("--netns", "--rate", "500mbit"))
    gbit = led["workload"]["throughput_gbit_s"]
    assert gbit < 0.55, f"shaped to 500 Mbit/s, measured {gbit:.2f} Gbit/s"
    assert led["network"]["link"] == {"rate": "500mbit", "delay": None}, led["network"]
    before = our_net_objects()
    p = zctrace("run", "--no-hist", "tcp-onecopy", "--netns", "--delay", "1ms", "--messages", "200")
    if p.returncode == 1 and "netem" in p.stderr:
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "CONFIG_NET_SCH_NETEM" in lines[0], p.stderr
    else:
        assert p.returncode == 0, p.stdout[-800:] + p.stderr
    assert_eq("namespaces and links left", our_net_objects(), before)


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
            rc, out, err, held, procs = watched_run(
                ["--", "sh", "-c", f"sleep 300 & echo $! > {f.name}; sleep 3; {how}"], after=1.5)
            bg = int(f.read())
        assert rc == 1, (rc, err)
        assert zctrace_lines(err) == [line], err
        assert "copy ledger" in out and "[FAIL] workload succeeded" in out, out[-800:]
        assert bg in procs, f"background sleep {bg} not seen under zctrace: {procs}"
        assert_nothing_left(held, procs)
    t.__name__ = "robust_command_" + ("crashes" if "kill" in how else "exits_nonzero")
    return t


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


def robust_refused_tracepoint():
    """A tracepoint the kernel lacks (simulated with ZCTRACE_REFUSE): its sites are not supported,
    say why in 'zctrace probes' and the ledger, are null in JSON, and the run goes on; a fallback
    takes over where there is one; the sites every run needs stop it, in one line."""
    env = refused(["tp_btf:tcp_sendmsg_locked"])
    p = subprocess.run([ZCTRACE, "probes"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert re.search(r"^send_copy\s+none\s", p.stdout, re.M), p.stdout
    assert "refused tp_btf: tp_btf:tcp_sendmsg_locked: refused by ZCTRACE_REFUSE" in p.stdout, p.stdout
    assert re.search(r"^recv_copy\s+tp_btf\s", p.stdout, re.M), p.stdout
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "4K",
                            "--messages", "500"], capture_output=True, text=True, env=env, timeout=TIMEOUT)
        led = json.load(open(f.name))
    assert p.returncode == 1, (p.returncode, p.stderr)
    for site in ("send_copy", "zc_pin", "splice_ref", "deferred_copy"):
        assert led["sites"][site] is None, (site, led["sites"][site])
        assert "ZCTRACE_REFUSE" in led["probes_refused"][site], led["probes_refused"]
        assert f"{site} not supported: tp_btf:tcp_sendmsg_locked: refused by ZCTRACE_REFUSE" in p.stdout
    assert re.search(r"^  send_copy +- +not supported", p.stdout, re.M), p.stdout[:1500]
    assert_eq("recv_copy", site_bytes(led, "recv_copy"), led["workload"]["bytes_received"])
    failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
    unattributed = failed.pop("no unattributed bytes", None)
    assert set(failed) == {"send_copy bytes == bytes sent", "zc_pin bytes == 0", "splice_ref bytes == 0",
                           "deferred_copy bytes == 0"}, failed
    assert all("not measured" in d for d in failed.values()), failed
    # the bytes sent are not lost from the ledger: the calls' own account holds them, unattributed
    sent = led["workload"]["bytes"]
    assert unattributed and f"{sent} B no site explains: TCP/UDP send {sent} B (a site not measured)" in unattributed, unattributed
    assert_eq("unattributed", led["unattributed"], sent)
    assert re.search(rf"^  unattributed +- +- +{sent} ", p.stdout, re.M), p.stdout[:2000]

    # sched_switch without BTF typing: raw_tp takes over and counts the same switches
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "4K",
                            "--messages", "500"], capture_output=True, text=True,
                           env=refused(["tp_btf:sched_switch"]), timeout=TIMEOUT)
        led = json.load(open(f.name))
    assert p.returncode == 0 and led["probes"]["sched"] == "raw_tp", (p.returncode, led["probes"])
    assert led["sched"]["switches"] > 0, led["sched"]
    # no sched_switch at all: the scheduler figures are not supported, the byte checks still hold
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "4K",
                            "--messages", "500"], capture_output=True, text=True,
                           env=refused(["tp_btf:sched_switch", "raw_tp:sched_switch"]), timeout=TIMEOUT)
        led = json.load(open(f.name))
    assert p.returncode == 0, (p.returncode, [c for c in led["checks"] if not c["ok"]])
    assert led["sched"] is None and "ZCTRACE_REFUSE" in led["probes_refused"]["sched"], led["probes_refused"]
    assert "kernel (whole run): context switches not supported (raw_tp:sched_switch: refused by ZCTRACE_REFUSE" in p.stdout
    assert_eq("send_copy", site_bytes(led, "send_copy"), led["workload"]["bytes"])
    # without fork/exit tracepoints no process can be followed: the run stops before it starts
    p = subprocess.run([ZCTRACE, "run", "tcp-onecopy"], capture_output=True, text=True,
                       env=refused(["tp_btf:sched_process_fork", "raw_tp:sched_process_fork"]), timeout=60)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode == 1 and p.stdout == "", (p.returncode, p.stdout[:300])
    assert len(lines) == 1 and "no way to attach 'targets'" in lines[0] and "ZCTRACE_REFUSE" in lines[0], p.stderr


def two_passes_figures_and_ledger():
    """A built-in workload runs traced, then untraced: every timing figure is shown from both
    passes with their ratio (text and JSON), the traced pass's ledger still reconciles exactly, and
    --passes traced runs one pass with no such figures."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "4K", "--messages", "2000")
        led = json.load(open(f.name))
    assert p.returncode == 0, (p.returncode, p.stdout[-1500:], p.stderr[-500:])
    eff = led["tracer_effect"]
    figures = {r["figure"]: r for r in eff["figures"]}
    assert set(figures) == {"throughput", "latency p50", "latency p99"}, figures
    for name, r in figures.items():
        assert r["traced"] > 0 and r["untraced"] > 0 and abs(r["ratio"] - r["traced"] / r["untraced"]) < 1e-9, r
    assert eff["untraced_report"]["bytes"] == led["workload"]["bytes"] == 2000 * 4096, eff["untraced_report"]
    assert_eq("send_copy", site_bytes(led, "send_copy"), led["workload"]["bytes"])
    assert_eq("recv_copy", site_bytes(led, "recv_copy"), led["workload"]["bytes_received"])
    t = figures["throughput"]
    # the default report: the ratios in one line
    assert re.search(r"^tracer effect \(traced / untraced, the same run with no BPF program\): throughput %.2f, "
                     r"latency p50 [\d.]+, latency p99 [\d.]+$" % t["ratio"], p.stdout, re.M), \
        ("tracer effect line", p.stdout[:1500])
    # a microbenchmark: each measurement's median from both passes, in the complete report's table
    # (a short run is noisy: the traced pass may come out ahead, and the line says so)
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--full", "--json", f.name, "syscall")
        led = json.load(open(f.name))
    assert p.returncode == 0, (p.returncode, p.stdout[-1500:], p.stderr[-500:])
    names = [r["figure"] for r in led["tracer_effect"]["figures"]]
    assert names == [r["name"] for r in led["workload"]["results"]], names
    assert re.search(r"^  syscall\(SYS_getpid\) +ns +[\d.]+ +[\d.]+ +[\d.]+  (the tracer added|\d+% less traced)",
                     p.stdout, re.M), ("getpid line", p.stdout[:2500])
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--passes", "traced", "--json", f.name, "tcp-onecopy", "--messages", "100")
        led = json.load(open(f.name))
    assert p.returncode == 0 and led["tracer_effect"] is None and "tracer effect" not in p.stdout, \
        (p.returncode, p.stdout[:800], p.stderr[-500:])
    for bad, what in ((("--passes", "twice", "tcp-onecopy"), "unknown --passes 'twice'"),
                      (("--baseline", "tcp-onecopy"), "--baseline is for -- COMMAND")):
        p = zctrace("run", *bad)
        assert p.returncode == 2 and what in p.stderr and p.stdout == "", (bad, p.returncode, p.stderr)


# A default report's line budget (histograms off): every built-in kind, a command and a microbenchmark.
ONE_SCREEN = (("tcp-twocopy", "--messages", "500"), ("tcp-zerocopy", "--messages", "500", "--threads", "2"),
              ("tcp-sendfile", "--messages", "500"), ("udp-zerocopy", "--messages", "300"),
              ("pipe-copy", "--messages", "300"), ("file-readwrite", "--file-size", "4M"),
              ("remote-fileread", "--file-size", "4M"), ("syscall", "--iters", "1000", "--reps", "20"),
              ("--", "sh", "-c", "head -c 300000 /dev/zero | gzip -1 > /dev/null"))


def default_report_fits_one_screen():
    """A default report answers first, on one screen: at most 40 lines with the histograms off for
    every kind of target, the ledger (the sites that counted, one line for the others), CPU copies per
    payload byte where there is a payload, how many checks held and the verdict; --full adds every
    site's row, the boundary account by call, the perf counter table and every check."""
    for args in ONE_SCREEN:
        p = zctrace("run", "--no-hist", *args, timeout=300)
        out = p.stdout.strip("\n").splitlines()
        assert p.returncode == 0, (args, p.returncode, p.stdout[-1500:], p.stderr[-500:])
        assert len(out) <= 40, (args, len(out), p.stdout)
        text = "\n".join(out)
        assert "copy ledger (" in text and re.search(r"^verdict: the ledger matches the expectation$", text, re.M), \
            (args, text)
        assert re.search(r"^checks: (\d+) of \1 held$", text, re.M) and "[ ok ]" not in text, (args, text)
        if args[0] != "--" and args[0] != "syscall":
            assert "CPU copies per payload byte:" in text, (args, text)
        assert not re.search(r"^  \S+ +\S+ +0 +0 ", text, re.M), ("a row of zeros", args, text)
    full = zctrace("run", "--no-hist", "--full", *ONE_SCREEN[0], timeout=300)
    assert full.returncode == 0, full.stderr[-500:]
    for section in ("\nbytes across the user/kernel boundary (", "\nperf counters (", "\nchecks\n  [ ok ] ",
                    "\ntracer effect (the same run once more", "\nscheduler (whole run): "):
        assert section in full.stdout, (section, full.stdout[-2500:])
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--passes", "traced", "--json", f.name, *ONE_SCREEN[0], timeout=300)
        sites = json.load(open(f.name))["sites"]
    assert all(re.search(rf"^  {site} ", full.stdout, re.M) for site in sites), full.stdout[:2500]


def pipeline_processes_named():
    """The processes of a short pipeline are named by what the kernel noted, after they have exited:
    their comms and pids, in the host's namespace, never "other" or "?"."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        src = os.path.join(d, "f")
        with open(src, "wb") as f:
            f.write(os.urandom(1 << 20))
        cmd = ["sh", "-c", f"cat {src} | gzip -1 > {src}.gz"]
        p, led = traced_cmd(cmd)
        text = zctrace("run", "--no-hist", "--", *cmd)
    assert p.returncode == 0 and text.returncode == 0, (p.stderr[-500:], text.stderr[-500:])
    comms = {q["comm"] for q in led["by_process"]}
    assert {"cat", "gzip"} <= comms, led["by_process"]
    assert all(q["netns"] == "host" for q in led["by_process"]), led["by_process"]
    table = text.stdout[text.stdout.index("\nby process ("):]
    rows = re.findall(r"^  (\S+) +(\d+)  (\S+) +\w+_", table, re.M)
    assert {"cat", "gzip"} <= {r[0] for r in rows} and all(r[2] == "host" for r in rows), table
    assert not re.search(r"^  other |  \?  ", table, re.M), table

def nic_short(res, no_sg, tcp=True):
    """What nic_peer.py's traced sender (nic_peer_run()'s @res) has short in its sites: the bytes
    it sent, held by the send's site (zc_pin, udp_send_copy or splice_ref), and over TCP to a
    device without scatter-gather (@no_sg) those sent and retransmitted in tx_copy; or None."""
    p, led = res[0], res[1]
    m = re.search(r"^SEND (\d+) (?:\d+ ){5}(\d+)$", p.stdout, re.M) or re.search(r"^SENDFILE (\d+) (\d+)$", p.stdout, re.M)
    if not m:
        return None
    sent, retrans = map(int, m.groups())
    got = {s: (led["sites"].get(s) or {}).get("bytes", 0) for s in ("zc_pin", "udp_send_copy", "splice_ref", "tx_copy")}
    held = got["zc_pin"] + got["udp_send_copy"] + got["splice_ref"]
    if held < sent:
        return f"the send's sites hold {held} B of {sent} B sent"
    if tcp and no_sg and got["tx_copy"] < sent + retrans:
        return f"tx_copy holds {got['tx_copy']} B of {sent + retrans} B sent and retransmitted"
    return None


# Attempts at a NIC test's traced run (unskipped()): a kprobe program on the transmit path
# (skb_segment, __pskb_pull_tail) is skipped where a softirq sends on a CPU in the middle of another
# kprobe program; rare on a quiet host, it cost 3 runs of 3 on a loaded one (docs/sites-and-kernels.md).
NIC_ATTEMPTS = 5


def nic_peer_run(prog, peer, port, n, size, method, env, ns="zcnic", mode=("send",)):
    """nic_peer.py's receiver behind a NIC pair (in namespace @ns) and its sender (@mode: send,
    udp-send, or sendfile FILE) traced by a command's run: (the run, its JSON ledger, the
    receiver's stdout and stderr)."""
    rx_args = ["udp-recv", peer, str(port), str(n)] if mode[0] == "udp-send" else ["recv", peer, str(port)]
    rx = subprocess.Popen(["ip", "netns", "exec", ns, "/usr/bin/python3", prog, *rx_args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert rx.stdout.readline().strip() == "LISTEN", rx.stderr.read()[-500:]
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            p = zctrace("run", "--no-hist", "--json", f.name, "--method", method, "--",
                        "/usr/bin/python3", prog, mode[0], peer, str(port), str(n), str(size), *mode[1:],
                        env=env)
            led = json.load(open(f.name))
        out, err = rx.communicate(timeout=60)
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.communicate()
    return p, led, out, err


def nic_zerocopy_copied_on_transmit():
    """Across two NICs on one QEMU hub (tools/nic-pair.sh: virtio-net with no vnet header, so the
    device offers neither scatter-gather nor checksum offload), a TCP MSG_ZEROCOPY sender's pages
    are pinned (the route's caps carry software GSO's scatter-gather) and the kernel copies them on
    transmit (skb_segment, __pskb_pull_tail): its notices say COPIED. With fentry and with kprobes
    tx_copy holds exactly the bytes sent and those retransmitted (the socket's TCP_INFO), and the
    notices' bytes are in it; nothing is copied on delivery (deferred_copy 0); the pins, the
    notices and the receiver's bytes are the program's own counts. Where that copy is not counted
    (no tracepoint marks it; simulated here by refusing its attach points), the run never reads
    "the zero-copy send held": the check that holds the COPIED notices' bytes to a copy site fails,
    naming them, and the run exits 1. A run in which the kernel skipped a program's runs says so
    and is made once more, and so is a short one on a kernel that does not count the kprobe runs
    it skips (unskipped())."""
    peer = os.environ.get("ZCTRACE_NIC_PAIR")
    if not peer:
        raise Skip("needs two NICs joined back to back (make test-kernels boots them: tests/device-suite.sh)")
    n, size = 100, 65536
    prog = os.path.join(ROOT, "tests", "nic_peer.py")
    unseen = refused(["fentry:skb_segment", "kprobe:skb_segment"])
    for port, method, env in ((5601, "fentry", None), (5602, "kprobe", None), (5603, "fentry", unseen)):
        p, led, out, err = unskipped(lambda attempt: nic_peer_run(prog, peer, port + 10 * attempt, n, size, method, env),
                                     NIC_ATTEMPTS, short=None if env else lambda res: nic_short(res, True))
        m = re.search(r"^SEND (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M)
        assert m and re.search(r"^RECV (\d+)$", out, re.M), (method, p.stdout[-1500:], p.stderr[-500:], out, err)
        sent, calls, notices, copied_notices, copied_calls, copied_bytes, retrans = map(int, m.groups())
        assert_eq(f"bytes received {method}", int(re.search(r"^RECV (\d+)$", out, re.M).group(1)), sent)
        zn = led["zerocopy_notices"]
        assert_eq(f"notices {method}", zn["notices"], notices)
        assert_eq(f"COPIED notices {method}", zn["notices_copied"], copied_notices)
        assert_eq(f"bytes of COPIED notices {method}", zn["bytes_copied_notice"], copied_bytes)
        # the kernel's notices understate it: skb_segment() copies without clearing the zerocopy flag
        assert "the zero-copy send held" not in p.stdout, p.stdout[-2500:]
        failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
        assert_eq(f"zc_pin {method}", site_bytes(led, "zc_pin"), sent)
        assert_eq(f"deferred_copy {method}", site_bytes(led, "deferred_copy"), 0)
        if not env:
            assert led["probes"]["tx_copy"] == method, (method, led["probes"])
            # a retransmitted segment leaves through the same copy again
            assert_eq(f"tx_copy {method} (sent, and {retrans} B retransmitted)", site_bytes(led, "tx_copy"),
                      sent + retrans)
            assert p.returncode == 0 and not failed, (method, p.returncode, failed)
            assert re.search(r"of the pinned bytes were copied on transmit, for a device without scatter-gather",
                             p.stdout), p.stdout[-2500:]
            understated = re.search(r"^  The kernel's notices say COPIED for .* only: skb_segment\(\) copies", p.stdout, re.M)
            assert bool(understated) == (copied_bytes < sent + retrans), (copied_bytes, sent, retrans, p.stdout[-2500:])
        else:
            assert led["sites"]["tx_copy"] is None, led["sites"]["tx_copy"]
            assert re.search(r"notices say COPIED for [\d.]+ \w+ of the sends, more than any copy site counted",
                             p.stdout), p.stdout[-2500:]
            assert p.returncode == 1 and list(failed) == ["COPIED notices' bytes in a copy site"], (p.returncode, failed)
            assert f"covering {copied_bytes} B; deferred_copy 0 B, tx_copy not measured" in \
                failed["COPIED notices' bytes in a copy site"], failed

def nic_zerocopy_held_on_sg_device():
    """Across two Intel e1000e NICs on one QEMU hub (tools/nic-pair.sh; the device model checksums
    and segments, so the driver offers scatter-gather and TSO), a TCP MSG_ZEROCOPY sender's pinned
    pages leave as they are: with fentry and with kprobes, zc_pin is the bytes sent, nothing is
    copied on transmit or later (tx_copy 0, deferred_copy 0), no notice says COPIED, and zc_path
    shows the skbs handed to that NIC with the user's pages: the bytes sent and retransmitted
    (TCP_INFO). The run says the zero-copy send held, and exits 0."""
    peer = os.environ.get("ZCTRACE_NIC_PAIR_SG")
    if not peer:
        raise Skip("needs two e1000e NICs joined back to back (make test-kernels boots them: tests/device-suite.sh)")
    n, size = 300, 65536
    prog = os.path.join(ROOT, "tests", "nic_peer.py")
    route = subprocess.run(["ip", "-o", "route", "get", peer], capture_output=True, text=True, timeout=30).stdout
    dev = re.search(r" dev (\S+)", route).group(1)
    for port, method in ((5701, "fentry"), (5702, "kprobe")):
        p, led, out, err = unskipped(lambda attempt: nic_peer_run(prog, peer, port + 10 * attempt, n, size, method,
                                                                 None, ns="zcsg"),
                                     NIC_ATTEMPTS, short=lambda res: nic_short(res, False))
        m = re.search(r"^SEND (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M)
        assert m and re.search(r"^RECV (\d+)$", out, re.M), (method, p.stdout[-1500:], p.stderr[-500:], out, err)
        sent, calls, notices, copied_notices, copied_calls, copied_bytes, retrans = map(int, m.groups())
        assert_eq(f"bytes received {method}", int(re.search(r"^RECV (\d+)$", out, re.M).group(1)), sent)
        assert copied_notices == 0 and calls == n, ("the device copied: not the device this test wants", m.groups())
        zn = led["zerocopy_notices"]
        assert_eq(f"notices {method}", zn["notices"], notices)
        assert_eq(f"COPIED notices {method}", zn["notices_copied"], 0)
        assert_eq(f"zc_pin {method}", site_bytes(led, "zc_pin"), sent)
        assert_eq(f"tx_copy {method}", site_bytes(led, "tx_copy"), 0)
        assert_eq(f"deferred_copy {method}", site_bytes(led, "deferred_copy"), 0)
        xmit = [r for r in led["zerocopy_path"] if r["stage"] == "xmit"]
        assert [r["dev"] for r in xmit] == [dev], (dev, led["zerocopy_path"])
        assert_eq(f"zc_path xmit bytes {method} (sent, and {retrans} B retransmitted)", xmit[0]["bytes"],
                  sent + retrans)
        failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
        assert p.returncode == 0 and not failed, (method, p.returncode, failed)
        assert "the zero-copy send held" in p.stdout, p.stdout[-2500:]


def nic_pairs_runs(first_port, mode, tcp=True):
    """For each NIC pair (virtio-net, then e1000e) and method (fentry, kprobe): (namespace, whether
    the device lacks scatter-gather, method, and nic_peer_run()'s run of nic_peer.py @mode, a
    TCP sender's if @tcp)."""
    pairs = [(os.environ.get("ZCTRACE_NIC_PAIR"), "zcnic", True), (os.environ.get("ZCTRACE_NIC_PAIR_SG"), "zcsg", False)]
    if not all(p[0] for p in pairs):
        raise Skip("needs the NIC pairs (make test-kernels boots them: tests/device-suite.sh)")
    prog = os.path.join(ROOT, "tests", "nic_peer.py")
    port = first_port
    for peer, ns, no_sg in pairs:
        for method in ("fentry", "kprobe"):
            port += 10 * NIC_ATTEMPTS
            yield ns, no_sg, method, unskipped(lambda attempt: mode(prog, peer, port + 10 * attempt, method, ns),
                                               NIC_ATTEMPTS, short=lambda res: nic_short(res, no_sg, tcp))


def nic_sendfile_copied_on_transmit():
    """sendfile() over TCP across each NIC pair (tools/nic-pair.sh): page references to the page
    cache go into the socket (splice_ref, the bytes sent); a device without scatter-gather
    (virtio-net here) has the kernel copy them on transmit, counted for the sender in tx_copy (the
    bytes sent and retransmitted, TCP_INFO), while e1000e takes them as they are (tx_copy 0). With
    fentry and with kprobes; nothing copied from user memory (user_copy, send_copy 0)."""
    n, size = 200, 65536
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        src = os.path.join(d, "src")
        runs = list(nic_pairs_runs(5801, lambda prog, peer, port, method, ns: nic_peer_run(
            prog, peer, port, n, size, method, None, ns=ns, mode=("sendfile", src))))
    for ns, copies, method, (p, led, out, err) in runs:
        m = re.search(r"^SENDFILE (\d+) (\d+)$", p.stdout, re.M)
        assert m and re.search(r"^RECV (\d+)$", out, re.M), (ns, method, p.stdout[-1500:], p.stderr[-500:], out, err)
        sent, retrans = map(int, m.groups())
        assert_eq(f"bytes received {ns} {method}", int(re.search(r"^RECV (\d+)$", out, re.M).group(1)), sent)
        assert_eq(f"sent {ns} {method}", sent, n * size)
        assert_eq(f"splice_ref {ns} {method}", site_bytes(led, "splice_ref"), sent)
        assert_eq(f"send_copy {ns} {method}", site_bytes(led, "send_copy"), 0)
        assert led["probes"]["tx_copy"] == method, (method, led["probes"])
        assert_eq(f"tx_copy {ns} {method} (sent, and {retrans} B retransmitted)", site_bytes(led, "tx_copy"),
                  sent + retrans if copies else 0)
        failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
        assert p.returncode == 0 and not failed, (ns, method, p.returncode, failed)


def nic_udp_zerocopy():
    """UDP MSG_ZEROCOPY across each NIC pair (tools/nic-pair.sh), with fentry and with kprobes.
    Over e1000e (scatter-gather, checksum offload) every datagram's pages are pinned: zc_pin is
    the bytes sent, udp_send_copy 0, no notice says COPIED. Over virtio-net (neither) the kernel
    copies each datagram at the send instead (__ip_append_data() drops zerocopy for such a
    device): udp_send_copy is the bytes sent, zc_pin 0, and every notice says COPIED, as the
    program's own count has it; the run never says the zero-copy send held. Nothing is copied on
    transmit or delivery (tx_copy, deferred_copy 0), and the receiver got every byte."""
    n, size = 200, 1400
    for ns, copies, method, (p, led, out, err) in nic_pairs_runs(5901, lambda prog, peer, port, method, ns: nic_peer_run(
            prog, peer, port, n, size, method, None, ns=ns, mode=("udp-send",)), tcp=False):
        m = re.search(r"^SEND (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M)
        assert m and re.search(r"^RECV (\d+)$", out, re.M), (ns, method, p.stdout[-1500:], p.stderr[-500:], out, err)
        sent, calls, notices, copied_notices, copied_calls, copied_bytes, _ = map(int, m.groups())
        assert_eq(f"bytes received {ns} {method}", int(re.search(r"^RECV (\d+)$", out, re.M).group(1)), sent)
        assert_eq(f"sent {ns} {method}", sent, n * size)
        assert_eq(f"calls completed {ns} {method}", calls, n)
        assert_eq(f"COPIED calls {ns} {method} (program)", copied_calls, n if copies else 0)
        zn = led["zerocopy_notices"]
        assert_eq(f"notices {ns} {method}", zn["notices"], notices)
        assert_eq(f"COPIED notices {ns} {method}", zn["notices_copied"], copied_notices)
        assert_eq(f"udp_send_copy {ns} {method}", site_bytes(led, "udp_send_copy"), sent if copies else 0)
        assert_eq(f"zc_pin {ns} {method}", site_bytes(led, "zc_pin"), 0 if copies else sent)
        assert_eq(f"tx_copy {ns} {method}", site_bytes(led, "tx_copy"), 0)
        assert_eq(f"deferred_copy {ns} {method}", site_bytes(led, "deferred_copy"), 0)
        failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
        assert p.returncode == 0 and not failed, (ns, method, p.returncode, failed)
        assert ("the zero-copy send held" in p.stdout) != copies, (ns, method, p.stdout[-2500:])


def nic_remote_ends():
    """The two ends of the built-in workloads across each NIC pair (tools/nic-pair.sh), as on two
    hosts: the receiving end (--listen) behind the second NIC, the sending end (--connect) in the
    root namespace, each traced by its own zctrace (fentry). tcp-zerocopy, uring-sendzc and
    tcp-sendfile: the sender's pinned pages or page references are copied on transmit to the virtio-net device,
    which lacks scatter-gather (tx_copy = the bytes sent and retransmitted, TCP_INFO), and by no
    CPU for e1000e (tx_copy 0); never on delivery (deferred_copy 0); the receiving end's recv_copy
    is what it received. UDP (udp-copy, udp-zerocopy with and without --gso): pinned for e1000e,
    copied at the send for virtio-net (udp_send_copy, every notice COPIED), nothing after. Each
    ledger's own checks hold, and a run whose notices say COPIED never reads "the zero-copy send
    held"."""
    pairs = [(os.environ.get("ZCTRACE_NIC_PAIR"), "zcnic", False), (os.environ.get("ZCTRACE_NIC_PAIR_SG"), "zcsg", True)]
    if not all(p[0] for p in pairs):
        raise Skip("needs the NIC pairs (make test-kernels boots them: tests/device-suite.sh)")
    port = 6301
    for peer, ns, sg in pairs:
        for workload in ("tcp-zerocopy", "uring-sendzc", "tcp-sendfile"):
            port += 30
            tx, rx = unskipped_pair(lambda attempt: remote_ends_run(workload, ("ip", "netns", "exec", ns), peer,
                                                                    port + 10 * attempt,
                                                                    ("--threads", "2", "--messages", "60"),
                                                                    method="fentry"))
            sent = check_remote_ends(tx, rx, "device")
            r = tx[1]["workload"]["remote"]
            assert r["dev_sg"] == sg, (ns, r)
            assert_eq(f"{ns} {workload} tx_copy (sent, and {r['bytes_retransmitted']} B retransmitted)",
                      site_bytes(tx[1], "tx_copy"), 0 if sg else sent + r["bytes_retransmitted"])
            assert_eq(f"{ns} {workload} deferred_copy", site_bytes(tx[1], "deferred_copy"), 0)
            if workload != "tcp-sendfile":
                assert ("the zero-copy send held" in tx[0].stdout) == sg, (ns, workload, tx[0].stdout[-2500:])
        # UDP pins for a device with scatter-gather and checksum offload; for virtio-net here the
        # kernel copies each datagram at the send instead, and every notice says COPIED
        for workload, extra in (("udp-copy", ()), ("udp-zerocopy", ()), ("udp-zerocopy", ("--gso", "1400", "--size", "14000"))):
            port += 30
            tx, rx = unskipped_pair(lambda attempt: remote_ends_run(workload, ("ip", "netns", "exec", ns), peer,
                                                                    port + 10 * attempt,
                                                                    ("--threads", "2", "--messages", "60", *extra),
                                                                    method="fentry"))
            if "--gso" in extra and not sg and tx[0].returncode != 0 and "send: Input/output error" in tx[0].stderr:
                # UDP segmentation needs the device's checksum offload: some kernels (6.1) refuse
                # the send for one without (udp_send_skb(): EIO), and the run says so
                assert tx[1]["workload"]["remote"]["dev_csum"] is False, tx[1]["workload"]["remote"]
                print(f"  ({ns}: the kernel refuses UDP segmentation without checksum offload: EIO)", flush=True)
                continue
            sent = check_remote_udp_ends(tx, rx, "device")
            copies = workload == "udp-copy" or not sg
            assert_eq(f"{ns} {workload} {extra} udp_send_copy", site_bytes(tx[1], "udp_send_copy"), sent if copies else 0)
            assert_eq(f"{ns} {workload} {extra} zc_pin", site_bytes(tx[1], "zc_pin"), 0 if copies else sent)
            for site in ("deferred_copy", "tx_copy"):
                # udp-copy makes no zerocopy send: the transmit path is not followed for it
                if not (workload == "udp-copy" and site == "tx_copy"):
                    assert_eq(f"{ns} {workload} {extra} {site}", site_bytes(tx[1], site), 0)
            if workload == "udp-zerocopy":
                zn = tx[1]["zerocopy_notices"]
                assert_eq(f"{ns} {extra} COPIED notices", zn["notices_copied"], 0 if sg else zn["notices"])
                assert ("the zero-copy send held" in tx[0].stdout) == sg, (ns, workload, tx[0].stdout[-2500:])


def preempt_rt():
    """Whether this kernel is a PREEMPT_RT build."""
    try:
        return open("/sys/kernel/realtime").read().strip() == "1"
    except OSError:
        return "PREEMPT_RT" in os.uname().version


def preempt_rt_passes_fentry_over():
    """On a PREEMPT_RT kernel a thread can be preempted inside an fentry or fexit program, and the
    kernel then skips that program's runs for the next thread on the CPU to reach it (one program
    runs once per CPU at a time): 4-thread zerocopy senders lost hundreds of runs. zctrace takes
    kprobes and tracepoints there, which run with preemption off on RT too, and the raw syscall
    tracepoints rather than fentry on the I/O syscalls: `zctrace probes` says why fentry was passed
    over, and the 4-thread TCP and io_uring zerocopy ledgers are exact with no run skipped.
    --method fentry still takes it: such a run is exact, or it fails the check "no program run
    skipped", which names PREEMPT_RT, and exits non-zero."""
    if not preempt_rt():
        raise Skip("needs a PREEMPT_RT kernel (make test-kernels boots Debian's)")
    p = zctrace("probes")
    assert p.returncode == 0 and "passed over on this PREEMPT_RT kernel" in p.stdout, p.stdout[-2000:]
    chosen = dict(re.findall(r"^(\w+) +(\w+) ", p.stdout, re.M))
    assert "fentry" not in chosen.values(), {s: m for s, m in chosen.items() if m == "fentry"}

    def no_skips(*args):
        p, led = traced_once(*args)
        assert led["program_runs_skipped"]["total"] == 0, led["program_runs_skipped"]
        assert "fentry" not in led["probes"].values(), led["probes"]
        return p, led
    for workload in ("tcp-zerocopy", "uring-sendzc"):
        check_tcp_ledger(workload, "64K", 4, runner=no_skips)
    p, led = traced_once("uring-sendzc", "--size", "64K", "--threads", "4", "--messages", MESSAGES["64K"],
                         extra=("--method", "fentry"))
    assert led["probes"]["send_copy"] == "fentry", led["probes"]
    failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
    if led["program_runs_skipped"]["total"]:
        # the figures the skipped runs would have counted are short: other checks may fail too
        assert p.returncode != 0 and "no program run skipped" in failed, (p.returncode, failed)
        assert "on PREEMPT_RT, fentry programs are preempted" in failed["no program run skipped"], failed
    else:
        assert p.returncode == 0 and not failed, (p.returncode, failed)


def detach_after_the_report_leaves_nothing():
    """zctrace returns once its report is out; a child of its own ('zctrace-detach') holds the last
    references of the links, whose detach waits for the kernel's grace periods, and exits once the
    kernel has let them go: within 10 s no program of the run and no such child is left (but for its
    exit status, where init reaps no orphans), and the child never held the run's stdout (the pipe
    reached its end when zctrace exited)."""
    before = zctrace_programs()
    p = zctrace("run", "--no-hist", "--passes", "traced", "syscall", "--iters", "1000", "--reps", "1")
    assert p.returncode == 0, (p.returncode, p.stderr[-400:])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = zctrace_programs() - before
        children = detach_children()
        if not left and not children:
            return
        time.sleep(0.1)
    raise AssertionError(f"after 10 s: programs {sorted(left)}, detach children {children}")


def floor_attaches_empty_programs():
    """`zctrace floor -- COMMAND`: while the command runs, every program a traced run of it has
    alive is there under the same name, each of 2 instructions (r0 = 0; exit), and nothing else
    of zctrace's; a built-in workload's own figures come out on stdout; the exit status is the
    command's; bad input is one line and exit 2."""
    floor_c = open(os.path.join(ROOT, ".output", "floor.bpf.c")).read()
    names = set(re.findall(r"^int (\w+)\(", floor_c, re.M))
    # a run before this one may still be letting its programs go (its detach child)
    old = {p["id"] for p in json.loads(subprocess.run(LIST_PROGS.split(), capture_output=True, text=True,
                                                      timeout=30).stdout)}
    p = zctrace("floor", "--", "sh", "-c", LIST_PROGS)
    assert p.returncode == 0, (p.returncode, p.stderr)
    floor = zctrace_named(json.loads(p.stdout), names, old)
    old = {p["id"] for p in json.loads(subprocess.run(LIST_PROGS.split(), capture_output=True, text=True,
                                                      timeout=30).stdout)}
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--passes", "traced", "--json", f.name, "--", "sh", "-c",
                    LIST_PROGS + " > " + f.name + ".progs")
        assert p.returncode == 0, (p.returncode, p.stderr[-400:])
        traced = zctrace_named(json.load(open(f.name + ".progs")), names, old)
        os.unlink(f.name + ".progs")
    assert set(floor) == set(traced) and len(floor) > 10, (sorted(floor), sorted(traced))
    assert all(p["bytes_xlated"] == 16 for p in floor.values()), \
        [(n, p["bytes_xlated"]) for n, p in floor.items() if p["bytes_xlated"] != 16]
    assert any(p["bytes_xlated"] > 16 for p in traced.values())
    p = zctrace("floor", "tcp-onecopy", "--size", "4K", "--messages", "300")
    assert p.returncode == 0, (p.returncode, p.stderr)
    wl = json.loads(p.stdout)
    assert wl["bytes"] == wl["bytes_received"] == 300 * 4096, wl
    assert zctrace("floor", "--", "sh", "-c", "exit 3").returncode == 3
    for args, word in (([], "needed"), (["nosuch"], "nosuch"), (["-m", "ebpf", "tcp-onecopy"], "ebpf")):
        p = zctrace("floor", *args)
        lines = [l for l in p.stderr.splitlines() if l.strip() and not l.startswith("Try")]
        assert p.returncode == 2 and len(lines) == 1 and word in lines[0], (args, p.returncode, p.stderr)


def untraced_pass_attaches_nothing():
    """--baseline runs the command traced, then once more untraced: the command itself lists the
    BPF programs alive while it runs, and sees zctrace's only in the first pass; both wall times
    are in the report."""
    probe = "bpftool prog list | grep -cE 'name (sys_exit_btf|io_read_exit)' || true"
    # an earlier run's programs may outlive it by a fraction of a second (its detach child, then
    # the kernel's own deferred release); the counts below compare this run's two passes alone
    deadline = time.monotonic() + 10
    while (detach_children() or zctrace_programs()) and time.monotonic() < deadline:
        time.sleep(0.1)
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--baseline", "--json", f.name, "--", "sh", "-c", probe)
        led = json.load(open(f.name))
    assert p.returncode == 0, (p.returncode, p.stdout[-800:], p.stderr[-400:])
    counts = [int(x) for x in re.findall(r"^(\d+)$", p.stdout, re.M)]
    # the traced pass first, then the untraced one: zctrace's syscall-exit program is gone by then
    # (another run on the machine would show in both counts alike)
    assert len(counts) == 2 and counts[0] == counts[1] + 1, (counts, p.stdout[:400])
    eff = led["tracer_effect"]
    assert eff["wall_s_untraced"] > 0 and eff["wall_s_traced"] > 0, eff
    assert re.search(r"^  wall time: traced [\d.]+ s, untraced [\d.]+ s, ratio [\d.]+$", p.stdout, re.M), p.stdout


def robust_refused_program_falls_back():
    """A program the kernel refuses at load (the verifier) or at attach sets its candidate aside, and
    the run goes on with the next one: the fentry flavour falls back to kprobes where the kernel has
    them (make test-kernels), or the site is not supported, with the kernel's reason, and the other
    sites stay exact."""
    fentry = probes_by_method("fentry")[0]["send_copy"] == "fentry"
    cases = ((("load:tcp_sendmsg_locked_fexit", "send_copy", "load refused: verifier: "),
              ("attach:skb_copy_datagram_iter_fexit", "recv_copy", "attach refused: "))
             if fentry else
             (("load:tcp_sendmsg_locked_btf", "send_copy", "load refused: verifier: "),
              ("attach:skb_copy_datagram_iovec_btf", "recv_copy", "attach refused: ")))
    for point, site, why in cases:
        env = dict(os.environ, ZCTRACE_REFUSE=point)
        prog = point.split(":")[1]
        p = subprocess.run([ZCTRACE, "probes"], capture_output=True, text=True, timeout=TIMEOUT, env=env)
        assert p.returncode == 0, p.stderr
        assert re.search(rf"refused \w+: program {prog}: {why}", p.stdout), p.stdout
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            r = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "64K",
                                "--messages", "100"], capture_output=True, text=True, timeout=TIMEOUT, env=env)
            led = json.load(open(f.name))
        sent = led["workload"]["bytes"]
        other = "recv_copy" if site == "send_copy" else "send_copy"
        assert_eq(f"{other} (not refused)", site_bytes(led, other), sent)
        if fentry:
            assert led["probes"][site] == "kprobe", (point, led["probes"])
            assert_eq(f"{site} through kprobes", site_bytes(led, site), sent)
            assert r.returncode == 0, r.stdout[-1000:]
        else:
            assert led["sites"][site] is None and led["probes"][site] == "none", (point, led["probes"])
            assert r.returncode == 1 and "not measured" in r.stdout, r.stdout[-1000:]


# sendmmsg/recvmmsg through ctypes: 50 calls of 4 messages of 1000 B over TCP, received with
# MSG_WAITFORONE; then one UDP datagram of 1000 B taken by recvmmsg with MSG_TRUNC into 100 B.
MMSG_PROGRAM = r"""
import ctypes, socket
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
class msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.POINTER(iovec)),
                ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
class mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
def vec(n, size):
    bufs = [ctypes.create_string_buffer(b"m" * size, size) for _ in range(n)]
    iovs = [iovec(ctypes.cast(b, ctypes.c_void_p), size) for b in bufs]
    msgs = (mmsghdr * n)()
    for i in range(n):
        msgs[i].hdr.iov, msgs[i].hdr.iovlen = ctypes.pointer(iovs[i]), 1
    return msgs, bufs, iovs
def call(fn, fd, msgs, flags):
    r = fn(fd, msgs, len(msgs), flags, None) if fn is libc.recvmmsg else fn(fd, msgs, len(msgs), flags)
    assert r > 0, ctypes.get_errno()
    return sum(msgs[i].len for i in range(r))
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
sent = got = 0
for _ in range(50):
    m = vec(4, 1000)
    sent += call(libc.sendmmsg, c.fileno(), m[0], 0)
    while got < sent:
        m = vec(4, 1000)
        got += call(libc.recvmmsg, a.fileno(), m[0], 0x10000)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
u.sendto(b"d" * 1000, u.getsockname())
m = vec(1, 100)
trunc = call(libc.recvmmsg, u.fileno(), m[0], socket.MSG_TRUNC)
print("MMSG", sent, got, trunc)
"""


def boundary_mmsg_calls_exact():
    """sendmmsg/recvmmsg return messages: the account reads each message's msg_len, exactly, and
    a recvmmsg with MSG_TRUNC (flags its fourth argument) counts as a call of no known size."""
    p, led = traced_cmd(["/usr/bin/python3", "-c", MMSG_PROGRAM])
    assert p.returncode == 0, p.stdout[-1500:] + p.stderr[-500:]
    sent, got, trunc = map(int, re.search(r"^MMSG (\d+) (\d+) (\d+)$", p.stdout, re.M).groups())
    assert sent == got == 200000 and trunc == 1000, (sent, got, trunc)
    rows = {(r["call"], r["file"]): r for r in led["boundary"]["calls"]}
    snd, rcv = rows[("sendmmsg", "TCP socket")], rows[("recvmmsg", "TCP socket")]
    assert_eq("sendmmsg bytes", snd["bytes"], sent)
    assert_eq("sendmmsg calls", snd["calls"], 50)
    assert_eq("recvmmsg bytes", rcv["bytes"], got)
    assert rcv["unsized_calls"] == 0, rcv
    udp = rows[("recvmmsg", "UDP socket")]
    assert udp["calls"] == 1 and udp["unsized_calls"] == 1 and udp["bytes"] == 0, udp
    assert_eq("send_copy", site_bytes(led, "send_copy"), sent)
    groups = {g["group"]: g for g in led["boundary"]["groups"]}
    assert_eq("TCP/UDP send unattributed", groups["TCP/UDP send"]["unattributed"], 0)
    assert_eq("udp_send_copy", site_bytes(led, "udp_send_copy"), 1000)
    assert_eq("udp_recv_copy", site_bytes(led, "udp_recv_copy"), 0)  # truncated: no size to count
    assert_eq("TCP receive unattributed", groups["TCP receive"]["unattributed"], 0)


# A traced Python program whose descriptor 100 is, round after round, a TCP socket, a UDP socket, a
# pipe and a regular file, each closed before the next takes its number (and, likely, its struct
# file): each sends or writes a size of its own. Run with -B: no bytecode written, and it prints
# nothing, so no other write than these.
FD_REUSE_PROGRAM = r"""
import os, socket, sys, tempfile
n, fd = int(sys.argv[1]), 100
SO_ZEROCOPY, MSG_ZEROCOPY = 60, 0x4000000
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
u_rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u_rx.bind(("127.0.0.1", 0))
path = tempfile.mktemp(dir="/tmp")
def reuse(s):
    os.dup2(s.fileno() if hasattr(s, "fileno") else s, fd)
    s.close() if hasattr(s, "close") else os.close(s)
for _ in range(n):
    t = socket.create_connection(ls.getsockname()); c, _ = ls.accept(); reuse(t)
    s = socket.socket(fileno=fd); s.sendall(b"t" * 3000); s.detach()
    os.write(fd, b"w" * 400)
    got = 0
    while got < 3400:
        got += len(os.read(c.fileno(), 65536))
    c.sendall(b"e" * 400)
    got = 0
    while got < 400:
        got += len(os.read(fd, 400 - got))
    s = socket.socket(fileno=fd); s.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
    assert s.send(b"z" * 400, MSG_ZEROCOPY) == 400; s.detach()
    os.close(fd); c.close()
    reuse(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    s = socket.socket(fileno=fd); s.sendto(b"u" * 400, u_rx.getsockname())
    s.connect(u_rx.getsockname())
    u_rx.sendto(b"r" * 400, s.getsockname()); assert len(s.recv(65536)) == 400
    s.detach()
    os.write(fd, b"v" * 1000); os.close(fd)
    u_rx.recv(65536); u_rx.recv(65536)
    r, w = os.pipe(); reuse(w)
    os.write(fd, b"p" * 700); os.close(fd); os.read(r, 700); os.close(r)
    reuse(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
    os.write(fd, b"f" * 500); os.close(fd)
os.unlink(path)
"""


def boundary_fd_reused_by_another_type():
    """One descriptor number reused round after round by a TCP socket, a UDP socket, a pipe and a
    regular file: each call's bytes land in its own file type's row of the account, exactly (a
    verdict on the descriptor's last file is never reused for the next). A write(), a read() and a
    MSG_ZEROCOPY send() of 400 bytes on the TCP socket, then a sendto() and a recv() of 400 on the
    UDP one on the same descriptor: neither UDP call is taken for TCP's (the mark a TCP send leaves
    for its exit, which neither the write's nor the zerocopy send's exit takes). With the best
    methods and with kprobes at most."""
    n = 200
    for extra in ((), ("--method", "kprobe")):
        p, led = traced_cmd(["/usr/bin/python3", "-B", "-c", FD_REUSE_PROGRAM, str(n)], extra)
        assert p.returncode == 0, p.stdout[-1500:] + p.stderr[-500:]
        rows = {(r["call"], r["file"]): r["bytes"] for r in led["boundary"]["calls"]}
        for key, size in ((("sendto", "TCP socket"), 3800), (("write", "TCP socket"), 400),
                          (("read", "TCP socket"), 3800), (("sendto", "UDP socket"), 800),
                          (("write", "UDP socket"), 1000), (("recvfrom", "UDP socket"), 1800),
                          (("write", "pipe"), 700), (("write", "regular file"), 500)):
            assert_eq(f"{key[0]} on a {key[1]} {extra}", rows.get(key, 0), n * size)
        for site, size in (("udp_send_copy", 1800), ("udp_recv_copy", 1800), ("recv_copy", 3800)):
            assert_eq(f"{site} {extra}", site_bytes(led, site), n * size)
        # the zerocopy send's 400 are pinned on loopback, or copied where the kernel declines
        assert_eq(f"send_copy + zc_pin {extra}", site_bytes(led, "send_copy") + site_bytes(led, "zc_pin"), n * 4200)


# A traced Python program whose receives sleep after their socket has returned, before their
# syscall does: each round's recvfrom() on a TCP and on a UDP socket has its address length on a
# page of a file not in memory (MADV_RANDOM: one page read a fault), which the kernel reads after
# the socket returned the bytes. It prints the bytes each got and its major faults.
SLOW_ADDR_PROGRAM = r"""
import ctypes, mmap, os, resource, socket, sys, tempfile
n = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.recvfrom.restype = ctypes.c_ssize_t
libc.recvfrom.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
pg = mmap.PAGESIZE
fd, path = tempfile.mkstemp(dir="/var/tmp"); os.unlink(path)
os.write(fd, b"\x10" * (pg * 2 * n)); os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
m = mmap.mmap(fd, pg * 2 * n, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m.madvise(mmap.MADV_RANDOM)
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
t = socket.create_connection(ls.getsockname()); c, _ = ls.accept()
u_rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u_rx.bind(("127.0.0.1", 0))
u_tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
buf = ctypes.create_string_buffer(65536)
maj0 = resource.getrusage(resource.RUSAGE_THREAD).ru_majflt
got_t = got_u = 0
for i in range(n):
    ulen = base + i * pg                     # a page not in memory: the fault sleeps on its read
    t.sendall(b"t" * 1000)
    k = 0
    while k < 1000:
        r = libc.recvfrom(c.fileno(), buf, 65536, 0, ulen + 64, ulen)
        assert r > 0, ctypes.get_errno()
        k += r
    got_t += k
    t.sendall(b"d" * 100)                    # discarded unread: MSG_TRUNC on TCP copies nothing
    k = 0
    while k < 100:
        k += len(c.recv(100 - k, socket.MSG_TRUNC))
    u_tx.sendto(b"u" * 400, u_rx.getsockname())
    ulen = base + (n + i) * pg
    r = libc.recvfrom(u_rx.fileno(), buf, 65536, 0, ulen + 64, ulen)
    assert r == 400, (r, ctypes.get_errno())
    got_u += r
maj = resource.getrusage(resource.RUSAGE_THREAD).ru_majflt - maj0
print("SLOW", got_t, got_u, maj)
"""


def boundary_receive_sleeps_before_its_exit():
    """A recvfrom() whose thread sleeps between its socket's return and its syscall's exit (a major
    fault on the address length it writes back), on TCP and on UDP: each call counted once in the
    account, exactly. The socket's return notes its type on the CPU; the sleep takes the note away,
    and the exit reads the descriptor instead of counting the call a second time. Each round also
    discards 100 bytes with a TCP recv(MSG_TRUNC): counted as calls of no known size, not as bytes.
    With the best methods and with kprobes at most."""
    n = 200
    for extra in ((), ("--method", "kprobe")):
        p, led = traced_cmd(["/usr/bin/python3", "-B", "-c", SLOW_ADDR_PROGRAM, str(n)], extra)
        assert p.returncode == 0, p.stdout[-1500:] + p.stderr[-500:]
        got_t, got_u, majflt = map(int, re.search(r"^SLOW (\d+) (\d+) (\d+)$", p.stdout, re.M).groups())
        assert got_t == n * 1000 and got_u == n * 400, (got_t, got_u)
        assert majflt >= 2 * n, f"{majflt} major faults for {2 * n} receives: the file was in memory"
        rows = {(r["call"], r["file"]): r for r in led["boundary"]["calls"]}
        for key, size in ((("recvfrom", "TCP socket"), 1000), (("recvfrom", "UDP socket"), 400)):
            assert_eq(f"{key[0]} on a {key[1]} {extra}", rows[key]["bytes"], n * size)
        # the TCP receives with MSG_TRUNC return what they discarded: calls of no known size
        assert rows[("recvfrom", "TCP socket")]["unsized_calls"] >= n, rows[("recvfrom", "TCP socket")]
        assert_eq(f"recvfrom UDP calls {extra}", rows[("recvfrom", "UDP socket")]["calls"], n)
        assert_eq(f"recv_copy {extra}", site_bytes(led, "recv_copy"), n * 1000)
        assert_eq(f"udp_recv_copy {extra}", site_bytes(led, "udp_recv_copy"), n * 400)


# A traced Python program that moves its payload through UDP, a pipe and Unix sockets (stream and
# datagram), each byte copied in and out once; it prints nothing, so no other pipe bytes.
MIXED_PROGRAM = r"""
import os, socket, sys
n, size = int(sys.argv[1]), int(sys.argv[2])
data = b"p" * size
u_rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u_rx.bind(("127.0.0.1", 0))
u_rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
u_tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r, w = os.pipe()
s1, s2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
d1, d2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
got = 0
for _ in range(n):
    u_tx.sendto(data, u_rx.getsockname()); got += len(u_rx.recv(65536))
    os.write(w, data); got += len(os.read(r, size))
    s1.sendall(data)
    k = 0
    while k < size:
        k += len(s2.recv(size - k))
    got += k
    d1.send(data); got += len(d2.recv(size))
sys.exit(0 if got == 4 * n * size else 1)
"""

MIXED_SITES = {"udp_send_copy": "udp", "udp_recv_copy": "udp", "pipe_write_copy": "pipe",
               "pipe_read_copy": "pipe", "unix_send_copy": "unix", "unix_recv_copy": "unix"}


def traced_python_mixed_paths():
    """`run -- python3 prog.py` moving its payload through UDP, a pipe and Unix stream and datagram
    sockets: each path's send and receive sites hold exactly its bytes, the CPU-copy bytes of those
    sites are twice the payload, TCP's sites are 0 and no socket or pipe byte is unattributed, with
    the best methods and with kprobes at most."""
    n, size = 1000, 1400
    for extra in ((), ("--method", "kprobe")):
        p, led = traced_cmd(["/usr/bin/python3", "-c", MIXED_PROGRAM, str(n), str(size)], extra)
        assert p.returncode == 0, (extra, p.returncode, p.stdout[-1500:])
        want = {"udp": n * size, "pipe": n * size, "unix": 2 * n * size}
        for site, path in MIXED_SITES.items():
            assert_eq(f"{site} {extra}", site_bytes(led, site), want[path])
        assert_eq(f"CPU-copy bytes {extra}", sum(site_bytes(led, s) for s in MIXED_SITES), 2 * 4 * n * size)
        for site in ("send_copy", "recv_copy", "zc_pin", "deferred_copy"):
            assert_eq(f"{site} {extra}", site_bytes(led, site), 0)
        groups = {g["group"]: g for g in led["boundary"]["groups"]}
        for g in ("TCP/UDP send", "UDP receive", "pipe write", "pipe read", "Unix socket send",
                  "Unix socket receive"):
            assert_eq(f"{g} unattributed {extra}", groups[g]["unattributed"], 0)
        assert_eq(f"UDP receive account {extra}", groups["UDP receive"]["account_bytes"], n * size)



# A file written and read back by write()/pwrite64() and read()/preadv(), then the MIXED_PROGRAM
# paths (argv: FILE N SIZE).
FILE_AND_MIXED_PROGRAM = r"""
import os, sys
path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
data = b"f" * size
for i in range(n):
    (os.write(fd, data) if i % 2 else os.pwrite(fd, data, i * size)) == size or sys.exit(2)
os.lseek(fd, 0, os.SEEK_SET)
for i in range(n):
    len(os.read(fd, size) if i % 2 else os.preadv(fd, [bytearray(size)], i * size) and data) == size or sys.exit(3)
os.close(fd); os.unlink(path)
sys.argv[1:] = [str(n), str(size)]
""" + MIXED_PROGRAM.replace("n, size = int(sys.argv[1]), int(sys.argv[2])\n", "")


def io_syscalls_at_their_functions():
    """A command's run follows its I/O syscalls at their own functions (fentry/fexit on
    __x64_sys_read and the rest of the I/O calls) where the kernel allows fentry, not by the raw
    syscall tracepoints, which slow every syscall of the machine: the file, pipe and socket sites
    and the boundary account hold exactly the program's bytes either way, and the syscalls by
    number are "not measured" there; --complete takes the tracepoints and counts them. Where
    fentry is refused (this machine), the tracepoints, and why. On the kernels make test-kernels
    boots, the fentry path must be the one taken."""
    n, size = 400, 1400
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        for extra in ((), ("--complete",)):
            p, led = traced_cmd(["/usr/bin/python3", "-c", FILE_AND_MIXED_PROGRAM, os.path.join(d, "f"),
                                 str(n), str(size)], extra)
            assert p.returncode == 0, (extra, p.returncode, p.stdout[-1500:], p.stderr[-500:])
            want = {"udp": n * size, "pipe": n * size, "unix": 2 * n * size}
            for site, path in MIXED_SITES.items():
                assert_eq(f"{site} {extra}", site_bytes(led, site), want[path])
            # Python reads its own modules too: the program's reads by their calls, preadv's alone
            assert_eq(f"file_write_copy {extra}", site_bytes(led, "file_write_copy"), n * size)
            assert site_bytes(led, "file_read_copy") >= n * size, (extra, site_bytes(led, "file_read_copy"))
            calls = {(r["call"], r["file"]): r for r in led["boundary"]["calls"]}
            # os.preadv() is preadv2 where the C library has it
            for call in (("pwrite64",), ("preadv", "preadv2")):
                assert_eq(f"{call} {extra}", sum(calls[(c, "regular file")]["bytes"] for c in call
                                                  if (c, "regular file") in calls), n // 2 * size)
            groups = {g["group"]: g for g in led["boundary"]["groups"]}
            for g in ("TCP/UDP send", "UDP receive", "pipe write", "pipe read", "Unix socket send",
                      "Unix socket receive"):
                assert_eq(f"{g} unattributed {extra}", groups[g]["unattributed"], 0)
            io = led["probes"]["io_syscalls"]
            if extra:
                assert io == "tracepoint" and led["syscalls_total"] > 8 * n, (io, led.get("syscalls_total"))
                sc = led["syscalls"]
                assert sc["pwrite64"] == n // 2 and sc.get("preadv", 0) + sc.get("preadv2", 0) == n // 2, sc
            elif io == "fentry":
                assert led["syscalls"] is None and "io_syscalls" not in led["probes_refused"], led["probes_refused"]
                assert re.search(r"^syscalls: not measured: only the I/O syscalls are followed", p.stdout, re.M), \
                    p.stdout[-2500:]
            else:
                assert "fentry" in led["probes_refused"]["io_syscalls"], led["probes_refused"]
                assert not os.environ.get("ZCTRACE_KERNEL_UNDER_TEST"), \
                    ("a kernel under test refused fentry on the I/O syscalls", led["probes_refused"]["io_syscalls"])
    p = zctrace("probes", "--command")
    assert p.returncode == 0 and re.search(r"^io_syscalls +(fentry|tp) ", p.stdout, re.M), (p.returncode, p.stdout[-800:])
    if "io_syscalls fentry" not in " ".join(p.stdout.split()):
        return
    # one of them refused at attach: the raw syscall tracepoints then, the same ledger, and why
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--json", f.name, "--", "/usr/bin/python3", "-c", MIXED_PROGRAM, str(n),
                    str(size), env=dict(os.environ, ZCTRACE_REFUSE="attach:io_write_exit"))
        led = json.load(open(f.name))
    assert p.returncode == 0 and led["probes"]["io_syscalls"] == "tracepoint", (p.returncode, led["probes"])
    assert "io_write_exit" in led["probes_refused"]["io_syscalls"] and led["syscalls"], led["probes_refused"]
    for site, path in MIXED_SITES.items():
        assert_eq(f"{site} with io_write_exit refused", site_bytes(led, site), (2 if path == "unix" else 1) * n * size)

# UDP MSG_ZEROCOPY to itself over loopback: N datagrams pinned (SO_ZEROCOPY), then M sends with
# MSG_ZEROCOPY on a socket without SO_ZEROCOPY (the kernel copies them), then K corked pairs
# (MSG_MORE: no checksum offload, so copied though zerocopy was asked); notices reaped.
UDP_ZC_PROGRAM = r"""
import socket, sys
n, m, k, size = map(int, sys.argv[1:5])
SO_ZEROCOPY, MSG_ZEROCOPY = 60, 0x4000000
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); rx.bind(("127.0.0.1", 0))
rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
zc = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); zc.connect(rx.getsockname())
zc.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
plain = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); plain.connect(rx.getsockname())
buf = bytearray(b"z" * size)
pinned = copied = got = notices = 0
def reap():
    global notices
    while True:
        try:
            zc.recvmsg(1, 1024, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT); notices += 1
        except BlockingIOError:
            return
for _ in range(n):
    pinned += zc.sendmsg([buf], [], MSG_ZEROCOPY); got += len(rx.recv(65536)); reap()
for _ in range(m):
    copied += plain.sendmsg([buf], [], MSG_ZEROCOPY); got += len(rx.recv(65536))
for _ in range(k):
    copied += zc.sendmsg([buf[:size // 2]], [], MSG_ZEROCOPY | socket.MSG_MORE)
    copied += zc.sendmsg([buf[size // 2:]], [], MSG_ZEROCOPY); got += len(rx.recv(65536)); reap()
print("UDPZC", pinned, copied, got, notices)
"""


def udp_zerocopy_pins_exact():
    """UDP MSG_ZEROCOPY over loopback: the pinned sends in zc_pin and, copied on delivery, in
    deferred_copy; the sends the kernel copied though MSG_ZEROCOPY was asked (no SO_ZEROCOPY, or
    corked with MSG_MORE) in udp_send_copy; every datagram in udp_recv_copy. With the best methods
    and with kprobes at most. A corked datagram is copied at the send and its page-frag half again
    on delivery: its skb holds the zerocopy ubuf_info all the same."""
    n, m, k, size = 300, 100, 50, 8000
    for extra in ((), ("--method", "kprobe")):
        p, led = traced_cmd(["/usr/bin/python3", "-c", UDP_ZC_PROGRAM, str(n), str(m), str(k), str(size)], extra)
        assert p.returncode == 0, (extra, p.returncode, p.stdout[-1500:])
        pinned, copied, got, notices = map(int, re.search(r"^UDPZC (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M).groups())
        assert pinned == n * size and copied == (m + k) * size and got == pinned + copied, (pinned, copied, got)
        assert_eq(f"zc_pin {extra}", site_bytes(led, "zc_pin"), pinned)
        # a corked datagram's skb carries the ubuf_info too: the half appended into page frags by
        # the second call is copied again on delivery, as the pinned pages are
        assert_eq(f"deferred_copy {extra}", site_bytes(led, "deferred_copy"), pinned + k * (size // 2))
        assert_eq(f"udp_send_copy {extra}", site_bytes(led, "udp_send_copy"), copied)
        assert_eq(f"udp_recv_copy {extra}", site_bytes(led, "udp_recv_copy"), got)
        assert_eq(f"send_copy {extra}", site_bytes(led, "send_copy"), 0)
        groups = {g["group"]: g for g in led["boundary"]["groups"]}
        assert_eq(f"send unattributed {extra}", groups["TCP/UDP send"]["unattributed"], 0)
        assert_eq(f"pins seen late {extra}", led["zerocopy_notices"]["udp_pins_late_bytes"], 0)
        assert not [c for c in led["checks"] if not c["ok"]], (extra, led["checks"])


def unattributed_where_a_site_is_refused():
    """A copy site the kernel lacks (every flavour of recv_copy refused): the bytes the receive
    calls moved stay in the ledger, as unattributed, and the run fails its check."""
    env = refused(["tp_btf:skb_copy_datagram_iovec", "fentry:skb_copy_datagram_iter",
                   "kprobe:skb_copy_datagram_iter"])
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "16K",
                            "--messages", "300"], capture_output=True, text=True, env=env, timeout=TIMEOUT)
        led = json.load(open(f.name))
    assert p.returncode == 1, (p.returncode, p.stdout[-1500:])
    assert led["sites"]["recv_copy"] is None, led["sites"]["recv_copy"]
    got = led["workload"]["bytes_received"]
    assert_eq("unattributed", led["unattributed"], got)
    group = [g for g in led["boundary"]["groups"] if g["group"] == "TCP receive"]
    assert group and group[0]["site_missing"] and group[0]["account_bytes"] == got, led["boundary"]["groups"]
    checks = {c["name"]: c for c in led["checks"]}
    c = checks["no unattributed bytes"]
    assert not c["ok"] and f"TCP receive {got} B (a site not measured)" in c["detail"], c
    assert re.search(rf"^  unattributed +- +- +{got} ", p.stdout, re.M), p.stdout[:2500]
    assert re.search(rf"^  unattributed TCP receive: {got} B of {got} B the calls moved", p.stdout, re.M), p.stdout
    # the sending side is still explained by its site
    assert_eq("send_copy", site_bytes(led, "send_copy"), led["workload"]["bytes"])


def raw_tp_flavours_count_the_same():
    """Where tp_btf is refused, the raw_tp flavours of the target filter, syscalls and page faults
    take over and count the same: every sendmsg of the run, the forked receiver followed."""
    refuse = ["tp_btf:sched_process_fork", "tp_btf:sched_process_exit", "tp_btf:sys_enter",
              "tp_btf:page_fault_user", "tp_btf:page_fault_kernel", "tp_btf:sched_switch"]
    figures = []
    for env in (None, refused(refuse)):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "64K",
                                "--messages", "100", "--peer", "process"], capture_output=True, text=True,
                               env=env, timeout=TIMEOUT)
            led = json.load(open(f.name))
        assert p.returncode == 0, p.stdout[-1500:]
        want = "raw_tp" if env else "tp_btf"
        for site in ("targets", "syscalls", "page_faults", "sched", "boundary"):
            assert led["probes"][site] == want, (site, led["probes"])
        assert_eq(f"unattributed ({want})", led["unattributed"], 0)
        sends = [r for r in led["boundary"]["calls"] if r["call"] == "sendmsg" and r["file"] == "TCP socket"]
        assert sends and sends[0]["bytes"] == led["workload"]["bytes"], (want, led["boundary"]["calls"])
        assert_eq(f"sendmsg calls ({want})", led["phase_syscalls"].get("sendmsg"), 100)
        assert led["processes"] >= 2, f"{want}: the receiving process was not followed"
        assert led["page_faults"]["user"] > 0, led["page_faults"]
        figures.append((led["phase_syscalls"].get("sendmsg"), led["processes"]))
    assert figures[0] == figures[1], figures


def robust_no_btf():
    """A kernel without BTF (simulated with ZCTRACE_BTF=/nonexistent): 'zctrace probes' shows every
    BTF-typed candidate refused and the raw_tp fallbacks; a run stops at once, in one line naming
    BTF, since the CO-RE programs cannot be relocated. ZCTRACE_BTF naming the real BTF works."""
    env = dict(os.environ, ZCTRACE_BTF="/nonexistent")
    p = subprocess.run([ZCTRACE, "probes"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "refused tp_btf: tp_btf:tcp_sendmsg_locked: no kernel BTF (/nonexistent: No such file or directory)" \
        in p.stdout, p.stdout
    for site in ("targets", "sched", "syscalls", "page_faults"):
        assert re.search(rf"^{site}\s+raw_tp\s", p.stdout, re.M), (site, p.stdout)
    assert re.search(r"^send_copy\s+none\s", p.stdout, re.M), p.stdout
    p = subprocess.run([ZCTRACE, "run", "tcp-onecopy"], capture_output=True, text=True, env=env, timeout=60)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode == 1 and p.stdout == "", (p.returncode, p.stdout[:300])
    assert len(lines) == 1 and "no kernel BTF (/nonexistent" in lines[0] and "CONFIG_DEBUG_INFO_BTF" in lines[0], \
        p.stderr
    env = dict(os.environ, ZCTRACE_BTF="/sys/kernel/btf/vmlinux")
    p = subprocess.run([ZCTRACE, "run", "--no-hist", "tcp-onecopy", "--size", "4K", "--messages", "200"],
                       capture_output=True, text=True, env=env, timeout=TIMEOUT)
    assert p.returncode == 0, (p.returncode, p.stderr, p.stdout[-500:])


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


# ---- zctrace export: the census as Prometheus metrics, scraped by a real Prometheus ----

EXPORT_SITES = ("unix_send_copy", "unix_recv_copy")
SCRAPE_S = 1  # Prometheus's scrape interval in these tests
OM_ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, accept=None, timeout=10):
    """(status, content type, body) of a GET; an HTTP error's status too."""
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def wait_for(what, fn, seconds):
    """Polls fn() until it returns something true, for at most @seconds; returns it."""
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except OSError as e:  # not listening yet
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds} s (last: {str(last)[:300]})")


def promtool_check(text):
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), \
        f"promtool check metrics: exit {p.returncode}: {(p.stdout + p.stderr)[:1500]}"


def openmetrics_families(text):
    """The exposition as an independent OpenMetrics parser reads it (it refuses what breaks the spec)."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    return {f.name: f for f in text_string_to_metric_families(text)}


def sample_value(text, name, **labels):
    """The sum of the samples of @name with @labels among theirs, from a text exposition; None
    when there is none."""
    values = []
    for line in text.splitlines():
        if not line.startswith(name + "{") and line.split(" ")[0] != name:
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            values.append(float(line.rsplit(" ", 1)[1]))
    return sum(values) if values else None


def export_exposition_format():
    """The exposition over hand-built census reads (tests/unit/exposition.c): promtool accepts the
    text format 0.0.4, an OpenMetrics parser accepts the OpenMetrics one; the label pairs past the
    bound are folded into other, an exited process's bytes stay in its label's series, the
    histogram's buckets are cumulative up to +Inf == _count, label values escaped; without the
    boundary account there is no unattributed series."""
    run = lambda fmt: subprocess.run([os.path.join(UNIT_TESTS, "exposition"), fmt], capture_output=True,
                                     text=True, timeout=60)
    om, txt = run("openmetrics"), run("text")
    assert om.returncode == 0 and txt.returncode == 0, om.stderr + txt.stderr
    promtool_check(txt.stdout)
    assert om.stdout.endswith("\n# EOF\n") and "# EOF" not in txt.stdout, om.stdout[-200:]
    fams = openmetrics_families(om.stdout)
    for name, typ in (("zctrace_copies", "counter"), ("zctrace_copy_bytes", "counter"),
                      ("zctrace_copy_size_bytes", "histogram"), ("zctrace_site", "info"),
                      ("zctrace_series_folded", "counter"), ("zctrace_census_keys", "gauge")):
        assert name in fams and fams[name].type == typ, (name, fams.get(name))
    assert fams["zctrace_copy_bytes"].unit == "bytes", fams["zctrace_copy_bytes"].unit
    got = {(s.labels["site"], s.labels["comm"], s.labels["cgroup"]): s.value
           for s in fams["zctrace_copy_bytes"].samples}
    assert_eq("nginx, its exited process kept", got[("unix_send_copy", "nginx", "/system.slice/nginx.service")], 1107)
    assert_eq("big, admitted first", got[("send_copy", "big", "/b")], 3 * 65536)
    assert_eq("other: small and mid", got[("send_copy", "other", "other")], 10 + 20 + 4096)
    assert ("pipe_write_copy", 'we"ird\\na\ufffd', "/user.slice") in got or \
        ("pipe_write_copy", 'we"ird\\na?', "/user.slice") in got, got.keys()
    assert_eq("series_folded", fams["zctrace_series_folded"].samples[0].value, 3)
    buckets = [s for s in fams["zctrace_copy_size_bytes"].samples if s.labels.get("site") == "send_copy"]
    bucket_samples = [s for s in buckets if s.name.endswith("_bucket")]
    counts = [s.value for s in bucket_samples]
    assert counts == sorted(counts) and bucket_samples[-1].labels["le"] == "+Inf", bucket_samples[-3:]
    count = next(s.value for s in buckets if s.name.endswith("_count"))
    assert_eq("send_copy +Inf bucket", counts[-1], count)
    assert_eq("send_copy copies", count, 6)
    le = {s.labels["le"]: s.value for s in buckets if s.name.endswith("_bucket")}
    assert_eq("send_copy copies of 64 KiB at le=131071", le["131071"] - le["65535"], 3)
    assert "user_copy" not in {s.labels.get("site") for s in buckets}  # not counted: no histogram
    methods = {s.labels["site"]: s.labels["method"] for s in fams["zctrace_site"].samples}
    assert methods["user_copy"] == "none" and methods["send_copy"] == "tp_btf", methods
    assert "zctrace_unattributed_bytes" in fams, sorted(fams)
    # without the boundary account the unattributed bytes are not measured: no series, never 0
    bare = subprocess.run([os.path.join(UNIT_TESTS, "exposition"), "openmetrics", "no-account"],
                          capture_output=True, text=True, timeout=60)
    assert bare.returncode == 0, bare.stderr
    fams = openmetrics_families(bare.stdout)
    assert "zctrace_unattributed_bytes" not in fams and "zctrace_copy_bytes" in fams, sorted(fams)


def export_usage_errors():
    """A bad --listen is a usage error in one line (exit 2); a port in use is one line naming it
    (exit 1), before anything is loaded."""
    for bad in ("nope", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "::1:9435", "[::1:9435",
                "127.0.0.1:http", "999.1.1.1:9435"):
        p = zctrace("export", "--listen", bad, timeout=30)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and f"invalid --listen '{bad}'" in lines[0], (bad, p.returncode, p.stderr)
    for args in (("--max-series", "0"), ("--interval", "0"), ("--method", "raw"), ("surplus",)):
        p = zctrace("export", *args, timeout=30)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (args, p.returncode, p.stderr)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = zctrace("export", "--listen", f"127.0.0.1:{port}", timeout=30)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1 and lines == [f"zctrace: cannot listen on 127.0.0.1:{port}: Address already in use"], \
        (p.returncode, p.stderr)


def cgroup2_root():
    for line in open("/proc/mounts"):
        f = line.split()
        if f[2] == "cgroup2":
            return f[1]
    raise Skip("no cgroup v2 hierarchy mounted")


class Exporter:
    """'zctrace export' on a free loopback port, until stop(): then it must exit 0 and leave no
    BPF object behind."""

    def __init__(self, *args):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        self.z = subprocess.Popen([ZCTRACE, "export", "--listen", f"127.0.0.1:{self.port}", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for("the exporter serving", lambda: self.z.poll() is not None or http_get(self.url)[0] == 200, 60)
            assert self.z.poll() is None, f"zctrace export ended: exit {self.z.returncode}: {self.z.stderr.read()}"
            self.held = bpf_fds_of(self.z.pid)
            assert self.held["prog"] and self.held["map"], f"no BPF program or map held: {self.held}"
        except BaseException:
            self.kill()
            raise

    def text(self, accept=None):
        status, ctype, body = http_get(self.url, accept)
        assert status == 200, (status, body[:300])
        return ctype, body

    def rss_kib(self):
        return int(re.search(r"^VmRSS:\s+(\d+) kB", open(f"/proc/{self.z.pid}/status").read(), re.M).group(1))

    def kill(self):
        if self.z.poll() is None:
            self.z.kill()
            self.z.communicate()

    def stop(self):
        self.z.send_signal(signal.SIGTERM)
        try:
            out, err = self.z.communicate(timeout=30)
        finally:
            self.kill()
        assert self.z.returncode == 0, f"exit {self.z.returncode}: {err[-500:]}"
        assert zctrace_lines(err)[-1] == "zctrace: stopped by signal 15 (SIGTERM)", err[-500:]
        left = wait_bpf_released(self.held)
        assert left == {}, f"BPF objects of the exporter still loaded: {left}"


class Prometheus:
    """Debian's Prometheus server scraping @target every SCRAPE_S seconds, in a scratch directory."""

    def __init__(self, target):
        if not shutil.which("prometheus"):
            raise AssertionError("no prometheus (tools/install-deps.sh installs it)")
        self.dir = tempfile.mkdtemp(prefix="zctrace-prom-")
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}/api/v1"
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            f.write(f"global:\n  scrape_interval: {SCRAPE_S}s\n  evaluation_interval: {SCRAPE_S}s\n"
                    f"scrape_configs:\n  - job_name: zctrace\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{target}']\n")
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.p = subprocess.Popen(["prometheus", f"--config.file={self.dir}/prometheus.yml",
                                   f"--storage.tsdb.path={self.dir}/data", f"--web.listen-address=127.0.0.1:{self.port}"],
                                  stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_for("prometheus ready", lambda: self.p.poll() is not None or
                     http_get(f"http://127.0.0.1:{self.port}/-/ready")[0] == 200, 60)
            assert self.p.poll() is None, f"prometheus ended: {self.logtail()}"
            wait_for("the exporter scraped", lambda: self.query('up{job="zctrace"} == 1'), 30)
        except BaseException:
            self.stop()
            raise

    def logtail(self):
        self.log.seek(0)
        return self.log.read()[-1500:]

    def query(self, expr, at=None):
        """An instant query's result vector; asserts the API said success."""
        args = {"query": expr, **({"time": f"{at:.3f}"} if at else {})}
        status, _, body = http_get(f"{self.api}/query?{urllib.parse.urlencode(args)}")
        r = json.loads(body)
        assert status == 200 and r["status"] == "success", (expr, status, body[:500])
        return r["data"]["result"]

    def value(self, expr, at=None):
        res = self.query(expr, at)
        assert len(res) <= 1, (expr, res)
        return float(res[0]["value"][1]) if res else None

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# Moves exactly the bytes it is told over a Unix socket pair: a prelude, then (on a line from the
# test) the payload, in chunks; each byte sent once and received once.
UNIX_MOVER = r"""
import socket, sys
prelude, n, chunk = map(int, sys.argv[1:4])
a, b = socket.socketpair()
def move(k):
    while k:
        m = min(chunk, k)
        a.sendall(b"x" * m)
        got = 0
        while got < m:
            got += len(b.recv(m - got))
        k -= m
move(prelude)
print("PRELUDE", flush=True)
sys.stdin.readline()
move(n)
print("DONE", flush=True)
sys.stdin.readline()
"""


class NamedCgroup:
    """A program under a name of its own (its comm: a link to the interpreter) in a cgroup of its own."""

    def __init__(self, prefix):
        self.name = f"{prefix}{os.getpid() % 100000}"
        self.link = os.path.join(scratch, self.name)
        if not os.path.exists(self.link):
            os.symlink(sys.executable, self.link)
        self.cgroup = "/" + self.name
        self.cgdir = cgroup2_root() + self.cgroup
        os.makedirs(self.cgdir, exist_ok=True)

    def popen(self, program, *args):
        def enter():
            with open(os.path.join(self.cgdir, "cgroup.procs"), "w") as f:
                f.write("0")
        return subprocess.Popen([self.link, "-c", program, *map(str, args)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, preexec_fn=enter)

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.cgdir)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)


def export_prometheus_round_trip():
    """The exporter scraped by a real Prometheus every second: a program in a cgroup of its own
    moves a prelude, then N bytes over a Unix socket pair. Prometheus's stored counters for its
    (comm, cgroup) equal the bytes at both Unix sites exactly; increase() over the burst is N
    within one scrape interval's worth at each end of its window (Prometheus extrapolates). The
    live exposition passes promtool (text) and the OpenMetrics parser; SIGTERM: exit 0, nothing left."""
    prelude, n, chunk = 100_000, 8 << 20, 65536
    job = NamedCgroup("zcx-rt-")
    exp = Exporter("--interval", "0.5", "--max-series", "2000")
    prom = wl = None
    try:
        ctype, text = exp.text()
        assert ctype == "text/plain; version=0.0.4; charset=utf-8", ctype
        promtool_check(text)
        ctype, om = exp.text(OM_ACCEPT)
        assert ctype == "application/openmetrics-text; version=1.0.0; charset=utf-8", ctype
        fams = openmetrics_families(om)
        # the census's own cost only on request (--bpf-stats): absent, not 0
        assert fams["zctrace_site"].samples and "zctrace_bpf_run_seconds" not in fams, sorted(fams)
        info = fams["zctrace_census"].samples[0].labels
        assert info["unattributed"] == "none" and "add --complete" in info["why_not"], info
        prom = Prometheus(exp.port)
        wl = job.popen(UNIX_MOVER, prelude, n, chunk)
        assert wl.stdout.readline().strip() == "PRELUDE"
        # by comm, over its cgroup label: a process is named again at every read (see below)
        series = lambda site: f'zctrace_copy_bytes_total{{site="{site}",comm="{job.name}"}}'
        sel = lambda site: f'sum by (comm) ({series(site)})'
        for site in EXPORT_SITES:
            wait_for(f"{site} prelude in Prometheus", lambda: prom.value(sel(site)) == prelude, 30)
        time.sleep(3 * SCRAPE_S)  # the prelude's value held for a few scrapes
        t0 = time.time()
        wl.stdin.write("go\n")
        wl.stdin.flush()
        assert wl.stdout.readline().strip() == "DONE"
        for site in EXPORT_SITES:
            wait_for(f"{site} in Prometheus", lambda: prom.value(sel(site)) == prelude + n, 30)
        time.sleep(3 * SCRAPE_S)
        t1 = time.time()
        window = int(t1 - t0) + 3
        for site in EXPORT_SITES:
            # what Prometheus stored over the window, exactly: its last value less its first
            held = prom.value(f"max_over_time({sel(site)}[{window}s:]) - min_over_time({sel(site)}[{window}s:])", at=t1)
            assert_eq(f"{site} stored over {window}s", held, n)
            # increase() extrapolates the samples' span to the window's: one scrape interval's worth
            inc = prom.value(f"sum by (comm) (increase({series(site)}[{window}s]))", at=t1)
            slack = n * 1.2 * SCRAPE_S / (window - 1.2 * SCRAPE_S)
            assert inc is not None and abs(inc - n) <= slack, \
                f"{site}: increase over {window}s {inc} vs {n} moved (slack {slack:.0f})"
            print(f"  {site}: Prometheus has {prelude + n} B, {n} B over {window}s (exact); increase() "
                  f"{inc:.0f} ({100 * (inc - n) / n:+.1f}%)", flush=True)
        check_dashboard(prom)
        wl.stdin.close()
        assert wl.wait(timeout=30) == 0
        # its cgroup's own series, at the latest once the census has named it as it exited
        wait_for(f"a series with cgroup {job.cgroup}", lambda: prom.query(
            f'zctrace_payload_bytes_total{{comm="{job.name}",cgroup="{job.cgroup}"}}'), 30)
    finally:
        if wl and wl.poll() is None:
            wl.kill()
            wl.wait(timeout=30)
        if prom:
            prom.stop()
        try:
            exp.stop()
        finally:
            job.remove()


DASHBOARD = os.path.join(ROOT, "tools", "grafana", "zctrace.json")


def dashboard_exprs():
    dash = json.load(open(DASHBOARD))
    exprs = []
    def walk(panels):
        for p in panels:
            exprs.extend((p["title"], t["expr"]) for t in p.get("targets", ()))
            walk(p.get("panels", ()))
    walk(dash["panels"])
    return dash, exprs


def check_dashboard(prom):
    """Every PromQL expression of the Grafana dashboard runs against a Prometheus that scrapes
    the exporter ($__rate_interval as Grafana would set it for a 1 s scrape interval)."""
    dash, exprs = dashboard_exprs()
    titles = " ".join(p["title"] for p in dash["panels"])
    for word in ("copies per byte", "pinned", "unattributed"):
        assert word in titles.lower(), (word, titles)
    assert len(exprs) >= 5, exprs
    for title, expr in exprs:
        prom.query(expr.replace("$__rate_interval", "1m"))
    print(f"  {len(exprs)} dashboard expressions ran", flush=True)


# Forks @n children in batches; each moves @size bytes over a socket pair of its own and exits.
# Prints the bytes moved so far after each batch, then waits for a line.
FORK_MOVERS = r"""
import os, socket, sys, time
n, batch, size, pause = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
done = 0
while done < n:
    for _ in range(min(batch, n - done)):
        pid = os.fork()
        if pid == 0:
            a, b = socket.socketpair()
            a.sendall(b"y" * size)
            got = 0
            while got < size:
                got += len(b.recv(size - got))
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0
        done += 1
    print(done * size, flush=True)
    time.sleep(pause)
print("END", flush=True)
sys.stdin.readline()
"""


def export_soak_short_processes():
    """About a minute of short processes, 4000 of them, each moving 100 B over a socket pair of
    its own and exiting: the exporter's totals for their label only grow and end equal to the
    bytes moved, at both Unix sites; its RSS grows by less than 2 MiB over the second half."""
    n, batch, size, pause = 4000, 100, 100, 1.2
    job = NamedCgroup("zcx-soak-")
    exp = Exporter("--interval", "0.5", "--max-series", "2000")
    wl = None
    last = {s: 0 for s in EXPORT_SITES}
    rss = []
    try:
        wl = job.popen(FORK_MOVERS, n, batch, size, pause)
        moved = 0
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            line = wl.stdout.readline().strip()
            if line == "END" or not line:
                break
            moved = int(line)
            text = exp.text()[1]
            for site in EXPORT_SITES:
                v = sample_value(text, "zctrace_copy_bytes_total", site=site, comm=job.name) or 0
                assert v >= last[site] and v <= moved, f"{site}: {v} after {last[site]}, {moved} moved"
                last[site] = v
            rss.append(exp.rss_kib())
        assert line == "END", f"the movers did not finish: {line!r}"
        assert_eq("bytes moved", moved, n * size)
        # every process has exited: one more read or two and the totals are final
        deadline = time.monotonic() + 15
        while True:
            text = exp.text()[1]
            got = {site: sample_value(text, "zctrace_copy_bytes_total", site=site, comm=job.name)
                   for site in EXPORT_SITES}
            if set(got.values()) == {moved} or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        # warm: the second quarter, past the census's and malloc's high-water marks (a read that saw
        # many processes at once keeps its room). The RSS swings by about 2 MiB from one read to the
        # next, so peaks are compared: the second quarter's against the second half's. A leak of 1 KiB
        # a process would still add 2 MiB to the later peak
        warm, end = max(rss[len(rss) // 4:len(rss) // 2]), max(rss[len(rss) // 2:])
        print(f"  {n} processes, {moved} B moved; the exporter's totals {got}; exporter RSS {rss[0]} -> "
              f"{warm} (warm) -> {end} KiB; census evicted {sample_value(text, 'zctrace_census_evicted_total')}, "
              f"dropped {sample_value(text, 'zctrace_census_dropped_total')}", flush=True)
        assert end - warm < 2048, f"RSS grew {end - warm} KiB after warm-up: {rss}"
        for site in EXPORT_SITES:
            assert_eq(f"{site} of {n} processes", got[site], moved)
    finally:
        if wl:
            wl.stdin.close()
            wl.wait(timeout=30)
        try:
            exp.stop()
        finally:
            job.remove()


def export_says_what_it_measures():
    """The exporter's info metrics say how each site is counted, or why it is not, and whether the
    unattributed bytes are measured; --complete adds the boundary account (zctrace_unattributed_bytes,
    the pipe sites); --bpf-stats adds the census's own BPF cost, per program, which a program that
    moves bytes makes grow. Both expositions pass promtool."""
    for extra in ((), ("--complete", "--bpf-stats")):
        exp = Exporter("--interval", "0.2", *extra)
        try:
            prog = subprocess.run(["/usr/bin/python3", "-c", TOP_PROGRAM, "zct-exp-info", "200", "1000"], timeout=60)
            assert prog.returncode == 0, prog.returncode
            time.sleep(0.5)
            text = exp.text()[1]
            promtool_check(text)
            fams = openmetrics_families(exp.text(OM_ACCEPT)[1])
        finally:
            exp.stop()
        sites = {s.labels["site"]: s.labels for s in fams["zctrace_site"].samples}
        info = fams["zctrace_census"].samples[0].labels
        assert sites["unix_send_copy"]["method"] != "none" and sites["unix_send_copy"]["why_not"] == "", sites
        assert sites["user_copy"]["method"] == "none" and sites["user_copy"]["why_not"], sites["user_copy"]
        if extra:
            assert info == {"unattributed": "measured", "why_not": ""}, info
            assert "zctrace_unattributed_bytes" in fams and sites["pipe_write_copy"]["method"] != "none", sites
            events = sum(s.value for s in fams["zctrace_bpf_events"].samples)
            assert events > 0 and any(s.labels["program"] == "census_iter" for s in fams["zctrace_bpf_events"].samples), \
                fams["zctrace_bpf_events"].samples
        else:
            assert info["unattributed"] == "none" and "zctrace_unattributed_bytes" not in fams, info
            assert "zctrace_bpf_events" not in fams, sorted(fams)
            if sites["pipe_write_copy"]["method"] == "none":
                assert sites["pipe_write_copy"]["why_not"] == "not measured: needs the syscall tracepoints (add --complete)", \
                    sites["pipe_write_copy"]


EXPORT_TESTS = [export_exposition_format, export_usage_errors, export_prometheus_round_trip,
                export_says_what_it_measures, export_soak_short_processes]


def top_start(*args, env=None):
    """Starts `zctrace top --json` and waits for its first table: from then on it counts. Its
    tables are read as they come (a thread of their own), so that it never waits on a full pipe."""
    p = subprocess.Popen([ZCTRACE, "top", "--json", "-i", "0.5", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    first = p.stdout.readline()
    if not first:
        p.kill()
        raise AssertionError(f"zctrace top printed nothing: {p.stderr.read()[-500:]}")
    p.tables = []
    p.reader = threading.Thread(target=lambda: p.tables.extend(iter(p.stdout.readline, "")), daemon=True)
    p.reader.start()
    return p


def top_tables_after(p, pids):
    """Waits (60 s at most) until @p's tables have shown each of @pids exited, or said they had nothing
    of theirs; the census reads them at its next interval, under emulation too."""
    deadline, start = time.monotonic() + 60, len(p.tables)
    while time.monotonic() < deadline:
        rows = [r for l in list(p.tables) for r in json.loads(l)["rows"]]
        shown = {r.get("pid") for r in rows}
        # a process with figures shows exited at the latest a read after its exit; three reads
        # after this call, one with none has none
        if all(any(r.get("pid") == pid and r["exited"] for r in rows) or
               (pid not in shown and len(p.tables) >= start + 3) for pid in pids):
            return
        time.sleep(0.2)


def top_stop(p, after=1.5):
    """Lets @p see @after more seconds, stops it with SIGINT; its tables after the first."""
    time.sleep(after)
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=30)
    finally:
        p.reader.join(timeout=30)
    err = p.stderr.read()
    assert p.returncode == 0, (p.returncode, err[-500:])
    assert err == "", err
    return [json.loads(l) for l in p.tables]


def top_sum(tables, match):
    """The rows @match picks out of every table, summed: bytes by site and the other figures."""
    sites, figs, rows = {}, {}, []
    for t in tables:
        for r in t["rows"]:
            if not match(r):
                continue
            rows.append(r)
            for site, v in r["sites"].items():
                sites[site] = sites.get(site, 0) + v["bytes"]
            for k in ("moved_bytes", "cpu_copy_bytes", "unattributed_bytes", "pinned_bytes",
                      "copied_later_bytes"):
                # null: not measured (the unattributed bytes without the boundary account)
                figs[k] = None if r[k] is None else figs.get(k, 0) + r[k]
    return sites, figs, rows


def pipes_measured(table):
    """Whether the census measures pipes here: with --complete, or where a cheap hook exists. Where
    it does not, the table says why, and the unattributed bytes are not measured either."""
    if table["methods"]["pipe_write_copy"]:
        return True
    for site in (*PIPE_SITES, "unattributed"):
        assert "needs the syscall tracepoints (add --complete)" in table["not_measured"][site], table["not_measured"]
    return False


def top_counts_a_process_exactly():
    """`zctrace top` counts a process it did not start, among the machine's: its Unix socket and
    TCP sites (on loopback; a TCP receive with MSG_TRUNC discards without a copy), and its pipe
    sites where the census measures them (else they are absent with the reason), hold exactly the
    bytes it moved, summed over the intervals it spanned; its moved bytes are at least the payload; its last rows (at most two) say it exited; and zctrace's own
    process is never in a table. With the best methods, with kprobes at most and with --complete."""
    n, size = 2000, 4000
    for extra in ((), ("--method", "kprobe"), ("--complete",)):
        top = top_start(*extra)
        try:
            prog = subprocess.Popen(["/usr/bin/python3", "-c", TOP_PROGRAM, "zct-top-probe", str(n), str(size)])
            assert prog.wait(timeout=60) == 0, prog.returncode
            top_tables_after(top, [prog.pid])
        finally:
            tables = top_stop(top)
        sites, figs, rows = top_sum(tables, lambda r: r["pid"] == prog.pid)
        assert rows, f"{extra}: no row for the program in {len(tables)} tables"
        assert rows[-1]["comm"] == "zct-top-probe", rows[-1]["comm"]
        pipes = pipes_measured(tables[-1])
        assert pipes or extra != ("--complete",), tables[-1]["not_measured"]
        for site in ("unix_send_copy", "unix_recv_copy", "recv_copy") + (PIPE_SITES if pipes else ()):
            assert_eq(f"{site} {extra}", sites.get(site, 0), n * size)
        # one more message sent, and discarded by the receiver (MSG_TRUNC): copied once only
        assert_eq(f"send_copy {extra}", sites.get("send_copy", 0), (n + 1) * size)
        for site in ("zc_pin", "splice_ref", "deferred_copy", "udp_send_copy") + (() if pipes else PIPE_SITES):
            assert_eq(f"{site} {extra}", sites.get(site, 0), 0)
        assert rows[-1]["exited"], rows[-1]
        first_exited = min(i for i, r in enumerate(rows) if r["exited"])
        assert all(r["exited"] for r in rows[first_exited:]) and len(rows) - first_exited <= 2, \
            [r["exited"] for r in rows]
        assert all(r["pid"] != top.pid for t in tables for r in t["rows"]), "zctrace counted itself"
        assert all(t["evicted"] == 0 and t["dropped"] == 0 for t in tables), tables[-1]
        assert tables[-1]["methods"]["unix_send_copy"], tables[-1]["methods"]
        assert all("bpf" not in t for t in tables), "the BPF cost without --bpf-stats"
        assert figs["moved_bytes"] >= (2 if pipes else 1) * n * size, figs


# argv[1] threads, each moving N messages of SIZE bytes through a Unix socket pair of its own and
# N UDP datagrams on loopback, then ending; the threads end one by one, the last with the process.
THREADS_PROGRAM = r"""
import socket, sys, threading, time
nthreads, n, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def work(i):
    a, b = socket.socketpair()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    buf = b"t" * size
    for _ in range(n):
        a.sendall(buf)
        got = 0
        while got < size:
            got += len(b.recv(size - got))
        v.sendto(buf, u.getsockname())
        assert len(u.recv(size)) == size
    time.sleep(0.2 * i)
ts = [threading.Thread(target=work, args=(i,)) for i in range(nthreads)]
[t.start() for t in ts]
[t.join() for t in ts]
"""


def top_counts_threads_exactly():
    """The census counts in each thread: a process of 6 threads, each moving its own bytes over a
    Unix socket pair and UDP on loopback and ending at its own time, and 12 such processes at
    once, all against --max-keys 64: every process's four socket sites hold exactly its bytes,
    through its threads' exits and its own; nothing is evicted or dropped. Where the kernel skipped
    runs of the census's programs, the census says so, and no site holds more than the bytes."""
    nthreads, n, size, procs = 6, 100, 3000, 12
    top = top_start("--max-keys", "64")
    try:
        progs = [subprocess.Popen(["/usr/bin/python3", "-c", THREADS_PROGRAM, str(nthreads), str(n), str(size)])
                 for _ in range(procs)]
        assert all(p.wait(timeout=120) == 0 for p in progs), [p.returncode for p in progs]
        top_tables_after(top, [p.pid for p in progs])
    finally:
        tables = top_stop(top)
    if not tables[-1]["methods"]["udp_send_copy"]:
        raise Skip(f"the census does not measure UDP here: {tables[-1]['not_measured'].get('udp_send_copy')}")
    # runs of its programs the kernel skipped (on PREEMPT_RT, a census site with fentry alone, its
    # programs preempted inside themselves) are said, and their counts may be short by them
    skipped = tables[-1]["program_runs_skipped"]
    if skipped:
        print(f"  (the census says the kernel skipped {skipped} runs: {tables[-1]['program_runs_skipped_by']})")
    for p in progs:
        sites, _, rows = top_sum(tables, lambda r: r["pid"] == p.pid)
        for site in ("unix_send_copy", "unix_recv_copy", "udp_send_copy", "udp_recv_copy"):
            if skipped:
                assert sites.get(site, 0) <= nthreads * n * size, (site, p.pid, sites)
            else:
                assert_eq(f"{site} of {p.pid}", sites.get(site, 0), nthreads * n * size)
    assert all(t["evicted"] == 0 and t["dropped"] == 0 and t["keys"] <= 64 for t in tables), tables[-1]


def top_by_cgroup_and_comm():
    """--by cgroup and --by comm, side by side: a program that moved itself into a cgroup made
    here is one row under that cgroup's path and one under its name, each with exactly its bytes;
    the text table shows the same cgroup."""
    roots = [l.split()[1] for l in open("/proc/self/mounts") if l.split()[2] == "cgroup2"]
    if not roots:
        raise Skip("no cgroup v2 hierarchy mounted")
    n, size = 1000, 4000
    name = f"zct-top-{os.getpid()}"
    cg = f"{roots[0]}/{name}"
    os.mkdir(cg)
    try:
        by_cg, by_comm = top_start("--by", "cgroup"), top_start("--by", "comm")
        text = subprocess.Popen([ZCTRACE, "top", "-i", "4", "-n", "1", "-C", "--by", "cgroup"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.5)  # the text top attached
            prog = subprocess.run(["/usr/bin/python3", "-c", TOP_PROGRAM, name, str(n), str(size),
                                   cg + "/cgroup.procs"], capture_output=True, text=True, timeout=60)
            assert prog.returncode == 0, prog.stderr
        finally:
            tc, tn = top_stop(by_cg), top_stop(by_comm, 0)
            out, err = text.communicate(timeout=30)
        for tables, match in ((tc, lambda r: r.get("cgroup") == "/" + name),
                              (tn, lambda r: r.get("comm") == name)):
            sites, _, rows = top_sum(tables, match)
            assert rows, (tables[-1]["by"], name, [(r.get("comm"), r.get("cgroup"), r["sites"].get("unix_send_copy")) for t in tables for r in t["rows"]])
            assert all(r["processes"] == 1 for r in rows), rows
            for site in ("unix_send_copy", "unix_recv_copy") + (PIPE_SITES if pipes_measured(tables[-1]) else ()):
                assert_eq(f"{site} by {tables[-1]['by']}", sites.get(site, 0), n * size)
        assert text.returncode == 0, err
        assert re.search(rf"^/{name}\s+1\s", out, re.M), out
        assert "CGROUP" in out and "COPIES/B" in out, out
    finally:
        os.rmdir(cg)


# 120 children, each writes one byte into a pipe and waits, alive, until the parent lets them go
MANY_KEYS_PROGRAM = r"""
import os, sys, time
n = int(sys.argv[1])
go_r, go_w = os.pipe()
kids = []
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os.close(go_w)
        r, w = os.pipe()
        os.write(w, b"k")
        os.read(go_r, 1)
        os._exit(0)
    kids.append(pid)
time.sleep(float(sys.argv[2]))
os.close(go_w)
for k in kids:
    os.waitpid(k, 0)
"""


def top_evictions_counted():
    """Where the census counts in the (process, site) map (the kernel refused its task iterator,
    here simulated), the kernel keeps at most --max-keys keys: 120 live processes that each made
    one, against 64 keys, leave at most 64 and at least 56 counted as evicted; nothing is dropped."""
    top = top_start("--max-keys", "64", "--complete", env=dict(os.environ, ZCTRACE_REFUSE="attach:census_iter"))
    try:
        prog = subprocess.run(["/usr/bin/python3", "-c", MANY_KEYS_PROGRAM, "120", "1.5"],
                              capture_output=True, text=True, timeout=60)
        assert prog.returncode == 0, prog.stderr
    finally:
        tables = top_stop(top, 1)
    assert all(t["keys"] <= 64 and t["max_keys"] == 64 for t in tables), [t["keys"] for t in tables]
    assert tables[-1]["evicted"] >= 120 - 64, [t["evicted"] for t in tables]
    assert all(b["evicted"] >= a["evicted"] for a, b in zip(tables, tables[1:])), "evictions went back"
    assert tables[-1]["methods"]["pipe_write_copy"], tables[-1]["methods"]


def top_counts_files_where_measured():
    """dd writes a file and another dd reads it back (on /var/tmp, ext4 in the kernel suite's guests;
    busybox's, linked statically: no loader reads a library beside the file):
    where the census measures the file sites (fentry: filemap_read and generic_perform_write by the
    iterator's memory; --complete: the syscalls' returns) they hold exactly the bytes of each, and no
    kernel copy; where it does not, they are absent and the table says why."""
    n, bs = 8 << 20, 64 << 10
    env = dict(os.environ, LC_ALL="C")
    for extra in ((), ("--complete",)):
        top = top_start(*extra)
        fd, path = tempfile.mkstemp(dir="/var/tmp", prefix="zct-top-file.")
        os.close(fd)
        try:
            writer = subprocess.Popen(["busybox", "dd", "if=/dev/zero", f"of={path}", f"bs={bs}", f"count={n // bs}"],
                                      stderr=subprocess.DEVNULL, env=env)
            assert writer.wait(timeout=120) == 0, writer.returncode
            reader = subprocess.Popen(["busybox", "dd", f"if={path}", "of=/dev/null", f"bs={bs}"], stderr=subprocess.DEVNULL,
                                      env=env)
            assert reader.wait(timeout=120) == 0, reader.returncode
            top_tables_after(top, [writer.pid, reader.pid])
        finally:
            tables = top_stop(top)
            os.unlink(path)
        methods = tables[-1]["methods"]
        for proc, site in ((writer, "file_write_copy"), (reader, "file_read_copy")):
            sites, _, rows = top_sum(tables, lambda r: r["pid"] == proc.pid)
            if methods[site]:
                assert_eq(f"{site} {extra}", sites.get(site, 0), n)
            else:
                assert extra == () and "add --complete" in tables[-1]["not_measured"][site], tables[-1]["not_measured"]
                assert_eq(f"{site} {extra}", sites.get(site, 0), 0)
            assert_eq(f"kernel_copy {extra}", sites.get("kernel_copy", 0), 0)


def census_programs(pid):
    """The names of the BPF programs process @pid holds."""
    ids = bpf_fds_of(pid)["prog"]
    out = subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True, text=True, timeout=30).stdout
    return {p["name"] for p in json.loads(out or "[]") if p["id"] in ids}


SYSCALL_PROGRAMS = {"sys_enter_btf", "sys_exit_btf", "sys_enter_raw", "sys_exit_raw"}


def census_attach_points():
    """The census attaches no raw syscall tracepoint unless asked (--complete), and its floor
    (`zctrace floor --census`) has an empty program at each of the census's points: the same
    names as `zctrace top` holds, with and without --complete; `zctrace probes --census` says
    what is not measured and why, and that it follows no zerocopy notices and, where the kernel has
    sock_recv_length, counts each receive there, with no per-skb program; `--bpf-stats` puts the
    census's own cost in each table."""
    floor_c = open(os.path.join(ROOT, ".output", "floor.bpf.c")).read()
    names = set(re.findall(r"^int (\w+)\(", floor_c, re.M))
    helds = []
    for extra in ((), ("--complete",)):
        top = top_start(*extra)
        try:
            held = census_programs(top.pid)
        finally:
            top_stop(top, 0.5)
        helds.append(held)
        assert "census_iter" in held, sorted(held)
        if extra:
            assert held & SYSCALL_PROGRAMS, sorted(held)
        else:
            assert not held & SYSCALL_PROGRAMS, sorted(held)
        old = {p["id"] for p in json.loads(subprocess.run(LIST_PROGS.split(), capture_output=True, text=True,
                                                          timeout=30).stdout)}
        p = zctrace("floor", "--census", *extra, "--", "sh", "-c", LIST_PROGS)
        assert p.returncode == 0, (p.returncode, p.stderr)
        floor = zctrace_named(json.loads(p.stdout), names, old)
        assert set(floor) == held & names, (extra, sorted(floor), sorted(held))
        assert all(p["bytes_xlated"] == 16 for n, p in floor.items() if n != "census_iter"), floor
    p = zctrace("probes", "--census")
    assert p.returncode == 0, p.stderr
    assert re.search(r"^census\s+iter\s", p.stdout, re.M), p.stdout
    # no zerocopy notices; a receive counted once where the socket returns it, where the kernel
    # has that tracepoint (6.3+): no per-skb program then
    assert re.search(r"^zc_notices\s+none\s+not attached: the machine-wide census does not use it", p.stdout, re.M), p.stdout
    if re.search(r"^recv_copy\s+tp_btf\s+tp_btf sock_recv_length ", p.stdout, re.M):
        assert re.search(r"^unix_recv_copy\s+tp_btf\s+tp_btf sock_recv_length ", p.stdout, re.M), p.stdout
        per_skb = {"skb_copy_datagram_iovec_btf", "skb_copy_datagram_iter_fexit", "skb_copy_datagram_iter_kprobe"}
        assert all("sock_recv_length_btf" in h and not h & per_skb for h in helds), helds
    if not re.search(r"^pipe_write_copy\s+(fentry|kprobe)", p.stdout, re.M):
        assert re.search(r"^pipe_write_copy\s+none\s+not measured: needs the syscall tracepoints \(add --complete\)",
                         p.stdout, re.M), p.stdout
    top = top_start("--bpf-stats")
    try:
        prog = subprocess.run(["/usr/bin/python3", "-c", TOP_PROGRAM, "zct-top-cost", "200", "1000"], timeout=60)
        assert prog.returncode == 0, prog.returncode
    finally:
        tables = top_stop(top, 0.6)
    assert tables and all("bpf" in t for t in tables) and sum(t["bpf"]["events"] for t in tables) > 0 and \
        sum(t["bpf"]["run_ns"] for t in tables) > 0, tables
    p = zctrace("floor", "--census", "tcp-onecopy")
    assert p.returncode == 2 and "--census runs a command" in p.stderr, (p.returncode, p.stderr)


def top_usage_errors():
    """Bad options of `zctrace top`: one line naming the problem, exit 2, nothing attached."""
    for args, word in ((["--by", "pid"], "--by"), (["-i", "0"], "--interval"), (["-n", "x"], "--count"),
                       (["--max-keys", "5"], "--max-keys"), (["extra"], "extra"), (["-m", "ebpf"], "ebpf")):
        p = zctrace("top", *args, timeout=30)
        lines = [l for l in p.stderr.splitlines() if l.strip() and not l.startswith("Try")]
        assert p.returncode == 2 and len(lines) == 1 and word in lines[0], (args, p.returncode, p.stderr)


def main():
    if os.geteuid() != 0:
        print("tests need root (BPF, perf counters)", file=sys.stderr)
        return 2
    tests = [unit_tests, probes_report, json_schema, prog_stats_reported, hw_counters_reported_honestly,
             perf_roles_by_process, perf_counter_paths_simulated]
    for w in EXPECT:
        for size in SIZES:
            for threads in (1, 4):
                tests.append(make_tcp_test(w, size, threads))
    tests += file_tests() + [file_sites_on_a_filesystem_without_write_events, file_workload_bad_options]
    tests += micro_tests()
    tests += [make_method_matrix_test(m) for m in ("fentry", "kprobe", "tracepoint")]
    tests += [tracepoint_forced_matches_default, kprobe_flavours_pass_verifier,
              unrelated_traffic_not_counted, command_and_children_traced, offcpu_time_covers_sleeps, tcp_send_copies_one_per_call,
              processes_sharing_a_cpu_counted_apart,
              attach_to_running_pid,
              sigint_stops_cleanly, live_view_on_a_terminal, live_view_to_a_pipe, usage_errors,
              failing_command_fails_run, check_can_fail,
              sweep_csv_reconciles, sweep_loads_one_tracer, sweep_uring_workloads, sweep_json_rows, sweep_failed_run_recorded, sweep_stopped_leaves_nothing, sweep_usage_errors,
              plot_writes_figures, plot_partial_file, findings_synthetic_crossovers, findings_from_a_real_sweep,
              sweep_micro_grid_rows, sweep_micro_bad_param, plot_micro_figures]
    tests += [man_page_covers_the_cli, generated_docs_match_the_table, make_install_runs_from_destdir, bash_completion_offers_workloads_and_options,
              deb_build_depends_match_install_deps]
    tests += [make_netns_tcp_test(w, "64K", t) for w in EXPECT for t in (1, 2)]
    tests += [make_peer_process_test(w) for w in ("tcp-zerocopy", "tcp-sendfile", "uring-sendzc")]
    tests += [make_netns_zerocopy_path_test(w) for w in ("tcp-zerocopy", "uring-sendzc")]
    tests += [make_uring_issue_test(w, how, peer) for w in ("uring-send", "uring-sendzc")
              for how in ("--async", "--sqpoll") for peer in ((), ("--peer", "process"))]
    tests += [uring_sendzc_without_usage_reports, uring_options_only_for_uring, uring_notices_fall_back,
              netns_serve_ledgers]
    tests += URING_FILE_TESTS
    tests += PIPE_TESTS
    tests += SOCK_TESTS
    tests += [make_remote_fileread_test(pat, peer) for pat in ("seq", "random")
              for peer in ((), ("--peer", "process"), ("--netns",))]
    tests += [make_remote_fileread_test("random", ("--netns",), "cold")]
    tests += [make_netns_signal_test(signal.SIGINT), make_netns_signal_test(signal.SIGTERM),
              netns_refused_without_rights, netns_usage_errors, netns_link_shaping,
              remote_ends_across_namespaces]
    tests += [make_robust_signal_test(signal.SIGINT), make_robust_signal_test(signal.SIGTERM),
              robust_workload_sigkill,
              make_robust_sigkill_test(["tcp-onecopy", "--duration", "8"], 1, "workload"),
              make_robust_sigkill_test(["--", "sh", "-c", "sleep 30 & sleep 30"], 3, "command"),
              make_robust_command_end_test("kill -SEGV $$", "zctrace: command sh killed by signal 11 (SIGSEGV); "
                                           "the ledger covers the run until then"),
              make_robust_command_end_test("exit 3", "zctrace: command sh exited with status 3"),
              robust_concurrent_runs, robust_bad_input, robust_json_path_written_or_left_alone,
              robust_stdout_unwritable,
              robust_missing_capabilities, robust_refused_tracepoint, unattributed_where_a_site_is_refused, boundary_mmsg_calls_exact,
              boundary_fd_reused_by_another_type, boundary_receive_sleeps_before_its_exit,
              traced_python_mixed_paths, io_syscalls_at_their_functions, udp_zerocopy_pins_exact,
              robust_refused_program_falls_back,
              two_passes_figures_and_ledger, untraced_pass_attaches_nothing, detach_after_the_report_leaves_nothing,
              default_report_fits_one_screen, readme_samples_have_the_shape_of_a_fresh_run, pipeline_processes_named,
              nic_zerocopy_copied_on_transmit, nic_zerocopy_held_on_sg_device, nic_sendfile_copied_on_transmit,
              nic_udp_zerocopy, nic_remote_ends, preempt_rt_passes_fentry_over,
              floor_attaches_empty_programs,
              raw_tp_flavours_count_the_same, robust_no_btf,
              robust_one_byte_messages_60s, robust_full_map_is_reported,
              top_counts_a_process_exactly, top_counts_threads_exactly, top_counts_files_where_measured,
              top_by_cgroup_and_comm,
              top_evictions_counted, top_usage_errors, census_attach_points]
    tests += EXPORT_TESTS
    # NAME runs the tests whose names hold NAME; NAME$ runs the one test so named
    only = sys.argv[1:]
    for t in tests:
        if not only or any(t.__name__ == o[:-1] if o.endswith("$") else o in t.__name__ for o in only):
            test(t)
    print(f"{results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
