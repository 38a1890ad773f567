"""Microbenchmarks: each one's assumption checked by the kernel, exactly; CPU and clock, memory, tasks
and scheduling, network (with the peer in a process or a network namespace), files.
"""

import json
import os
import re
import subprocess
import tempfile

from harness import case, declare, TIMEOUT, WORKLOADS, ZCTRACE, asan_build, assert_eq, site_bytes, Skip, traced, zctrace
from checks import PIPE_ALL_SITES, netns_holders, our_net_objects


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


@case("stock", "rt")
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


@case()
def micro_assumption_can_fail():
    """Claiming the vDSO clock enters the kernel must fail, with the kernel's 0 shown."""
    p, led = traced("syscall", "--call", "clock_gettime", "--assume", "kernel", "--iters", "1000",
                    "--reps", "5", "--warmup", "1")
    assert p.returncode == 1, f"exit {p.returncode}"
    (a,) = led["assumptions"]
    assert not a["holds"] and a["measured"] == 0 and a["expected"] == 6000, a
    assert not led["ok"]
    # the check names the assumption that failed, and its figures
    (c,) = [c for c in led["checks"] if c["name"] == "assumptions hold"]
    assert c["detail"] == (f"0 of 1; the first that failed: step {a['step']}, {a['measure']}: measured 0, "
                           f"not {a['min']}-{a['max']}"), c
    out = zctrace("run", "--no-hist", "syscall", "--call", "clock_gettime", "--assume", "kernel",
                  "--iters", "100", "--reps", "2", "--warmup", "0")
    assert re.search(r"assumption: each clock_gettime.*entered the kernel once — FAILS \(0 of 200", out.stdout), \
        out.stdout[-800:]


@case()
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


@case(root=False)
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


@case()
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
    for site in PIPE_ALL_SITES:  # posix_spawn reports through shared memory, not a pipe
        assert_eq(site, site_bytes(led, site), 0)


@case()
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


@case(alone=True)
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


@case("stock", "rt")
def micro_pagefault_counts_exact():
    """MADV_RANDOM: each touched page one fault and one page read in; warm: one fault per window."""
    led = check_micro("pagefault", ["--file-size", "2M"])
    cold = micro_step(led, "cold: touch a page out of the page cache")
    assert_eq("cold faults", cold["page_faults"], 512)
    assert_eq("cold pages read in", cold["page_cache_pages"], 512)
    warm = micro_step(led, "warm: touch a page in the page cache")
    assert 512 // 16 <= warm["page_faults"] <= 512 // 16 + 1, f"warm faults {warm['page_faults']}"
    assert_eq("warm pages read in", warm["page_cache_pages"], 0)


@case()
def micro_pagefault_readahead_breaks_claim():
    """With normal advice readahead and fault-around hide faults: "one fault per page" must FAIL."""
    p, led = traced("pagefault", "--file-size", "2M", "--advice", "normal")
    assert p.returncode == 1, f"exit {p.returncode}"
    by = {a["claim"]: a for a in led["assumptions"]}
    (a,) = [a for c, a in by.items() if c.startswith("cold, advice normal: one fault per touched page")]
    assert not a["holds"] and a["expected"] == 512 and a["measured"] < 512, a
    failed = [c for c, a in by.items() if not a["holds"]]
    assert failed == [a["claim"]], f"only the fault claim may fail: {failed}"


@case("stock")
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


@case()
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


@case()
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


@case()
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


@case()
def micro_contention_counts_exact():
    """Every round forks N readers and reaps them, and each reads its whole cold file in."""
    led = check_micro("contention", ["--max-procs", "4", "--file-size", "128K", "--reps", "2", "--warmup", "1"])
    for n, st in enumerate(led["steps"], 1):
        assert_eq(f"N={n} forks", st["forks"], 3 * n)
        assert_eq(f"N={n} exits", st["exits"], 3 * n)
        assert_eq(f"N={n} pages", st["page_cache_pages"], 3 * n * 32)
    assert [r["samples"] for r in led["workload"]["results"]] == [2, 4, 6, 8]
    assert_eq("file_read_copy", site_bytes(led, "file_read_copy"), 3 * 10 * (128 << 10))
    for site in PIPE_ALL_SITES:  # the readers start at their start pipe's end of file: no byte in it
        assert_eq(site, site_bytes(led, site), 0)


@case()
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


@case()
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


@case()
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


@case()
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


@case()
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


@case()
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


@case()
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


@case()
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


@case()
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


@case()
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


for w in MICRO_RUNS:
    declare(make_micro_test(w))
# a stock kernel runs the peers across namespaces (veth)
for check in (micro_tcp_rtt_peer, micro_tcp_bw_peer, micro_tcp_connect_peer):
    for where in ("process", "netns"):
        declare(make_micro_peer_test(check, where), *(("stock",) if where == "netns" else ()))
