"""zctrace top, the census: processes and threads counted exactly, by cgroup and command, evictions,
files, the programs it attaches, usage errors.
"""

import json
import os
import re
import select
import signal
import subprocess
import tempfile
import threading
import time

from harness import case, LIST_PROGS, ROOT, WORKLOADS, ZCTRACE, assert_eq, bpf_fds_of, Skip, zctrace, zctrace_named
from checks import COST_MIB, ODD_NAMER, PIPE_MOVER, PIPE_SITES, TOP_PROGRAM, copy_cpu_plausible, tcp_sweep_refused_here


# ---- zctrace top: the census ----

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
    """Waits until @p's tables have shown each of @pids exited, or said they had nothing of theirs;
    the census reads them at its next interval, under emulation too. One that a table showed
    without ever saying it exited, 60 s on, fails the test: a process reaped late by its parent
    (a zombie at a read) has exited all the same."""
    deadline, start = time.monotonic() + 60, len(p.tables)
    while True:
        rows = [r for l in list(p.tables) for r in json.loads(l)["rows"]]
        shown = {r.get("pid") for r in rows}
        # a process with figures shows exited at the latest a read after its exit; three reads
        # after this call, one with none has none
        late = [pid for pid in pids if not any(r.get("pid") == pid and r["exited"] for r in rows) and
                (pid in shown or len(p.tables) < start + 3)]
        if not late:
            return
        assert time.monotonic() < deadline, \
            f"processes {late} never shown exited in {len(p.tables) - start} tables over 60 s"
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
                      "copied_later_bytes", "tcp_sent_bytes", "tcp_received_bytes"):
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


@case("stock", "old", alone=True)
def top_counts_a_process_exactly():
    """`zctrace top` counts a process it did not start, among the machine's: its Unix socket and
    TCP sites (on loopback; a TCP receive with MSG_TRUNC discards without a copy), and its pipe
    sites where the census measures them (else they are absent with the reason), hold exactly the
    bytes it moved, summed over the intervals it spanned (where TCP's copies come from the sockets'
    counters, the discarded bytes count as copied); its moved bytes are at least the payload; its
    last rows (at most two) say it exited; and zctrace's own process is never in a table. With the
    best methods, with kprobes at most and with --complete."""
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
        for site in ("unix_send_copy", "unix_recv_copy") + (PIPE_SITES if pipes else ()):
            assert_eq(f"{site} {extra}", sites.get(site, 0), n * size)
        # from the sockets' counters (fentry kernels), the bytes MSG_TRUNC discarded count as copied
        from_counters = tables[-1]["methods"]["recv_copy"] == "iter"
        assert_eq(f"recv_copy {extra}", sites.get("recv_copy", 0), (n + from_counters) * size)
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
        # its sockets' own counters: the same bytes, the discarded ones too (MSG_TRUNC moves copied_seq)
        if tcp_counters_attached(tables):
            assert_eq(f"TCP counters {extra}", tcp_counters_of(tables, prog.pid), ((n + 1) * size, (n + 1) * size))


# argv[1] threads, each moving N messages of SIZE bytes through a Unix socket pair of its own and
# N UDP datagrams on loopback, then ending; the threads end one by one, the last with the process.
THREADS_PROGRAM = r"""
import socket, sys, threading, time
nthreads, n, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
linger = float(sys.argv[4]) if len(sys.argv) > 4 else 0   # the main thread's time after the others
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
time.sleep(linger)
"""


@case("stock", alone=True)
def top_counts_threads_exactly():
    """The census counts in each thread: a process of 6 threads, each moving its own bytes over a
    Unix socket pair and UDP on loopback and ending at its own time, and 12 such processes at
    once, all against --max-keys 64: every process's four socket sites hold exactly its bytes,
    through its threads' exits and its own; nothing is evicted or dropped. Where the kernel skipped
    runs of the census's programs, the census says so, and no site holds more than the bytes."""
    nthreads, n, size, procs = 6, 40, 3000, 12
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


@case("stock")
def top_shows_exited_after_its_threads():
    """A process whose threads moved their bytes and exited, its main thread (which counted
    nothing: forked after its imports) living on through several reads: it is kept until it
    ends, and then shown exited, with all its bytes."""
    nthreads, n, size = 2, 40, 3000
    # a child forked after the imports: its main thread has read no file, so counted nothing
    forked = ("import os, socket, sys, threading, time\npid = os.fork()\nif pid:\n    print(pid, flush=True)\n"
              "    sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n" + THREADS_PROGRAM)
    top = top_start()
    try:
        prog = subprocess.Popen(["/usr/bin/python3", "-c", forked, str(nthreads), str(n), str(size), "2"],
                                stdout=subprocess.PIPE, text=True)
        child = int(prog.stdout.readline())
        assert prog.wait(timeout=60) == 0
        top_tables_after(top, [child])
    finally:
        tables = top_stop(top, 0.5)
    sites, _, rows = top_sum(tables, lambda r: r["pid"] == child)
    assert rows and rows[-1]["exited"], rows[-3:]
    assert set(sites) <= {"unix_send_copy", "unix_recv_copy", "udp_send_copy", "udp_recv_copy"}, sites
    for site in ("unix_send_copy", "unix_recv_copy"):
        assert_eq(f"{site} of {child}", sites.get(site, 0), nthreads * n * size)


@case("stock")
def top_shows_a_zombie_exited():
    """A process that moved its bytes and exited is shown exited while its parent has yet to reap
    it (a zombie): its row says so, with all its bytes, before the wait() that ends it."""
    n, size = 40, 3000
    top = top_start()
    try:
        prog = subprocess.Popen(["/usr/bin/python3", "-c", THREADS_PROGRAM, "1", str(n), str(size)])
        try:
            # exited, not reaped: WNOWAIT leaves it a zombie
            assert os.waitid(os.P_PID, prog.pid, os.WEXITED | os.WNOWAIT).si_status == 0
            top_tables_after(top, [prog.pid])
        finally:
            prog.wait(timeout=60)
    finally:
        tables = top_stop(top, 0.5)
    sites, _, rows = top_sum(tables, lambda r: r["pid"] == prog.pid)
    assert any(r["exited"] for r in rows), rows[-3:]
    for site in ("unix_send_copy", "unix_recv_copy"):
        assert_eq(f"{site} of the zombie", sites.get(site, 0), n * size)


@case("stock")
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


@case("stock")
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


@case("stock")
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


@case("stock", alone=True)
def census_attach_points():
    """The census attaches no raw syscall tracepoint unless asked (--complete), and its floor
    (`zctrace floor --census`) has an empty program at each of the census's points: the same
    names as `zctrace top` holds, with and without --complete; `zctrace probes --census` says
    what is not measured and why, and that it follows no zerocopy notices and, where the kernel has
    sock_recv_length, counts each receive there, with no per-skb program, and what each program
    runs on (none on a plain TCP message where TCP comes from the counters); `--bpf-stats` puts the
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
    if re.search(r"^send_copy\s+iter\s", p.stdout, re.M):
        # TCP from the sockets' counters: no program on a TCP send or receive
        assert re.search(r"^recv_copy\s+iter\s", p.stdout, re.M), p.stdout
        assert re.search(r"^unix_recv_copy\s+fentry\s+fexit unix_stream_recvmsg", p.stdout, re.M), p.stdout
        # (--complete's boundary account takes each socket call's length: a program per call)
        assert not helds[0] & PER_MESSAGE, sorted(helds[0] & PER_MESSAGE)
    elif re.search(r"^recv_copy\s+tp_btf\s+tp_btf sock_recv_length ", p.stdout, re.M):
        assert re.search(r"^unix_recv_copy\s+tp_btf\s+tp_btf sock_recv_length ", p.stdout, re.M), p.stdout
        per_skb = {"skb_copy_datagram_iovec_btf", "skb_copy_datagram_iter_fexit", "skb_copy_datagram_iter_kprobe"}
        assert all("sock_recv_length_btf" in h and not h & per_skb for h in helds), helds
    # what the census runs, and when: every program it holds, each under how often it runs, and how
    # many a plain TCP message runs (none where TCP comes from the counters)
    assert "\nWHAT THE CENSUS RUNS, AND WHEN" in p.stdout, p.stdout
    runs = p.stdout.split("\nWHAT THE CENSUS RUNS, AND WHEN", 1)[1]
    listed = re.findall(r"^      \S+ (\w+)", runs, re.M)
    assert set(listed) == helds[0] and len(listed) == len(helds[0]) and "not classified" not in runs, \
        (runs, sorted(helds[0]))
    message = re.search(r"^on a plain TCP send or receive: (no program|(\d+) a call, (\d+) a packet or skb)$",
                        runs, re.M)
    assert message, runs
    if re.search(r"^send_copy\s+iter\s", p.stdout, re.M):
        assert message.group(1) == "no program", runs
    else:
        assert int(message.group(2)) >= 2, runs
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


@case("stock", "rt", "old")
def top_cost_of_copies():
    """top --cost --complete: a process that moves 1 GiB (128 MiB in a guest) through a pipe of its own has CPU time at
    both pipe sites (cpu_ns), within 0.01-5 ns a byte of the bytes counted there, its row's
    copy_cpu_ns the sum of its sites', and all of it no more than the process's own CPU time (its
    rusage), within the samples' spread. Without --cost no row has a copy CPU figure: not measured,
    absent, not 0."""
    mib = COST_MIB
    for extra in (("--cost", "--complete"), ("--complete",)):
        top = top_start(*extra)
        try:
            prog = subprocess.Popen(["/usr/bin/python3", "-c", PIPE_MOVER, "zct-top-cost", str(mib)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            said = prog.stdout.readline()  # through a pipe too: its bytes are pipe_write_copy's
            own = int(said.split()[1])
            prog.stdin.close()
            assert prog.wait(timeout=60) == 0, prog.returncode
            top_tables_after(top, [prog.pid])
        finally:
            tables = top_stop(top)
        rows = [r for t in tables for r in t["rows"] if r["pid"] == prog.pid]
        assert rows, f"{extra}: no row for the program in {len(tables)} tables"
        if "--cost" not in extra:
            assert all("copy_cpu_ns" not in r and all("cpu_ns" not in v for v in r["sites"].values())
                       for r in rows), rows[-1]
            assert all("sample_ns" not in t for t in tables), tables[-1]
            continue
        sample_ns = tables[-1]["sample_ns"]
        assert_eq("sample_ns", sample_ns, 10**9 // 997)
        cpu = {s: sum(r["sites"].get(s, {}).get("cpu_ns", 0) for r in rows) for s in PIPE_SITES}
        counted = {s: sum(r["sites"].get(s, {}).get("bytes", 0) for r in rows) for s in PIPE_SITES}
        for r in rows:
            assert_eq("copy_cpu_ns = its sites'", r["copy_cpu_ns"], sum(v.get("cpu_ns", 0) for v in r["sites"].values()))
        for s in PIPE_SITES:
            assert_eq(f"{s} bytes", counted[s], (mib << 20) + (len(said) if s == "pipe_write_copy" else 0))
            copy_cpu_plausible(s, cpu[s], counted[s], own, sample_ns)
        copy_cpu_plausible("both pipe sites", sum(cpu.values()), 2 * mib << 20, own, sample_ns)
        print(f"  pipe_write_copy {cpu['pipe_write_copy'] / (mib << 20):.3f} ns/B, pipe_read_copy "
              f"{cpu['pipe_read_copy'] / (mib << 20):.3f} ns/B; the process's own CPU {own / 1e6:.0f} ms", flush=True)


@case(root=False)
def top_usage_errors():
    """Bad options of `zctrace top`: one line naming the problem, exit 2, nothing attached."""
    for args, word in ((["--by", "pid"], "--by"), (["-i", "0"], "--interval"), (["-n", "x"], "--count"),
                       (["--max-keys", "5"], "--max-keys"), (["extra"], "extra"), (["-m", "ebpf"], "ebpf"),
                       (["--cost=0"], "--cost"), (["--cost=-1"], "--cost"), (["--cost=100001"], "--cost"),
                       (["--cost=9x"], "--cost")):
        p = zctrace("top", *args, timeout=30)
        lines = [l for l in p.stderr.splitlines() if l.strip() and not l.startswith("Try")]
        assert p.returncode == 2 and len(lines) == 1 and word in lines[0], (args, p.returncode, p.stderr)


# ---- TCP from the sockets' own counters ----

def tcp_counters_of(tables, pid, sends_copied=True):
    """(sent, received): the TCP bytes @pid's sockets' counters moved, over @tables. Where the census
    takes TCP's copies from those counters (fentry kernels), @pid's send_copy and recv_copy are held
    to them too: the callers' streams are copied, neither pinned nor spliced; or, where not
    @sends_copied (sendfile()'s), send_copy is the counters less the bytes spliced: none."""
    sites, figs, _ = top_sum(tables, lambda r: r.get("pid") == pid)
    assert figs.get("tcp_sent_bytes", 0) is not None, figs
    sent, got = figs.get("tcp_sent_bytes", 0), figs.get("tcp_received_bytes", 0)
    for site, moved in (("send_copy", sent if sends_copied else 0), ("recv_copy", got)):
        if tables[-1]["methods"][site] == "iter":
            assert_eq(f"{pid}'s {site} from the counters", sites.get(site, 0), moved)
    return sent, got


def untraced_workload(workload, *args):
    """The report of built-in WORKLOAD run alone, untraced (10 minutes at most)."""
    p = subprocess.run([os.path.join(WORKLOADS, workload), *args], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-500:]
    return json.loads(p.stdout)


def tcp_counters_attached(tables, alone=False):
    """Whether the census counts TCP from the sockets' counters here: on every kernel with
    bpf_loop() (5.17), unless told to refuse them. Where it does not, every table says why, and
    every row's figures are null. @alone: the counters are all the test holds, so where this
    machine's verifier refuses the sweep (tcp_sweep_refused_here()) the test is skipped."""
    if "tcp_unowned_sent_bytes" in tables[-1]:
        return True
    release = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", os.uname().release).groups())
    why = tables[-1]["not_measured"].get("tcp_counters", "")
    assert release < (5, 17) or "ZCTRACE_REFUSE" in why or tcp_sweep_refused_here(why), tables[-1]["not_measured"]
    assert all("tcp_counters" in t["not_measured"] for t in tables), tables[-1]["not_measured"]
    assert all(r["tcp_sent_bytes"] is None and r["tcp_received_bytes"] is None for t in tables for r in t["rows"])
    print(f"  TCP counters not measured here: {tables[-1]['not_measured']['tcp_counters']}", flush=True)
    if alone and tcp_sweep_refused_here(why):
        raise Skip(f"this kernel's verifier refuses the TCP sweep ({why}); make test-kernels runs it")
    return False


# argv[1]: N connections to a server in this program's child, one after another: the client sends
# 1000 + i bytes and shuts its side, the server answers 7 * i bytes once it has read that end, both
# read to the end and close. Each opens and closes between two reads of the census. Prints both pids.
SHORT_CONNECTIONS = r"""
import os, socket, sys
n = int(sys.argv[1])
l = socket.create_server(("127.0.0.1", 0))
pid = os.fork()
if pid == 0:
    for i in range(n):
        s = l.accept()[0]
        while s.recv(65536):
            pass
        s.sendall(b"a" * (7 * i))
        s.close()
    os._exit(0)
for i in range(n):
    c = socket.create_connection(l.getsockname())
    c.sendall(b"q" * (1000 + i))
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()
os.waitpid(pid, 0)
print(os.getpid(), pid)
"""


@case("stock", "rt", "old")
def top_tcp_counters_exact():
    """TCP counted from each socket's own counters (write_seq and copied_seq, past their wraps by
    bytes_acked and bytes_received), with no program on a send or a receive: a stream between two
    processes, each one's bytes exactly what the workload moved; 200 connections that each open
    and close between two reads (the client's FIN after its bytes, the server's answer after it
    read that FIN, both reading to the end: no FIN counts as a byte); every socket owned."""
    n = 200
    top = top_start()
    try:
        # the workload alone, untraced: the census is what is under test (on PREEMPT_RT a second
        # tracer's kprobe programs lose runs while the census reads its maps)
        wl = untraced_workload("tcp-onecopy", "--peer", "process", "--size", "4K", "--messages", "20000")
        short = subprocess.run(["/usr/bin/python3", "-c", SHORT_CONNECTIONS, str(n)], capture_output=True,
                               text=True, timeout=120)
        assert short.returncode == 0, short.stderr[-500:]
        client, server = map(int, short.stdout.split())
        top_tables_after(top, [wl["sender_pid"], wl["receiver_pid"], client, server])
    finally:
        tables = top_stop(top)
    if not tcp_counters_attached(tables, alone=True):
        return
    assert_eq("the sender's TCP bytes", tcp_counters_of(tables, wl["sender_pid"]), (wl["bytes"], 0))
    assert_eq("the receiver's TCP bytes", tcp_counters_of(tables, wl["receiver_pid"]), (0, wl["bytes_received"]))
    asked, answered = sum(1000 + i for i in range(n)), sum(7 * i for i in range(n))
    assert_eq("the client's TCP bytes", tcp_counters_of(tables, client), (asked, answered))
    assert_eq("the server's TCP bytes", tcp_counters_of(tables, server), (answered, asked))


# A connection from this namespace into another, over veth: the child enters a network namespace
# of its own (unshare), the parent joins them with a veth pair (198.18.0.5 here, .6 there); the
# client (the parent) sends argv[1] x argv[2] bytes; the server, once it has read them, says
# "read PID"; the client then waits for a line, shuts its side, and the server answers 7777 bytes.
# Prints each end's role, pid, bytes sent and received.
NAMESPACE_PEERS = r"""
import ctypes, os, socket, subprocess, sys
n, size = int(sys.argv[1]), int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
up, down = os.pipe(), os.pipe()
child = os.fork()
if child == 0:
    os.close(up[0]); os.close(down[1])
    assert libc.unshare(0x40000000) == 0, ctypes.get_errno()  # CLONE_NEWNET
    os.write(up[1], b"n")
    assert os.read(down[0], 1) == b"l"
    for cmd in ("ip link set lo up", "ip addr add 198.18.0.6/30 dev zcns-peer0", "ip link set zcns-peer0 up"):
        subprocess.run(cmd.split(), check=True)
    l = socket.create_server(("198.18.0.6", 5201))
    l.settimeout(60)
    os.write(up[1], b"s")
    s, got = l.accept()[0], 0
    s.settimeout(120)
    while got < n * size and (d := s.recv(65536)):
        got += len(d)
    print("read", os.getpid(), flush=True)
    while (d := s.recv(65536)):
        got += len(d)
    s.sendall(b"a" * 7777)
    s.close()
    print("server", os.getpid(), 7777, got, flush=True)
    os._exit(0)
os.close(up[1]); os.close(down[0])
assert os.read(up[0], 1) == b"n"
for cmd in (f"ip link add zcns-host0 type veth peer name zcns-peer0 netns {child}",
            "ip addr add 198.18.0.5/30 dev zcns-host0", "ip link set zcns-host0 up"):
    subprocess.run(cmd.split(), check=True)
os.write(down[1], b"l")
assert os.read(up[0], 1) == b"s"
c, sent, got = socket.create_connection(("198.18.0.6", 5201), timeout=120), 0, 0
for _ in range(n):
    c.sendall(b"c" * size)
    sent += size
sys.stdin.readline()
c.shutdown(socket.SHUT_WR)
while (d := c.recv(65536)):
    got += len(d)
c.close()
assert os.waitpid(child, 0)[1] == 0
print("client", os.getpid(), sent, got, flush=True)
"""


@case("stock", "rt")
def top_tcp_counters_other_namespace():
    """A connection between this namespace and another, over veth: the task_file sweep sees every
    process's sockets, whatever its namespace: the server's bytes show while the connection is
    still open (no state change since it opened, so only a sweep can have counted them), and each
    end's bytes are exact."""
    n, size = 5000, 16384
    top = top_start()
    prog = subprocess.Popen(["/usr/bin/python3", "-c", NAMESPACE_PEERS, str(n), str(size)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        try:
            line = prog.stdout.readline().split()
            assert line[:1] == ["read"], (line, prog.poll())
            server, deadline, seen = int(line[1]), time.monotonic() + 60, None
            while time.monotonic() < deadline:
                tables = [json.loads(l) for l in list(top.tables)]
                if tables and "tcp_unowned_sent_bytes" not in tables[-1]:
                    break  # no counters here: the tables say why (below)
                seen = top_sum(tables, lambda r: r.get("pid") == server)[1].get("tcp_received_bytes")
                if seen == n * size:
                    break
                time.sleep(0.2)
            prog.stdin.write("go\n")
            prog.stdin.flush()
            out = prog.communicate(timeout=120)[0]
            assert prog.returncode == 0, (prog.returncode, out)
            ends = {role: (int(pid), int(sent), int(got))
                    for role, pid, sent, got in map(str.split, out.splitlines())}
            top_tables_after(top, [ends["client"][0], ends["server"][0]])
        finally:
            tables = top_stop(top)
    finally:
        if prog.poll() is None:
            os.killpg(prog.pid, signal.SIGKILL)
            prog.wait()
        # the veth pair goes with the child's namespace; should it linger, it goes now
        deadline = time.monotonic() + 10
        while "zcns-host0" in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout:
            if time.monotonic() > deadline:
                subprocess.run(["ip", "link", "del", "zcns-host0"], capture_output=True)
                break
            time.sleep(0.1)
    if not tcp_counters_attached(tables, alone=True):
        return
    assert_eq("the server's bytes in a table while the connection was open", seen, n * size)
    assert_eq("the client's sent bytes", ends["client"][1], n * size)
    assert_eq("the server's received bytes", ends["server"][2], n * size)
    for role, (pid, sent, got) in ends.items():
        assert_eq(f"the {role}'s TCP bytes", tcp_counters_of(tables, pid), (sent, got))


# The programs that would run once per TCP message: on a send, on a receive, per skb copied.
PER_MESSAGE = {"tcp_sendmsg_locked_fentry", "tcp_sendmsg_locked_fexit", "tcp_sendmsg_locked_kprobe",
               "tcp_sendmsg_locked_kretprobe", "tcp_sendmsg_locked_btf", "sock_send_length_btf",
               "sock_recv_length_btf", "skb_copy_datagram_iovec_btf", "skb_copy_datagram_iter_fexit",
               "skb_copy_datagram_iter_kprobe"}

# argv[1] bytes sent to a server (this program's child) that splices them out of its socket into a
# pipe and reads them back from there; prints the server's pid.
SPLICE_READER = r"""
import os, socket, sys
n = int(sys.argv[1])
l = socket.create_server(("127.0.0.1", 0))
r, w = os.pipe()
server = os.fork()
if server == 0:
    s = l.accept()[0]
    while (k := os.splice(s.fileno(), w, 65536)):
        while k:
            k -= len(os.read(r, k))
    os._exit(0)
c = socket.create_connection(l.getsockname())
c.sendall(b"x" * n)
c.close()
assert os.waitpid(server, 0)[1] == 0
print(server, flush=True)
"""


# One process, two connections to a server (its child, which reads both to the end): a thread
# splices from an empty pipe into the first (the call waits inside, asked for 1 MiB) while the main
# thread sends argv[1] bytes on the second and prints both pids; on a line from stdin, 64 KiB go
# into the pipe, and the splice moves them.
BLOCKED_SPLICE = r"""
import os, socket, sys, threading
n = int(sys.argv[1])
l = socket.create_server(("127.0.0.1", 0))
server = os.fork()
if server == 0:
    def drain(s):
        while s.recv(65536):
            pass
    ts = [threading.Thread(target=drain, args=(l.accept()[0],)) for _ in range(2)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    os._exit(0)
a = socket.create_connection(l.getsockname())
b = socket.create_connection(l.getsockname())
r, w = os.pipe()
moved = []
def splicer():
    while sum(moved) < 65536:
        moved.append(os.splice(r, a.fileno(), 1 << 20))
t = threading.Thread(target=splicer)
t.start()
b.sendall(b"x" * n)
print(os.getpid(), server, flush=True)
sys.stdin.readline()
os.write(w, b"y" * 65536)
t.join()
a.close()
b.close()
assert os.waitpid(server, 0)[1] == 0
"""


def tcp_copies_beside_a_waiting_splice(top):
    """A splice into a TCP socket that waits inside (for its pipe) hides none of its process's copies
    on another socket: they show in @top's tables while it waits, and every byte is counted once."""
    n = 512 * 1024
    p = subprocess.Popen(["/usr/bin/python3", "-c", BLOCKED_SPLICE, str(n)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # its pids once its sends are made (60 s at most)
        assert select.select([p.stdout], [], [], 60)[0], "the splicing process printed nothing in 60 s"
        pid, server = map(int, p.stdout.readline().split())
        deadline, seen = time.monotonic() + 30, 0
        while time.monotonic() < deadline and seen < n:
            seen = top_sum([json.loads(l) for l in list(top.tables)], lambda r: r.get("pid") == pid)[0].get("send_copy", 0)
            time.sleep(0.2)
        assert_eq("send_copy while the splice waits", seen, n)
        p.stdin.write("go\n")
        p.stdin.flush()
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err[-500:]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    top_tables_after(top, [pid, server])
    return pid


def top_unskipped(measure, short, attempts=3):
    """measure(attempt) -> (top's tables, ...), repeated while the census says the kernel skipped
    runs of its programs (it nests no BPF program on a CPU; on PREEMPT_RT every kprobe run on a CPU
    is skipped while a task preempted in a bpf() map call there holds the CPU's BPF count, and a
    census that counts TCP per call counts it by kprobe): such a census's figures may be short by
    those runs, and it says so. So may one that could not follow calls from their entry to their
    return (calls_unfollowed: a thread's first call finds no room in its task storage while a task
    preempted on PREEMPT_RT holds the CPU's task-storage count). On a kernel that does not count
    the kprobe runs it skips (before 6.7: program_runs_skipped_uncounted), one whose figures
    short(result) finds short is made once more too. The last attempt is returned as it is, for its figures to be held."""
    for attempt in range(attempts):
        res = measure(attempt)
        last = res[0][-1]
        if attempt == attempts - 1:
            if last["program_runs_skipped"] or last["calls_unfollowed"]:
                print(f"  (the census says its counts may be short in each of {attempts} attempts, the last's: "
                      f"runs skipped {last['program_runs_skipped_by'] or 'none'}, calls not followed "
                      f"{last['calls_unfollowed']}; its figures are held as they are)", flush=True)
            return res
        if last["program_runs_skipped"]:
            print(f"  (the census says the kernel skipped runs: {last['program_runs_skipped_by']}; once more)",
                  flush=True)
            continue
        if last["calls_unfollowed"]:
            print(f"  (the census could not follow {last['calls_unfollowed']} calls; once more)", flush=True)
            continue
        why = short(res) if last.get("program_runs_skipped_uncounted") else None
        if why:
            print(f"  ({why}, where the kernel does not count the kprobe runs it skips; once more)", flush=True)
            continue
        return res


@case("stock", "rt", "old")
def top_tcp_copies_from_counters():
    """Where the kernel allows fentry, the census takes TCP's copies from the sockets' own counters,
    with no program on a plain TCP send or receive (none of the per-message programs held):
    send_copy is what TCP took less what zc_pin pinned and splice_ref referenced, recv_copy what
    it gave less what was spliced out, each exact, their calls null (not measured): a 1 KiB stream
    all copies, a zerocopy stream all pins, a sendfile stream all page references, a splice out of
    a socket no copy; a splice that waits inside hides no copy on another socket. --per-call counts
    each call again. Where the kernel allows tracepoints only, or fentry is passed over (PREEMPT_RT),
    the census counts TCP per call, and counts its calls; a census whose kernel skipped runs of its
    programs is made again (top_unskipped())."""
    n = 20000 * 1024

    def measure(attempt):
        top = top_start()
        try:
            held = census_programs(top.pid)
            one = untraced_workload("tcp-onecopy", "--peer", "process", "--size", "1K", "--messages", "20000")
            zc = untraced_workload("tcp-zerocopy", "--peer", "process", "--size", "64K", "--messages", "500")
            sf = untraced_workload("tcp-sendfile", "--peer", "process", "--size", "64K", "--messages", "500")
            sp = subprocess.run(["/usr/bin/python3", "-c", SPLICE_READER, str(n)], capture_output=True, text=True,
                                timeout=120)
            assert sp.returncode == 0, sp.stderr[-500:]
            splicer = int(sp.stdout)
            top_tables_after(top, [one["sender_pid"], one["receiver_pid"], zc["sender_pid"], sf["sender_pid"],
                                   splicer])
            waiter = tcp_copies_beside_a_waiting_splice(top) if top.tables and \
                json.loads(top.tables[-1])["methods"]["send_copy"] == "iter" else None
        finally:
            tables = top_stop(top)
        return tables, held, one, zc, sf, splicer, waiter

    def short(res):
        tables, one = res[0], res[2]
        got = top_sum(tables, lambda r: r.get("pid") == one["sender_pid"])[0].get("send_copy", 0)
        return f"the 1 KiB sender's send_copy {got} B of {one['bytes']} B" if got < one["bytes"] else None

    tables, held, one, zc, sf, splicer, waiter = top_unskipped(measure, short)
    by = lambda pid: top_sum(tables, lambda r: r.get("pid") == pid)
    if tables[-1]["methods"]["send_copy"] != "iter":
        assert "send_copy copies" not in tables[-1]["not_measured"], tables[-1]["not_measured"]
        sites, _, rows = by(one["sender_pid"])
        assert_eq("the 1 KiB sender's send_copy", sites.get("send_copy", 0), one["bytes"])
        assert all(r["sites"]["send_copy"]["copies"] for r in rows if "send_copy" in r["sites"]), rows
        print(f"  TCP's copies counted per call here (send_copy by {tables[-1]['methods']['send_copy']})", flush=True)
        return
    assert tables[-1]["methods"]["recv_copy"] == "iter", tables[-1]["methods"]
    assert not held & PER_MESSAGE, sorted(held & PER_MESSAGE)
    assert {"send_copy copies", "recv_copy copies"} <= set(tables[-1]["not_measured"]), tables[-1]["not_measured"]
    sites, _, rows = by(one["sender_pid"])
    assert_eq("the 1 KiB sender's send_copy", sites.get("send_copy", 0), one["bytes"])
    assert all(r["sites"]["send_copy"]["copies"] is None for r in rows if "send_copy" in r["sites"]), rows
    assert_eq("the 1 KiB receiver's recv_copy", by(one["receiver_pid"])[0].get("recv_copy", 0), one["bytes_received"])
    sites = by(zc["sender_pid"])[0]
    assert_eq("the zerocopy sender's send_copy + zc_pin", sites.get("send_copy", 0) + sites.get("zc_pin", 0), zc["bytes"])
    assert sites.get("zc_pin", 0) > 0, sites
    sites = by(sf["sender_pid"])[0]
    assert_eq("the sendfile sender's send_copy + splice_ref", sites.get("send_copy", 0) + sites.get("splice_ref", 0),
              sf["bytes"])
    assert sites.get("splice_ref", 0) > 0, sites
    sites, figs, _ = by(splicer)
    assert_eq("the splicing receiver's TCP bytes", figs.get("tcp_received_bytes"), n)
    assert_eq("the splicing receiver's recv_copy", sites.get("recv_copy", 0), 0)
    assert waiter, "no table came before the waiting splice"
    sites = by(waiter)[0]
    assert_eq("the waiting splicer's send_copy", sites.get("send_copy", 0), 512 * 1024)
    assert_eq("the waiting splicer's splice_ref", sites.get("splice_ref", 0), 65536)
    # --per-call: each call counted again, at a program per call
    top = top_start("--per-call")
    try:
        held = census_programs(top.pid)
        one = untraced_workload("tcp-onecopy", "--peer", "process", "--size", "1K", "--messages", "2000")
        top_tables_after(top, [one["sender_pid"], one["receiver_pid"]])
    finally:
        tables = top_stop(top)
    assert held & PER_MESSAGE, sorted(held)
    # and every socket's page references again, UDP's and Unix's too, not TCP's at splice_to_socket()
    assert "splice_to_socket_fexit" not in held, sorted(held)
    assert tables[-1]["methods"]["send_copy"] != "iter" and "send_copy copies" not in tables[-1]["not_measured"]
    sites, _, rows = by(one["sender_pid"])
    assert_eq("the sender's send_copy, per call", sites.get("send_copy", 0), one["bytes"])
    assert all(r["sites"]["send_copy"]["copies"] for r in rows if "send_copy" in r["sites"]), rows


@case("stock", "rt", "old")
def top_counts_a_real_server_exactly():
    """Real programs that count their own bytes, under the census: Python's http.server serves a
    1 MiB file 24 times to curl, 4 transfers at once (each a connection of its own); curl's own
    counts (the request it sent; the headers and body it got) equal its send_copy and recv_copy,
    and the server's the other way round, exactly: per call on a kernel with tracepoints only, from
    the sockets' counters where fentry is allowed. A census whose kernel skipped runs of its
    programs is made again (top_unskipped())."""
    if not os.path.exists("/usr/bin/curl"):
        raise Skip("needs curl (tools/install-deps.sh installs it)")
    n, size = 24, (1 << 20) + 7

    def serve(d):
        with open(os.path.join(d, "f"), "wb") as f:
            f.write(b"z" * size)
        top, server, curl = top_start(), None, None
        try:
            server = subprocess.Popen(["/usr/bin/python3", "-u", "-m", "http.server", "--bind", "127.0.0.1",
                                       "--directory", d, "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True)
            assert select.select([server.stdout], [], [], 60)[0], "http.server printed nothing in 60 s"
            port = int(re.search(r" port (\d+)", server.stdout.readline()).group(1))
            url = f"http://127.0.0.1:{port}/f"
            args = [a for _ in range(n) for a in ("-o", "/dev/null", url)]
            # -q: no ~/.curlrc; no proxy: the bytes are curl's and the server's alone
            curl = subprocess.Popen(["/usr/bin/curl", "-q", "-sS", "--fail", "--noproxy", "*", "--parallel",
                                     "--parallel-max", "4", "-w",
                                     "%{size_request} %{size_upload} %{size_header} %{size_download}\n", *args],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out, err = curl.communicate(timeout=300)
            assert curl.returncode == 0, err[-500:]
            counts = [tuple(map(int, l.split())) for l in out.splitlines()]
            assert len(counts) == n and all(c[3] == size for c in counts), counts
        finally:
            try:
                for p in (curl, server):
                    if p and p.poll() is None:
                        p.terminate()
                        try:
                            p.wait(timeout=30)
                        except subprocess.TimeoutExpired:
                            p.kill()
                            p.wait()
                top_tables_after(top, [p.pid for p in (server, curl) if p])
            finally:
                tables = top_stop(top)
        return tables, server, curl, counts

    def measure(attempt):
        with tempfile.TemporaryDirectory() as d:
            return serve(d)

    def short(res):
        tables, server, curl, counts = res
        asked, answered = sum(c[0] + c[1] for c in counts), sum(c[2] + c[3] for c in counts)
        for who, pid, want in (("curl", curl.pid, asked), ("http.server", server.pid, answered)):
            got = top_sum(tables, lambda r: r.get("pid") == pid)[0].get("send_copy", 0)
            if got < want:
                return f"{who}'s send_copy {got} B of {want} B"
        return None

    tables, server, curl, counts = top_unskipped(measure, short)
    asked = sum(c[0] + c[1] for c in counts)
    answered = sum(c[2] + c[3] for c in counts)
    print(f"  curl sent {asked} B and got {answered} B over {n} connections", flush=True)
    for who, pid, want in (("curl", curl.pid, (asked, answered)), ("http.server", server.pid, (answered, asked))):
        sites = top_sum(tables, lambda r: r.get("pid") == pid)[0]
        assert_eq(f"{who}'s send_copy and recv_copy", (sites.get("send_copy", 0), sites.get("recv_copy", 0)), want)
        if tcp_counters_attached(tables):
            assert_eq(f"{who}'s TCP bytes", tcp_counters_of(tables, pid), want)


# A connection made before the census starts: the client sends argv[1] bytes to a server (its
# child), which reads them all and answers one byte; the client reads it, says "ready" with both
# pids and waits for a line; then sends argv[2] bytes more (in 20 pieces 0.1 s apart) and shuts its
# side; the server, having read to the end, answers 4321 bytes. Both read to the end and close.
BEFORE_THE_CENSUS = r"""
import os, socket, sys, time
a, b = int(sys.argv[1]), int(sys.argv[2])
l = socket.create_server(("127.0.0.1", 0))
server = os.fork()
if server == 0:
    s, got = l.accept()[0], 0
    while got < a:
        got += len(s.recv(a - got))
    s.sendall(b"k")
    while s.recv(65536):
        pass
    s.sendall(b"s" * 4321)
    s.close()
    os._exit(0)
c = socket.create_connection(l.getsockname())
c.sendall(b"a" * a)
assert c.recv(1) == b"k"
print("ready", os.getpid(), server, flush=True)
sys.stdin.readline()
for _ in range(20):  # over several reads of the census: sweeps read the socket as it moves
    c.sendall(b"b" * (b // 20))
    time.sleep(0.1)
c.shutdown(socket.SHUT_WR)
got = 0
while (d := c.recv(65536)):
    got += len(d)
c.close()
assert os.waitpid(server, 0)[1] == 0 and got == 4321, got
"""


@case("stock", "rt")
def top_tcp_counters_before_the_census():
    """A connection made before the census started, then used: its first look is a sweep's, which
    reads the socket's sequence-number offsets without its lock; the bytes moved after that look
    are each end's, exactly, and the look under the lock at the FIN sets those offsets right."""
    prog = subprocess.Popen(["/usr/bin/python3", "-c", BEFORE_THE_CENSUS, "3000000", "7000000"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        _, client, server = prog.stdout.readline().split()
        client, server = int(client), int(server)
        top = top_start()
        try:
            prog.stdin.write("go\n")
            prog.stdin.flush()
            assert prog.wait(timeout=120) == 0, prog.returncode
            top_tables_after(top, [client, server])
        finally:
            tables = top_stop(top)
    finally:
        prog.kill()
        prog.wait()
    if not tcp_counters_attached(tables, alone=True):
        return
    assert_eq("the client's TCP bytes", tcp_counters_of(tables, client), (7000000, 4321))
    assert_eq("the server's TCP bytes", tcp_counters_of(tables, server), (4321, 7000000))


# A socket passed on: the parent connects to a reader (its child) and sends A bytes, forks a sender
# child that shares the socket, says "shared" and waits for a line; closes its own descriptor, says
# "moved" and waits for a line; the sender child then sends B bytes and ends. The reader counts.
PASSED_SOCKET = r"""
import os, socket, sys
a, b = int(sys.argv[1]), int(sys.argv[2])
l = socket.create_server(("127.0.0.1", 0))
reader = os.fork()
if reader == 0:
    s, got = l.accept()[0], 0
    while (d := s.recv(65536)):
        got += len(d)
    print("read", got, flush=True)
    os._exit(0)
c = socket.create_connection(l.getsockname())
c.sendall(b"p" * a)
r, w = os.pipe()
sender = os.fork()
if sender == 0:
    os.read(r, 1)
    c.sendall(b"c" * b)
    os._exit(0)
print("shared", os.getpid(), sender, reader, flush=True)
sys.stdin.readline()
c.close()
print("moved", flush=True)
sys.stdin.readline()
os.write(w, b"g")
os.waitpid(sender, 0)
os.waitpid(reader, 0)
"""


@case("stock", "rt")
def top_tcp_counters_socket_passed():
    """A socket its owner shares with another process is counted once, to the owner, and its row
    is flagged while both hold it; once the owner has let go of it for a whole sweep, it moves to
    the process that holds it, and what that one sends is its own. Each side exact."""
    a, b = 3_000_000, 5_000_000
    top = top_start()
    prog = subprocess.Popen(["/usr/bin/python3", "-c", PASSED_SOCKET, str(a), str(b)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        line = prog.stdout.readline().split()
        assert line[0] == "shared", line
        parent, sender, reader = map(int, line[1:])
        # three reads while both hold it, three more after the parent let go
        for _ in range(2):
            seen = len(top.tables)
            deadline = time.monotonic() + 60
            while len(top.tables) < seen + 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            prog.stdin.write("\n")
            prog.stdin.flush()
            if _ == 0:
                assert prog.stdout.readline().strip() == "moved"
        assert prog.stdout.readline().split() == ["read", str(a + b)]
        assert prog.wait(timeout=60) == 0
        top_tables_after(top, [parent, sender, reader])
    finally:
        if prog.poll() is None:
            prog.kill()
        tables = top_stop(top)
    if not tcp_counters_attached(tables, alone=True):
        return
    assert_eq("the owner's TCP bytes", tcp_counters_of(tables, parent), (a, 0))
    assert_eq("the sender's TCP bytes", tcp_counters_of(tables, sender), (b, 0))
    assert_eq("the reader's TCP bytes", tcp_counters_of(tables, reader), (0, a + b))
    assert any(r["pid"] == parent and r["tcp_socket_shared"] for t in tables for r in t["rows"]), \
        "the shared socket was never flagged"
    assert not any(r["pid"] == sender and r["tcp_socket_shared"] for t in tables for r in t["rows"])


@case("stock", "rt", long=True)
def top_tcp_counters_past_4gib():
    """5 GiB through one socket between two reads of the census (a read every 12 s; a table shows
    all of it): the 32-bit sequence numbers wrap, the 64-bit counters do not, and both ends are
    exact. Under emulation the stream spans several reads: it is exact there too, and all in one
    table wherever the machine moves it in under 6 s. The sender is sendfile()'s, which copies
    nothing, so that the CPU's part is the receive's one copy, the slow part under emulation.
    Where the census takes TCP's copies from
    the counters, the sender's send_copy is the counters less the 5 GiB spliced: none."""
    top = top_start("-i", "12")
    try:
        wl = untraced_workload("tcp-sendfile", "--peer", "process", "--size", "64K", "--messages", "82000")
        assert wl["bytes"] > 5 << 30, wl
        top_tables_after(top, [wl["sender_pid"], wl["receiver_pid"]])
    finally:
        tables = top_stop(top, after=0)
    if not tcp_counters_attached(tables, alone=True):
        return
    assert_eq("the sender's TCP bytes", tcp_counters_of(tables, wl["sender_pid"], sends_copied=False), (wl["bytes"], 0))
    assert_eq("the receiver's TCP bytes", tcp_counters_of(tables, wl["receiver_pid"]), (0, wl["bytes_received"]))
    # all of it between two reads, where the machine was quick enough to fit the stream in one interval
    tabled = [t for t in tables for r in t["rows"] if r.get("pid") == wl["sender_pid"] and r["tcp_sent_bytes"]]
    assert len(tabled) == 1 or wl["elapsed_s"] > 6, f"the stream of {wl['elapsed_s']:.1f} s spanned {len(tabled)} reads"


@case()
def top_json_names_any_bytes():
    """A process named with bytes that are not UTF-8 (prctl(PR_SET_NAME) takes any) is in top's
    JSON tables as valid UTF-8, each invalid byte as '?', as the exporter gives it: every line
    decodes strictly, and its bytes are counted under that name."""
    comm = b'q"b\\s\nx\xff\xed\xa0\x80z'
    top = top_start()
    job = None
    try:
        job = subprocess.Popen(["/usr/bin/python3", "-c", ODD_NAMER, comm.hex(), str(1 << 20)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
        assert job.stdout.readline().strip() == "DONE"
        job.stdin.close()
        assert job.wait(timeout=30) == 0
        top_tables_after(top, [job.pid])
    finally:
        if job and job.poll() is None:
            job.kill()
            job.wait()
        tables = top_stop(top, after=0)
    # the rows of the interval it moved its bytes in and after (python3 read its modules before it
    # named itself)
    rows = [r for t in tables for r in t["rows"] if r.get("pid") == job.pid]
    named = rows[next((i for i, r in enumerate(rows) if "unix_send_copy" in r["sites"]), len(rows)):]
    assert named and {r["comm"] for r in named} == {'q"b\\s\nx????z'}, rows
    sites, _, _ = top_sum(tables, lambda r: r.get("pid") == job.pid)
    assert sites.get("unix_send_copy") == 1 << 20, sites


@case("stock", "rt")
def top_tcp_counters_refused():
    """Where the kernel refuses the sockets' counters (as here, told to: ZCTRACE_REFUSE), the census
    still counts TCP at its copy sites, and says why the counters are not measured: null, not 0."""
    env = dict(os.environ, ZCTRACE_REFUSE="tp_btf:inet_sock_set_state")
    top = top_start(env=env)
    try:
        prog = subprocess.Popen(["/usr/bin/python3", "-c", TOP_PROGRAM, "zct-top-norefs", "300", "1000"])
        assert prog.wait(timeout=60) == 0, prog.returncode
        top_tables_after(top, [prog.pid])
    finally:
        tables = top_stop(top)
    assert not tcp_counters_attached(tables)
    assert "refused by ZCTRACE_REFUSE" in tables[-1]["not_measured"]["tcp_counters"], tables[-1]["not_measured"]
    sites, _, rows = top_sum(tables, lambda r: r["pid"] == prog.pid)
    assert rows and sites.get("send_copy") == 301 * 1000, sites


# Sockets used again and cut short, in a network namespace of their own (unshare -n, lo up), where
# TCP Fast Open is on for both ends. Each case's ends print their pid, sent and received bytes:
# a connect() refused, then the same socket connected; a connection dropped by connect(AF_UNSPEC)
# and the same socket connected again; a Fast Open connect carrying its data in the SYN; a client
# that resets (SO_LINGER 0) after it read the server's answer, the server closing after that.
REUSED_SOCKETS = r"""
import ctypes, os, socket, struct, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
os.system("ip link set lo up")
open("/proc/sys/net/ipv4/tcp_fastopen", "w").write("3")
out = []
def server(l, n):
    sent = got = 0
    for _ in range(n):
        s = l.accept()[0]
        try:
            while (d := s.recv(65536)):
                got += len(d)
        except ConnectionResetError:
            pass  # connect(AF_UNSPEC) resets what it drops, after what it sent was read
        s.close()
    out.append(("server", got, sent))
l = socket.create_server(("127.0.0.1", 0))
l.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, 8)
addr = l.getsockname()
srv = threading.Thread(target=server, args=(l, 5))
srv.start()
# a refused connect, then the same socket connected
c = socket.socket()
try:
    c.connect(("127.0.0.1", 1))
except OSError:
    pass
c.connect(addr)
c.sendall(b"r" * 5000)
c.close()
# connect(AF_UNSPEC) drops the connection; the socket connects again
c = socket.create_connection(addr)
c.sendall(b"u" * 1000)
time.sleep(0.2)
assert libc.connect(c.fileno(), bytes(16), 16) == 0, ctypes.get_errno()
c.connect(addr)
c.sendall(b"v" * 2000)
c.close()
# Fast Open: the first connect gets a cookie, the second carries its data in the SYN
for i in range(2):
    c = socket.socket()
    c.sendto(b"f" * 3000, socket.MSG_FASTOPEN, addr)
    c.close()
# with the cookie held, TCP_FASTOPEN_CONNECT defers the SYN to the first write: closed unwritten,
# it leaves SYN_SENT with no SYN sent and sequence numbers never set
c = socket.socket()
c.setsockopt(socket.IPPROTO_TCP, 30, 1)
c.connect(addr)
c.close()
srv.join()
# a reset after the answer was read: the server closes a socket its peer has reset
l2 = socket.create_server(("127.0.0.1", 0))
def answering():
    s = l2.accept()[0]
    got = len(s.recv(65536))
    s.sendall(b"b" * 500)
    time.sleep(0.5)
    s.close()
    out.append(("answering", got, 500))
t = threading.Thread(target=answering)
t.start()
c = socket.create_connection(l2.getsockname())
c.sendall(b"q" * 700)
assert len(c.recv(65536)) == 500
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
c.close()
t.join()
print(os.getpid(), out)
"""


@case("stock", "rt")
def top_tcp_counters_reused_sockets():
    """A socket connected again after a refused connect() or after connect(AF_UNSPEC) (which zero
    its counters), a TCP Fast Open connect with its data in the SYN, a deferred Fast Open connect
    closed before its SYN, and a server socket reset by its peer before the server closes it:
    every byte goes to the process that moved it, exactly, in a namespace of the test's own."""
    top = top_start()
    try:
        p = subprocess.run(["unshare", "-n", "/usr/bin/python3", "-c", REUSED_SOCKETS], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-800:]
        pid, out = p.stdout.split(" ", 1)
        pid, out = int(pid), dict((name, (got, sent)) for name, got, sent in eval(out))
        top_tables_after(top, [pid])
    finally:
        tables = top_stop(top)
    if not tcp_counters_attached(tables, alone=True):
        return
    # one process holds both ends: what it sent is what its servers read, and the answers back
    assert_eq("the servers' reads", out["server"][0], 5000 + 1000 + 2000 + 2 * 3000)
    assert_eq("the process's TCP bytes", tcp_counters_of(tables, pid),
              (5000 + 1000 + 2000 + 2 * 3000 + 700 + 500, 5000 + 1000 + 2000 + 2 * 3000 + 700 + 500))
