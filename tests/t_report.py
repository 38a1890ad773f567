"""What a run reports: the unit tests, the JSON schema, program statistics, perf counters, the probes
chosen; the default report's shape, its traced and untraced passes, and zctrace floor.
"""

import json
import os
import re
import subprocess
import tempfile
import time

from harness import (
    case, LIST_PROGS, PERF_DERIVED, ROOT, TIMEOUT, UNIT_TESTS, ZCTRACE, assert_eq, detach_children, has_hw_pmu,
    read_csv, scratch, site_bytes, traced, traced_cmd, unskipped, zctrace, zctrace_named, zctrace_programs)
from checks import preempt_rt, probes_by_method


# ---- unit tests ----

@case(root=False)
def unit_tests():
    p = subprocess.run([os.path.join(UNIT_TESTS, "test_units")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


# ---- schema, perf, probes ----

@case("stock", "rt")
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


@case()
def findings_in_text_and_json():
    """What the kernel did with the payload is found in the ledger, not in the printer: the JSON
    ledger's findings are the sentences the text report prints, in its order. A zerocopy send's
    pins and later copies, a sendfile's page references, a two-copy stream's none of those."""
    want = {"tcp-zerocopy": "pinned", "tcp-sendfile": "page references", "tcp-twocopy": None}
    for w, word in want.items():
        p, led = traced(w, "--size", "64K", "--messages", "200")
        assert p.returncode == 0, (w, p.stderr[-300:])
        found = led["findings"]
        assert isinstance(found, list) and all(isinstance(x, str) and x.endswith(".") for x in found), found
        lines = p.stdout.splitlines()
        at = [lines.index("  " + x) if "  " + x in lines else -1 for x in found]
        assert -1 not in at and at == sorted(at), (w, found, p.stdout[-2000:])
        if word:
            assert any(word in x for x in found), (w, found)
        else:
            assert not any("pinned" in x or "page references" in x for x in found), (w, found)


@case()
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


@case()
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


@case()
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


@case()
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


@case("stock", "rt", "old")
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
    # fentry is the best method: asking for nothing better than it chooses what the default does
    # (but on PREEMPT_RT, where the default passes fentry over), so a kernel's default-method tests
    # run the probes of its fentry method matrix (tests/kernel-suite.sh leaves that matrix to them
    # on the stock kernels)
    if not preempt_rt():
        default = dict(re.findall(r"^(\w+)\s+(fentry|kprobe|tp_btf|raw_tp|usdt|none)\s", out, re.M))
        assert probes_by_method("fentry")[0] == default, (default, probes_by_method("fentry")[0])
    p = zctrace("probes", "--method=tracepoint")
    # the send sites' tracepoint is from 2025: a kernel without it says so
    assert p.returncode == 0 and (re.search(r"^send_copy\s+tp_btf", p.stdout, re.M) or re.search(
        r"^send_copy\s+none.*\n(.*\n)*?.*refused tp_btf: tp_btf:tcp_sendmsg_locked: tracepoint tcp_sendmsg_locked "
        r"not in this kernel", p.stdout, re.M)), p.stdout


# ---- the report: two passes, one screen, named processes, the floor ----

@case()
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
    # the default report: the ratios in one line; 2,000 messages take less than half a second, too
    # short for the rate's spread in each pass
    assert t["ratio_low"] is None and t["ratio_high"] is None, t
    assert eff["unresolved"].startswith("too short to resolve"), eff["unresolved"]
    assert re.search(r"^tracer effect \(traced / untraced, the same run with no BPF program\): throughput %.2f "
                     r"\(%s\), latency p50 [\d.]+, latency p99 [\d.]+$" % (t["ratio"], re.escape(eff["unresolved"])),
                     p.stdout, re.M), ("tracer effect line", p.stdout[:1500])
    # a run of two seconds: each pass's progress in slices, and throughput's ratio with its interval
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "4K", "--duration", "2")
        led = json.load(open(f.name))
    assert p.returncode == 0, (p.returncode, p.stdout[-1500:], p.stderr[-500:])
    eff = led["tracer_effect"]
    t = eff["figures"][0]
    for rep in (led["workload"], eff["untraced_report"]):
        prog = rep["progress"]
        # 19 or 20 readings in two seconds (the receiver may drain past them), fewer where the
        # machine is so busy that one comes a slice late
        assert prog["slice_ns"] == 100_000_000 and 5 <= len(prog["t_ns"]) == len(prog["sent"]) <= 25, prog
        assert all(a < b for a, b in zip(prog["t_ns"], prog["t_ns"][1:])), prog["t_ns"]
        assert all(a <= b for a, b in zip(prog["sent"], prog["sent"][1:])) and prog["sent"][-1] <= rep["bytes"], prog
        assert prog["t_ns"][-1] <= rep["elapsed_s"] * 1e9, (prog, rep["elapsed_s"])
    assert t["figure"] == "throughput" and eff["unresolved"] is None, eff
    assert 0 < t["ratio_low"] < t["ratio"] < t["ratio_high"], t
    assert re.search(r"^tracer effect .*: throughput %.2f \(95%%: %.2f-%.2f\)," % (t["ratio"], t["ratio_low"],
                                                                                  t["ratio_high"]), p.stdout, re.M), \
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


@case()
def default_report_fits_one_screen():
    """A default report answers first, on one screen: at most 40 lines with the histograms off for
    every kind of target, the ledger (the sites that counted, one line for the others), CPU copies per
    payload byte where there is a payload, how many checks held and the verdict; --full adds every
    site's row, the boundary account by call, the perf counter table and every check."""
    for args in ONE_SCREEN:
        def run(attempt):
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                p = zctrace("run", "--no-hist", "--json", f.name, *args, timeout=300)
                return p, json.load(open(f.name))

        p, _ = unskipped(run)
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


@case()
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


@case("stock", alone=True)
def floor_attaches_empty_programs():
    """`zctrace floor -- COMMAND`: while the command runs, every program a traced run of it has
    alive (but the sampler's, whose cost make bench measures) is there under the same name, each of 2 instructions (r0 = 0; exit), and nothing else
    of zctrace's; a built-in workload's own figures come out on stdout; the exit status is the
    command's; bad input is one line and exit 2."""
    floor_c = open(os.path.join(ROOT, ".output", "floor.bpf.c")).read()
    names = set(re.findall(r"^int (\w+)\(", floor_c, re.M))
    # a run before this one may still be letting its programs go (its detach child)
    old = {p["id"] for p in json.loads(subprocess.run(LIST_PROGS.split(), capture_output=True, text=True,
                                                      timeout=30).stdout)}
    p = zctrace("floor", "--", "sh", "-c", LIST_PROGS + "; exit 3")
    assert p.returncode == 3, (p.returncode, p.stderr)
    floor = zctrace_named(json.loads(p.stdout), names, old)
    old = {p["id"] for p in json.loads(subprocess.run(LIST_PROGS.split(), capture_output=True, text=True,
                                                      timeout=30).stdout)}
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--passes", "traced", "--sample-hz", "0", "--json", f.name, "--", "sh", "-c",
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
    for args, word in (([], "needed"), (["nosuch"], "nosuch"), (["-m", "ebpf", "tcp-onecopy"], "ebpf")):
        p = zctrace("floor", *args)
        lines = [l for l in p.stderr.splitlines() if l.strip() and not l.startswith("Try")]
        assert p.returncode == 2 and len(lines) == 1 and word in lines[0], (args, p.returncode, p.stderr)


@case(alone=True)
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
