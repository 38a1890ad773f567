"""io_uring: requests issued by the submitter, io-wq workers or an SQPOLL thread, on sockets and on
files; files served over the network (serve and remote fileread ledgers).
"""

import json
import os
import re
import subprocess
import tempfile
import time

from harness import case, declare, TIMEOUT, WORKLOADS, ZCTRACE, assert_eq, descendants, refused, site_bytes, Skip, traced, zctrace
from checks import (
    COPY_SITES, KERNEL, NET_SITES, PIPE_ALL_SITES, SIZES, check_sides, check_tcp_ledger, check_veth,
    deferred_want, our_net_objects, probes_by_method)


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


# a stock kernel runs io_uring's zerocopy sends from io-wq workers to a peer process, and from an
# SQPOLL thread
for w in ("uring-send", "uring-sendzc"):
    for how in ("--async", "--sqpoll"):
        for peer in ((), ("--peer", "process")):
            declare(make_uring_issue_test(w, how, peer),
                    *(("stock",) if w == "uring-sendzc" and bool(peer) == (how == "--async") else ()))


@case("stock")
def uring_sendzc_without_usage_reports():
    """Most applications do not ask io_uring whether their zerocopy data was copied: the copies on
    delivery are still counted, from the skbs, and no notification is taken to say copied."""
    led = check_tcp_ledger("uring-sendzc", "64K", 1, ("--no-usage-report",))
    zc = led["workload"]["zerocopy"]
    assert zc["usage_reports"] is False and zc["notices_copied"] is None, zc
    assert zc["usage_reports_why"] == "not asked (--no-usage-report)", zc
    assert_eq("deferred_copy without usage reports", site_bytes(led, "deferred_copy"),
              deferred_want(led, led["workload"]["bytes"]))


@case(root=False)
def uring_options_only_for_uring():
    """--async and --sqpoll belong to the uring-* workloads: another workload refuses them by name,
    in one line, before anything runs."""
    for args in (["tcp-onecopy", "--async"], ["tcp-zerocopy", "--sqpoll"]):
        p = zctrace("run", "--no-hist", *args)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        assert p.returncode == 2 and len(lines) == 1 and f"{args[1]} is not an option" in lines[0], \
            (args, p.returncode, p.stderr)


@case("stock")
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


@case("stock")
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


@case("stock")
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


# every io_uring file shape on a stock kernel too
for args in ((), ("--cache", "cold"), ("--direct",), ("--fixed",), ("--direct", "--fixed"), ("--vectored",),
             ("--direct", "--vectored")):
    declare(make_uring_file_test(*args), "stock")
for how in ("--async", "--sqpoll"):
    declare(make_uring_file_issue_test(how), "stock")
for method in ("fentry", "kprobe", "tracepoint"):
    declare(make_uring_file_method_test(method), "stock")


@case()
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
    for site in PIPE_ALL_SITES:  # the client's start (an end of file) and its result cross no pipe
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


for pattern in ("seq", "random"):
    for peer in ((), ("--peer", "process"), ("--netns",)):
        declare(make_remote_fileread_test(pattern, peer), *(("stock",) if pattern == "seq" and not peer else ()))
declare(make_remote_fileread_test("random", ("--netns",), "cold"))
