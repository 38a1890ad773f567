"""Pipes: exact ledgers of pipe-copy and pipe-vmsplice, the pipe sites by raw_tp, the pipe workloads
listed and swept, a program's own pipe paths.
"""

import os
import re

from harness import case, assert_eq, read_csv, refused, scratch, site_bytes, sweep, traced, zctrace
from checks import (
    FILE_SITES, PIPE_ALL_SITES, PIPE_EXPECT, PIPE_MESSAGES, best_method, check_pipe_ends, check_pipe_ledger,
    check_veth, our_net_objects, pipe_paths_exact)


# ---- pipes: exact ledgers ----

@case("stock", "rt", "old")
def pipe_copy_thread():
    """Writer and reader threads of one process, two pipes: user->pipe and pipe->user, exactly."""
    led = check_pipe_ledger("pipe-copy", "64K", 2)
    wl = led["workload"]
    assert wl["peer"] == "thread" and wl["sender_pid"] == wl["receiver_pid"] and wl["verified"], wl
    assert led["phase_syscalls"]["write"] >= 2 * PIPE_MESSAGES, led["phase_syscalls"]


@case("stock", "rt", "old")
def pipe_copy_process():
    """The readers in a child process: each end's ledger by pid, nothing the other way, and the
    child's result (shared memory) crosses no pipe. 1 MiB writes, each filling the pipe 16 times
    over, so every write sleeps mid-copy; 40 writes a writer keep the run short in a PREEMPT_RT guest."""
    led = check_pipe_ledger("pipe-copy", "1M", 2, ("--peer", "process"), messages=40)
    check_pipe_ends(led)


@case("stock")
def pipe_vmsplice_loopback():
    """vmsplice into a pipe, splice into the socket: page references twice, one copy (the receive)."""
    led = check_pipe_ledger("pipe-vmsplice", "64K", 2)
    calls = led["phase_syscalls"]
    assert calls["vmsplice"] >= 2 * PIPE_MESSAGES and calls["splice"] >= calls["vmsplice"], calls


@case("stock")
def pipe_vmsplice_netns():
    """The same over veth, the receiver in its own namespace: each side's ledger by pid."""
    before = our_net_objects()
    led = check_pipe_ledger("pipe-vmsplice", "64K", 1, ("--netns",))
    check_veth(led)
    assert_eq("namespaces and links left", our_net_objects(), before)


@case(root=False)
def pipe_workload_bad_options():
    """pipe-copy's readers are on this host: --peer netns, --netns and --port are refused by name."""
    for args, msg in ((["--peer", "netns"], "invalid --peer 'netns' (thread or process)"),
                      (["--netns"], "--netns is not an option"), (["--port", "9"], "--port is not an option")):
        p = zctrace("run", "--no-hist", "pipe-copy", *args)
        assert p.returncode == 2, f"{args}: exit {p.returncode}"
        assert msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, f"{args}: {p.stderr!r}"


@case("stock")
def pipe_sites_by_raw_tp():
    """Where tp_btf is refused at the syscalls, the pipe sites that count from the syscall's return
    use raw_tp sys_exit, entered by the syscalls probe's own raw_tp sys_enter: as exact (pipe_ref
    and pipe_read_copy, whose better methods need the syscall too; pipe_write_copy keeps fexit or
    kretprobe where the kernel has them). The file sites have no raw_tp method: not measured."""
    env = refused(["tp_btf:sys_enter", "tp_btf:sys_exit"])
    led = check_pipe_ledger("pipe-copy", "64K", 2, ("--peer", "process"), unmeasured=FILE_SITES, env=env)
    check_pipe_ends(led)
    probes = led["probes"]
    assert {probes[s] for s in ("pipe_ref", "pipe_read_copy", "syscalls")} == {"raw_tp"}, probes
    assert probes["pipe_write_copy"] == ("raw_tp" if best_method("pipe_write_copy")[0] == "tp_btf"
                                         else best_method("pipe_write_copy")[0]), probes
    led = check_pipe_ledger("pipe-vmsplice", "64K", 1, unmeasured=FILE_SITES, env=env)
    assert led["probes"]["pipe_ref"] == "raw_tp", led["probes"]


@case()
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
        for site in PIPE_ALL_SITES + ("splice_ref",):
            assert_eq(f"{r['workload']} {r['size']} {site}", int(r[f"{site}_bytes"]),
                      payload if site in copies[r["workload"]] else 0)


@case()
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
