"""The harness every topic module of the suite imports: the binaries under test, test() and the
tallies it keeps, running zctrace (zctrace(), traced(), unskipped()), assertions, and the helpers
more than one topic uses that watch processes and the BPF objects a run holds.
"""

import atexit
import csv
import ctypes
import errno
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the binaries under test; make sanitize points these at its ASan + UBSan build (zctrace itself
# finds the workloads through ZCTRACE_WORKLOADS too)
ZCTRACE = os.environ.get("ZCTRACE_BIN") or os.path.join(ROOT, "zctrace")
WORKLOADS = os.environ.get("ZCTRACE_WORKLOADS") or os.path.join(ROOT, ".output", "workloads")
UNIT_TESTS = os.environ.get("ZCTRACE_UNIT_TESTS") or os.path.join(ROOT, ".output", "tests")
TIMEOUT = 120  # no single zctrace run may take longer

results = {"passed": 0, "failed": 0, "skipped": 0}


class Skip(Exception):
    pass


# The suite: every test, declared where it is written (case()), in the order run.py imports the
# topic modules and each module declares its tests.
SUITE = []
# The parts of make test-kernels a test runs in beside this machine's suite: "stock" (each stock
# kernel, tests/kernel-suite.sh), "rt" (its PREEMPT_RT builds: what preemption changes), "old"
# (Debian 11's 5.10, before bpf_loop(): its compat object) and "nic" (two NIC pairs in a guest,
# tests/device-suite.sh).
PARTS = ("stock", "rt", "old", "nic")


def case(*parts, root=True, alone=False, long=False):
    """Declares the function below it a test of the suite. @parts: the guest parts of make
    test-kernels that run it too (PARTS); root=False: it loads no BPF and reads no kernel
    counter, so make check runs it as any user; alone=True: it needs the machine to itself (it
    looks at the whole machine's BPF programs, namespaces or processes, not only its own, or a
    microbenchmark's claim that holds only on CPUs no other test keeps busy), so run.py -j runs
    no other test beside it; long=True: it runs for tens of seconds, so run.py -j starts it before the others."""
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown guest parts {sorted(unknown)} (known: {', '.join(PARTS)})")

    def declare(fn):
        if any(t.__name__ == fn.__name__ for t in SUITE):
            raise ValueError(f"two tests named {fn.__name__}")
        fn.parts, fn.root, fn.alone, fn.long = frozenset(parts), root, alone, long
        SUITE.append(fn)
        return fn
    return declare


def declare(fn, *parts, root=True, alone=False, long=False):
    """Declares a test a factory made (its name set): case() for a function built at run time."""
    return case(*parts, root=root, alone=alone, long=long)(fn)


def test(fn):
    """Runs one test, prints its outcome and records it in results."""
    name = fn.__name__
    start = time.monotonic()
    try:
        fn()
    except Skip as e:
        results["skipped"] += 1
        print(f"SKIP {name}: {e}", flush=True)
        return
    except AssertionError as e:
        results["failed"] += 1
        print(f"FAIL {name}: {e}", flush=True)
        return
    except Exception as e:  # a crash in a test is a failure, not an abort of the suite
        results["failed"] += 1
        print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        return
    results["passed"] += 1
    print(f"PASS {name} ({time.monotonic() - start:.1f}s)", flush=True)


def zctrace(*args, timeout=TIMEOUT, env=None):
    return subprocess.run([ZCTRACE, *args], capture_output=True, text=True, timeout=timeout, env=env)


def traced(workload, *wargs, extra=(), env=None):
    """Runs a workload under zctrace with --json; returns (process, ledger dict), of the first run
    in which the kernel skipped no run of zctrace's programs (unskipped())."""
    return unskipped(lambda attempt: traced_once(workload, *wargs, extra=extra, env=env))


def traced_once(workload, *wargs, extra=(), env=None):
    """One run of @workload (a built-in one, or "--" and a command) under zctrace --json: (process,
    ledger dict). The traced pass alone, unless @extra asks for passes: the ledger is its figures,
    and the untraced pass (timing alone) would run the workload once more."""
    if not {"--passes", "-T", "--baseline"} & set(extra):
        extra = ("--passes", "traced", *extra)
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--json", f.name, *extra, workload, *wargs, env=env)
        try:
            ledger = json.load(open(f.name))
        except ValueError:
            raise AssertionError(f"no JSON ledger; exit {p.returncode}; stderr: {p.stderr.strip()[-300:]}")
    return p, ledger


def ownerless_zc_skbs(led):
    """The bytes of a run's zerocopy skbs that were copied on delivery for no known sender: where
    every skb zc_path saw arrive was counted (receive row = deferred_copy) yet deferred_copy falls
    short of the pins. The tracepoint path then missed noting those skbs' owner as they left; a rare
    loss (about 1 run in 60 of a 2-thread veth ledger on 6.18), not understood yet, which the
    ledger's own check reports. 0 otherwise."""
    sites = led.get("sites") or {}
    pin = (sites.get("zc_pin") or {}).get("bytes", 0)
    dc = (sites.get("deferred_copy") or {}).get("bytes", 0)
    rcv = sum(r["bytes"] for r in (led.get("zerocopy_path") or []) if r["stage"] == "receive")
    return pin - dc if 0 < dc < pin and rcv == dc else 0


def unskipped(run, attempts=3, short=None):
    """run(attempt) -> (process, JSON ledger, ...), repeated while the kernel skipped runs of
    zctrace's programs (it does not nest BPF programs on a CPU: an interrupt's softirq inside one
    finds a kprobe program, or the same tp_btf program, busy). Such a run's figures may be short,
    and it must say so: its "no program run skipped" check fails and it exits non-zero. A run with
    zerocopy skbs of no known sender (ownerless_zc_skbs()) is made once more too, and so is one
    whose figures @short(run) finds short on a kernel that does not count the kprobe runs it skips
    (before 6.7: the ledger's program_runs_skipped says "uncounted"), up to the last attempt,
    which is returned as it is. Returns the first run with none of these."""
    for attempt in range(attempts):
        res = run(attempt)
        p, led = res[0], res[1]
        skipped = led.get("program_runs_skipped") or {"total": 0}
        if not skipped["total"]:
            last = attempt == attempts - 1
            if ownerless_zc_skbs(led) and not last:
                print(f"  (zerocopy skbs whose sender was never noted: {ownerless_zc_skbs(led)} B; once more)", flush=True)
                continue
            why = short(res) if short and skipped.get("uncounted") and not last else None
            if why:
                print(f"  ({why}, where the kernel does not count the kprobe runs it skips; once more)", flush=True)
                continue
            return res
        failed = [c["name"] for c in led.get("checks", []) if not c["ok"]]
        assert "no program run skipped" in failed and p.returncode != 0, (skipped, failed, p.returncode)
        print(f"  (the kernel skipped runs: {skipped['by_program']}; once more)", flush=True)
    raise AssertionError(f"the kernel skipped runs of zctrace's programs in {attempts} attempts: {skipped}")


def site_bytes(ledger, site):
    s = ledger["sites"][site]
    assert s is not None, f"{site} not measured"
    return s["bytes"]


def assert_eq(what, got, want):
    assert got == want, f"{what}: kernel {got} != expected {want}"


# ---- shared by several topics: perf figures, commands, sweeps ----

PERF_DERIVED = ["cycles_per_byte", "ipc", "l1d_misses_per_kib", "llc_misses_per_kib", "llc_miss_rate",
                "cache_misses_per_kib", "branch_misses_per_kib", "task_clock_ns_per_byte"]


def has_hw_pmu():
    """A CPU PMU: the legacy 'cpu' one, or a hybrid CPU's cpu_core/cpu_atom."""
    devs = os.listdir("/sys/bus/event_source/devices")
    return "cpu" in devs or any(d.startswith("cpu_") for d in devs)


def traced_cmd(cmd, extra=()):
    return unskipped(lambda attempt: traced_once("--", *cmd, extra=extra))


def asan_build(workload):
    """The workload binary carries AddressSanitizer (make sanitize): its shadow memory faults too."""
    with open(os.path.join(WORKLOADS, workload), "rb") as f:
        return b"__asan_init" in f.read()


scratch = tempfile.mkdtemp(prefix="zctrace-tests.")
atexit.register(shutil.rmtree, scratch, ignore_errors=True)


def sweep(*args, env=None, timeout=600):
    return subprocess.run([ZCTRACE, "sweep", *args], capture_output=True, text=True, timeout=timeout, env=env)


def swept(workloads, *args, rerun, runs):
    """The @runs runs of `zctrace sweep WORKLOADS ARGS`, which share one tracer, loaded once: a list
    of (row, exit status, whole JSON ledger), in the sweep's order, each ledger kept by --ledgers. A
    run that unskipped() would make again is made again alone, by @rerun(row) -> (process, ledger):
    traced(). As there, a run in which the kernel skipped runs of zctrace's programs must say so:
    it fails its check "no program run skipped" and exits non-zero."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "rows.json")
        # each run stopped at traced()'s bound, the sweep at the sum
        p = sweep(*args, "--timeout", str(TIMEOUT), "--ledgers", d, "-o", out, workloads, timeout=60 + TIMEOUT * runs)
        try:
            rows = json.load(open(out))["rows"]
        except (OSError, ValueError) as e:
            raise AssertionError(f"sweep exit {p.returncode}: {e}; stderr: {p.stderr.strip()[-300:]}")
        assert len(rows) == runs, (f"{len(rows)} rows of {runs}", p.returncode, p.stderr.strip()[-300:])
        ledgers = []
        for r in rows:
            path = os.path.join(d, f"run-{r['run']}.json")
            assert os.path.exists(path), f"run {r['run']} ({r['workload']}) wrote no ledger: {r['status']}: {r['error']}"
            ledgers.append(json.load(open(path)))
    done = []
    for row, led in zip(rows, ledgers):
        skipped = (led.get("program_runs_skipped") or {"total": 0})["total"]
        if skipped:
            failed = [c["name"] for c in led["checks"] if not c["ok"]]
            assert "no program run skipped" in failed and row["exit_code"] != 0, (skipped, failed, row["exit_code"])
        if skipped or ownerless_zc_skbs(led):
            print(f"  (run {row['run']} of the sweep: {skipped} program runs skipped, "
                  f"{ownerless_zc_skbs(led)} B of zerocopy skbs with no known sender; alone once more)", flush=True)
            q, led = rerun(row)
            done.append((row, q.returncode, led))
        else:
            done.append((row, row["exit_code"], led))
    return done


def read_csv(path):
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        return header, [dict(zip(header, r)) for r in reader if r]


# ---- processes and BPF objects: what a run holds and what it leaves ----

def bpf_fds_of(pid):
    """The BPF programs, links and maps process @pid holds, by ID, from its descriptors' fdinfo:
    only this process's, whatever else runs on the machine."""
    held = {"prog": set(), "link": set(), "map": set()}
    kinds = {"anon_inode:bpf-prog": ("prog", "prog_id"), "anon_inode:bpf_link": ("link", "link_id"),
             "anon_inode:bpf-map": ("map", "map_id")}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return held
    for fd in fds:
        try:
            kind = kinds.get(os.readlink(f"/proc/{pid}/fd/{fd}"))
            if not kind:
                continue
            m = re.search(rf"^{kind[1]}:\s*(\d+)", open(f"/proc/{pid}/fdinfo/{fd}").read(), re.M)
        except OSError:
            continue
        if m:
            held[kind[0]].add(int(m.group(1)))
    return held


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
# bpf(2) commands that open an object by its id: BPF_PROG_GET_FD_BY_ID, BPF_MAP_GET_FD_BY_ID,
# BPF_LINK_GET_FD_BY_ID (uapi/linux/bpf.h); the attribute is the id, then next_id and open_flags
BPF_GET_FD_BY_ID = {"prog": 13, "map": 14, "link": 30}
NR_BPF = {"x86_64": 321, "aarch64": 280, "riscv64": 280, "ppc64le": 361, "s390x": 351}


def bpf_ids_loaded(kind, ids):
    """Those of @ids that a BPF object of @kind still has, each opened by its id. ENOENT is an
    object gone or being freed; EAGAIN a link that another process is still creating, which none
    of @ids (taken from a process's descriptors) can be. bpftool's listing stops at such a link,
    which beside other tests left no whole list for seconds."""
    nr = NR_BPF.get(os.uname().machine)
    if nr is None:
        raise AssertionError(f"no bpf(2) syscall number known for {os.uname().machine}")
    loaded = set()
    for i in ids:
        attr = (ctypes.c_uint32 * 3)(i, 0, 0)
        fd = _libc.syscall(ctypes.c_long(nr), ctypes.c_long(BPF_GET_FD_BY_ID[kind]), ctypes.byref(attr),
                           ctypes.c_long(ctypes.sizeof(attr)))
        if fd >= 0:
            os.close(fd)
            loaded.add(i)
        elif ctypes.get_errno() not in (errno.ENOENT, errno.EAGAIN):
            raise AssertionError(f"cannot open BPF {kind} {i} by id: {os.strerror(ctypes.get_errno())}")
    return loaded


def wait_bpf_released(held, seconds=15):
    """The kernel frees programs after an RCU grace period, not at close: poll for @held's IDs."""
    deadline = time.monotonic() + seconds
    while True:
        left = {k: sorted(bpf_ids_loaded(k, ids)) for k, ids in held.items() if ids}
        if not any(left.values()) or time.monotonic() > deadline:
            return {k: v for k, v in left.items() if v}
        time.sleep(0.3)


def proc_stat(pid):
    """The fields of /proc/PID/stat after the command name (state first), or None when it is gone."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def proc_start(pid):
    """Start time of @pid (field 22 of its stat), or None when it is gone: tells a reused pid apart."""
    f = proc_stat(pid)
    return f[19] if f else None


def descendants(pid):
    """Every process below @pid, with its start time."""
    out, todo = {}, [pid]
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                kids = [int(k) for k in open(f"/proc/{p}/task/{tid}/children").read().split()]
            except OSError:
                kids = []
            for k in kids:
                start = proc_start(k)
                if start and k not in out:
                    out[k] = start
                    todo.append(k)
    return out


def zctrace_lines(err):
    return [l for l in err.splitlines() if l.startswith("zctrace")]


def watched_run(args, act=None, after=2.0, env=None, until=None):
    """Starts 'zctrace run ARGS', notes its BPF objects and its workload's processes while it runs,
    calls act(zctrace, processes) @after seconds in (later on a busy machine: once zctrace holds its
    programs and links and its workload has started, and until(processes) holds if given, at most
    60 s in), and waits for the end. Returns (exit status, stdout, stderr, BPF objects held,
    processes seen)."""
    z = subprocess.Popen([ZCTRACE, "run", "--no-hist", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    held, procs = {"prog": set(), "link": set(), "map": set()}, {}
    t0 = time.monotonic()
    try:
        while z.poll() is None and time.monotonic() - t0 < 60 and (
                time.monotonic() - t0 < after or not (held["prog"] and held["link"] and procs)
                or (until and not until(procs))):
            for k, ids in bpf_fds_of(z.pid).items():
                held[k] |= ids
            procs.update(descendants(z.pid))
            time.sleep(0.1)
        assert z.poll() is None, f"zctrace ended early: exit {z.returncode}"
        assert held["prog"] and held["link"], f"no BPF program or link seen in zctrace's descriptors: {held}"
        assert procs, "no workload process seen under zctrace"
        if act:
            act(z, procs)
        out, err = z.communicate(timeout=90)
    finally:
        if z.poll() is None:
            z.kill()
            z.communicate()
    return z.returncode, out, err, held, procs


def assert_nothing_left(held, procs):
    # a zombie is dead: an orphan waits for its reaper (a guest's init may not reap at once)
    deadline = time.monotonic() + 5
    while alive(procs) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive(procs) == [], f"processes left running: {alive(procs)}"
    left = wait_bpf_released(held)
    assert left == {}, f"BPF objects of the run still loaded: {left}"


def alive(procs):
    """Of @procs (pid -> start time), those still running: a zombie is dead, only not reaped yet."""
    return [pid for pid, start in procs.items() if (f := proc_stat(pid)) and f[19] == start and f[0] != "Z"]


def group_members(pgids):
    """The living processes whose process group is one of @pgids, found in /proc."""
    return [int(d) for d in os.listdir("/proc")
            if d.isdigit() and (f := proc_stat(d)) and f[0] != "Z" and int(f[2]) in pgids]


def refused(points):
    return dict(os.environ, ZCTRACE_REFUSE=",".join(points))


def zctrace_programs():
    """The ids of the BPF programs named like zctrace's USDT and syscall-exit programs (the raw
    tracepoint's, or read()'s at its function where a command's run follows the I/O syscalls there)."""
    out = subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True, text=True, timeout=30).stdout
    return {p["id"] for p in json.loads(out or "[]")
            if p.get("name") in ("phase_begin_usd", "phase_end_usdt", "sys_exit_btf", "sys_exit_raw", "io_read_exit")}


def zombie(pid):
    """Whether process @pid has exited and waits to be reaped (an init that reaps no orphans)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def detach_children():
    """The pids of the live (not zombie) 'zctrace-detach' children of earlier runs."""
    return [c for c in subprocess.run(["pgrep", "-x", "zctrace-detach"], capture_output=True,
                                      text=True).stdout.split() if not zombie(c)]


LIST_PROGS = "bpftool -j prog list"


def zctrace_named(progs, names, old=frozenset()):
    """The programs of @progs named like zctrace's (@names), but for those of ids in @old."""
    return {p["name"]: p for p in progs if p.get("name") in names and p["id"] not in old}
