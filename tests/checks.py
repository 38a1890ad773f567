"""Ledger checks more than one topic runs: the TCP workloads' exact ledgers, the sites and methods a
kernel offers, the file and pipe ledgers, network namespaces joined by veth, the two ends of a
workload on two hosts, and the program top and export trace.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

from harness import case, TIMEOUT, ZCTRACE, assert_eq, ownerless_zc_skbs, site_bytes, traced, traced_cmd, zctrace


# ---- the TCP workloads: exact ledgers ----

SIZES = {"1K": 1024, "64K": 65536, "1M": 1 << 20}
MESSAGES = {"1K": "3000", "64K": "400", "1M": "24"}

EXPECT = {
    "tcp-twocopy": {"user_copy": "sent", "send_copy": "sent", "zc_pin": 0, "splice_ref": 0,
                    "deferred_copy": 0},
    "tcp-onecopy": {"user_copy": 0, "send_copy": "sent", "zc_pin": 0, "splice_ref": 0,
                    "deferred_copy": 0},
    "tcp-zerocopy": {"user_copy": 0, "send_copy": 0, "zc_pin": "sent", "splice_ref": 0,
                     "deferred_copy": "sent"},
    "tcp-sendfile": {"user_copy": 0, "send_copy": 0, "zc_pin": 0, "splice_ref": "sent",
                     "deferred_copy": 0},
    # io_uring: the same sites as send() and MSG_ZEROCOPY, whoever issues the request
    "uring-send": {"user_copy": 0, "send_copy": "sent", "zc_pin": 0, "splice_ref": 0,
                   "deferred_copy": 0},
    "uring-sendzc": {"user_copy": 0, "send_copy": 0, "zc_pin": "sent", "splice_ref": 0,
                     "deferred_copy": "sent"},
}


def deferred_want(led, sent):
    """The deferred copies a ledger must show for @sent zerocopy bytes. Every method counts per skb
    (fentry or kprobe skb_copy_ubufs, tp_btf netif_receive_skb) and sees each delivery: a segment
    TCP sent again is copied again, and the zerocopy path counted what reached delivery."""
    if not sent:
        return sent
    delivered = sum(e["bytes"] for e in led["zerocopy_path"] or () if e["stage"] == "receive")
    assert delivered >= sent, f"zerocopy bytes delivered {delivered} < sent {sent}"
    return delivered


def check_tcp_ledger(workload, size, threads, peer=(), runner=None):
    p, led = (runner or traced)(workload, "--size", size, "--threads", str(threads), "--messages",
                                MESSAGES[size], *peer)
    assert p.returncode == 0, f"exit {p.returncode}: {p.stdout[-1500:]} {p.stderr[-300:]}"
    wl = led["workload"]
    n = int(MESSAGES[size]) * threads
    assert_eq("messages", wl["messages"], n)
    sent = wl["bytes"]
    assert_eq("workload bytes sent", sent, n * SIZES[size])
    assert_eq("workload bytes received", wl["bytes_received"], sent)
    # the kernel's figures, against the workload's own count
    assert_eq("recv_copy", site_bytes(led, "recv_copy"), wl["bytes_received"])
    # the calls' own account, apart from the sites: every byte across the boundary, none unattributed
    account = {(r["group"]): 0 for r in led["boundary"]["calls"]}
    for r in led["boundary"]["calls"]:
        account[r["group"]] += r["bytes"]
    # sendfile() moves page references, not bytes from user memory: no send call carries them
    assert_eq("TCP send calls' bytes", account.get("TCP/UDP send", 0), 0 if workload == "tcp-sendfile" else sent)
    assert_eq("TCP receive calls' bytes", account.get("TCP receive"), wl["bytes_received"])
    assert_eq("unattributed", led["unattributed"], 0)
    for site in PIPE_ALL_SITES:  # a receiver process's result crosses no pipe either
        assert_eq(site, site_bytes(led, site), 0)
    for site, want in EXPECT[workload].items():
        want = sent if want == "sent" else want
        if site == "deferred_copy":
            want = deferred_want(led, want)
        assert_eq(site, site_bytes(led, site), want)
    if workload.startswith("uring-"):
        # the requests' bytes in the boundary account, as a syscall's would be, under their opcode
        op = "io_uring SEND_ZC" if workload == "uring-sendzc" else "io_uring SEND"
        rows = [r for r in led["boundary"]["calls"] if r["call"] == op and r["file"] == "TCP socket"]
        assert rows and sum(r["bytes"] for r in rows) == sent, led["boundary"]["calls"]
        assert_eq(f"{op} requests", sum(r["calls"] for r in rows), 8 * n)  # one per field
    if EXPECT[workload].get("send_copy") == "sent" and not workload.startswith("uring-"):
        # a copying send is one copy, whatever it moved and on every method (the loop's chunks are
        # not); an io_uring request sent short is sent again by the kernel, a call of its own
        sends = sum(r["calls"] for r in led["boundary"]["calls"]
                    if r["group"] == "TCP/UDP send" and r["file"] == "TCP socket")
        assert_eq("send_copy copies == TCP send calls", led["sites"]["send_copy"]["count"], sends)
    if workload == "tcp-twocopy":
        # one USDT per message, 8 field memcpys each
        assert_eq("user_copy count", led["sites"]["user_copy"]["count"], 8 * n)
    if "zerocopy" in wl:
        # MSG_ZEROCOPY's error-queue notices, or io_uring's notification CQEs (one per SEND_ZC)
        zc, notices = wl["zerocopy"], led["zerocopy_notices"]
        said = zc.get("usage_reports", True)  # io_uring's notifications say "copied" only if asked
        assert_eq("COPIED notices", notices["notices_copied"], zc["notices_copied"] if said else 0)
        assert_eq("notices", notices["notices"], zc["notices"])
        assert_eq("completed calls", notices["calls_completed"], zc["completed"])
        assert_eq("notices with no send seen", notices["calls_unmatched"], 0)
        # every call completed once; the ranges may arrive out of order (an skb retransmitted on a
        # loaded machine is freed late), which the workload counts as gaps: reported, not a fault
        assert_eq("completed calls == sends", zc["completed"], zc["sends"])
        # on loopback and veth every byte is copied on delivery, and the notices say so
        assert_eq("bytes of COPIED notices", notices["bytes_copied_notice"], sent if said else 0)
    assert all(c["ok"] for c in led["checks"]), [c for c in led["checks"] if not c["ok"]]
    return led


# ---- sites and methods ----

def best_method(site):
    p = zctrace("probes")
    m = re.search(rf"^{site}\s+(\w+)", p.stdout, re.M)
    reason = re.search(r"refused fentry: (.*)", p.stdout)
    return m.group(1) if m else None, reason.group(1) if reason else ""


FILE_SITES = ("file_read_copy", "file_write_copy", "kernel_copy")
KERNEL = os.environ.get("ZCTRACE_KERNEL_UNDER_TEST")  # set inside make test-kernels' guests


def kernel_at_least(major, minor):
    """Whether the running kernel is Linux @major.@minor or later."""
    return tuple(map(int, re.match(r"(\d+)\.(\d+)", os.uname().release).groups())) >= (major, minor)


COPY_SITES = ("send_copy", "zc_pin", "splice_ref", "deferred_copy", "recv_copy")


def preempt_rt():
    """Whether this kernel is a PREEMPT_RT build."""
    try:
        return open("/sys/kernel/realtime").read().strip() == "1"
    except OSError:
        return "PREEMPT_RT" in os.uname().version


def probes_by_method(method):
    p = zctrace("probes", f"--method={method}")
    assert p.returncode == 0, p.stderr
    chosen = dict(re.findall(r"^(\w+)\s+(fentry|kprobe|tp_btf|raw_tp|usdt|none)\s", p.stdout, re.M))
    return chosen, p.stdout


# ---- file workloads: exact ledgers ----

FILE_SIZE = 5_000_000  # not a multiple of a page or of a chunk: the tails are counted too
FILE_EXPECT = {
    # site -> "file" (the file's size), "sent", "received" or 0
    "file-readwrite": {"file_read_copy": "file", "file_write_copy": "file", "kernel_copy": 0},
    "file-sendfile": {"file_read_copy": 0, "file_write_copy": 0, "kernel_copy": "file"},
    "file-splice": {"file_read_copy": 0, "file_write_copy": 0, "kernel_copy": "file", "pipe_ref": "file"},
    "file-copyrange": {"file_read_copy": 0, "file_write_copy": 0, "kernel_copy": "file"},
    "serve-readsend": {"file_read_copy": "sent", "send_copy": "sent", "splice_ref": 0,
                       "recv_copy": "received", "file_write_copy": 0, "kernel_copy": 0},
    "serve-sendfile": {"file_read_copy": 0, "send_copy": 0, "splice_ref": "sent",
                       "recv_copy": "received", "file_write_copy": 0, "kernel_copy": 0},
}
NET_SITES = ("send_copy", "zc_pin", "splice_ref", "deferred_copy", "recv_copy")


def check_file_ledger(workload, cache, size=None, threads=1, extra=(), unmeasured=()):
    """@unmeasured: sites this kernel cannot measure with the method asked (extra): the ledger
    must show them as not measured, and fail for that reason alone."""
    args = ["--file-size", str(FILE_SIZE), "--cache", cache]
    if size:
        args += ["--size", size]
    if workload.startswith("serve-"):
        args += ["--threads", str(threads)]
    p, led = traced(workload, *args, extra=extra)
    assert p.returncode == (1 if unmeasured else 0), f"exit {p.returncode}: {p.stdout[-1500:]} {p.stderr[-300:]}"
    wl = led["workload"]
    assert wl["verified"] is True, "the workload's own check of the data failed"
    assert_eq("file size", wl["file_size"], FILE_SIZE)
    want = {"file": FILE_SIZE, "sent": wl["bytes"], "received": wl.get("bytes_received"), 0: 0}
    expect = dict(FILE_EXPECT[workload])
    if workload.startswith("file-"):
        assert_eq("bytes copied", wl["bytes"], FILE_SIZE)
        expect.update({s: 0 for s in NET_SITES})
    else:
        assert_eq("bytes served", wl["bytes"], FILE_SIZE * threads)
        assert_eq("bytes received", wl["bytes_received"], FILE_SIZE * threads)
    expect["user_copy"] = 0
    for site in ("pipe_write_copy", "pipe_ref", "pipe_read_copy"):
        expect.setdefault(site, 0)
    for site, w in expect.items():
        if site in unmeasured:
            assert led["sites"][site] is None, f"{site}: unmeasured site shown as figures"
            continue
        assert_eq(site, site_bytes(led, site), want[w])
    # the cache state the workload claims, confirmed by the kernel's page-cache insertions
    pages = wl["source"]["pages"]
    assert_eq("source pages", pages, -(-FILE_SIZE // wl["page_size"]))
    added = led["page_cache"]["source_pages_added"]
    if cache == "cold":
        assert_eq("cold: resident before", wl["source"]["resident_before"], 0)
        assert added * 100 >= pages * 99, f"cold run brought {added} of {pages} pages in"
    else:
        assert_eq("warm: resident before", wl["source"]["resident_before"], pages)
        assert added * 100 <= pages, f"warm run brought {added} of {pages} pages in"
    # every call the workload made entered the kernel once, in the measured phase
    for name, n in wl["calls"].items():
        assert_eq(f"{name} calls", led["phase_syscalls"].get(name, 0), n)
        if wl["chunks"] is not None:
            chunks = wl["chunks"]
            assert chunks == threads * -(-FILE_SIZE // wl["size"]), (chunks, wl["size"])
            assert_eq(f"{name} calls per chunk", n, chunks * wl["per_chunk"][name])
    assert led["phase_syscalls_per_mib"] > 0
    failed = [c for c in led["checks"] if not c["ok"]]
    # what an unmeasured site would have counted stays in the ledger, unattributed
    unattributed = [c for c in failed if c["name"] == "no unattributed bytes"]
    if unmeasured and unattributed:
        assert "a site not measured" in unattributed[0]["detail"] and led["unattributed"] > 0, unattributed
        failed.remove(unattributed[0])
    assert all(c["name"].split(" ")[0] in unmeasured and "not measured" in c["detail"] for c in failed), failed
    assert {c["name"].split(" ")[0] for c in failed} == set(unmeasured), (failed, unmeasured)
    return led


# ---- two hosts: network namespaces joined by veth ----

NS_PREFIX, DEV_PREFIX = "zctrace-", "zct-"


def zctrace_alive(pid):
    """Whether @pid is a zctrace still running (not a zombie)."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return False
    return stat[stat.index("(") + 1:stat.rindex(")")] == "zctrace" and stat.rsplit(")", 1)[1].split()[0] != "Z"


def our_net_objects(mine=None):
    """Namespaces and links with zctrace's prefixes: what a run may make, and must remove. Their
    names carry the pid of the zctrace that made them: those of another zctrace still running (a
    test beside this one, run.py -j) are left out, but for @mine's."""
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout.split("\n")
    named = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []

    def ours(name, prefix):
        pid = name[len(prefix):].split("-", 1)[0]
        return name.startswith(prefix) and not (pid.isdigit() and int(pid) != mine and zctrace_alive(pid))
    return (sorted(l for l in ns if ours(l, NS_PREFIX)),
            sorted(n for n in (l.split(":")[1].strip().split("@")[0] for l in links if f" {DEV_PREFIX}" in l)
                   if ours(n, DEV_PREFIX)),
            sorted(n for n in named if ours(n, NS_PREFIX)))


def netns_holders(ino):
    """Processes still in, or holding, the network namespace with this inode."""
    want, found = f"net:[{ino}]", []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/ns/net") == want:
                found.append(pid)
                continue
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == want:
                    found.append(pid)
                    break
        except OSError:
            pass
    return found


def check_sides(led, requests=0):
    """The sender's and the receiver's own ledgers, by pid, reconcile exactly."""
    wl = led["workload"]
    procs = {p["role"]: p for p in led["by_process"]}
    assert "sender" in procs and "receiver" in procs, [p["role"] for p in led["by_process"]]
    snd, rcv = procs["sender"], procs["receiver"]
    assert_eq("sender pid", snd["pid"], wl["sender_pid"])
    assert_eq("receiver pid", rcv["pid"], wl["receiver_pid"])
    out = lambda p: sum(p["sites"][s]["bytes"] for s in ("send_copy", "zc_pin", "splice_ref"))
    assert_eq("sender's send sites", out(snd), wl["bytes"])
    assert_eq("receiver's recv_copy", rcv["sites"]["recv_copy"]["bytes"], wl["bytes_received"])
    assert_eq("receiver's send sites (requests)", out(rcv), requests)
    assert_eq("sender's recv_copy (requests)", snd["sites"]["recv_copy"]["bytes"], requests)
    return snd, rcv


def check_veth(led):
    net = led["network"]
    assert net and net["path"] == "veth" and net["peer"] == "netns", net
    assert net["namespaces"]["sender"].startswith(NS_PREFIX), net
    assert net["sender_addr"] == "198.18.0.1" and net["receiver_addr"] == "198.18.0.2", net
    snd, rcv = check_sides(led, led["workload"].get("request_bytes", 0))
    assert snd["netns"] == net["namespaces"]["sender"] and rcv["netns"] == net["namespaces"]["receiver"], \
        (snd["netns"], rcv["netns"], net)


# ---- pipes: exact ledgers ----

PIPE_SITES = ("pipe_write_copy", "pipe_read_copy")
# and the page references a pipe takes (vmsplice), which a copy through a pipe leaves at 0
PIPE_ALL_SITES = PIPE_SITES + ("pipe_ref",)

# site -> "sent", "received" or 0; every site not named must show 0
PIPE_EXPECT = {
    "pipe-copy": {"pipe_write_copy": "sent", "pipe_read_copy": "received"},
    "pipe-vmsplice": {"pipe_ref": "sent", "splice_ref": "sent", "recv_copy": "received"},
}
# sites a workload makes no claim on (zctrace list): not measured there fails nothing
PIPE_UNCLAIMED = {"pipe-copy": (), "pipe-vmsplice": FILE_SITES}
PIPE_MESSAGES = 300


def check_pipe_ledger(workload, size="64K", threads=1, args=(), extra=(), unmeasured=(), env=None,
                      messages=PIPE_MESSAGES):
    """@workload's ledger, every site exact against the workload's own counts; @unmeasured: sites
    this kernel cannot measure with the method asked (@extra): shown as not measured, and failing
    the run for that reason alone."""
    p, led = traced(workload, "--size", size, "--threads", str(threads), "--messages", str(messages),
                    *args, extra=extra, env=env)
    wl = led["workload"]
    n = messages * threads
    assert_eq("messages", wl["messages"], n)
    assert_eq("workload bytes sent", wl["bytes"], n * SIZES[size])
    assert_eq("workload bytes received", wl["bytes_received"], wl["bytes"])
    want = {"sent": wl["bytes"], "received": wl["bytes_received"], 0: 0}
    for site in led["sites"]:
        if site in unmeasured or (site == "tx_copy" and led["sites"][site] is None):
            # tx_copy: no copy on transmit to count without fentry or kprobes, or without a zerocopy send
            assert led["sites"][site] is None, f"{site}: unmeasured site shown as figures"
            continue
        assert_eq(site, site_bytes(led, site), want[PIPE_EXPECT[workload].get(site, 0)])
    failed = [c for c in led["checks"] if not c["ok"]]
    must_fail = set(unmeasured) - set(PIPE_UNCLAIMED[workload])
    assert p.returncode == (1 if must_fail else 0), f"exit {p.returncode}: {failed} {p.stderr[-300:]}"
    assert {c["name"].split(" ")[0] for c in failed} == must_fail, failed
    assert all("not measured" in c["detail"] for c in failed), failed
    return led


def check_pipe_ends(led):
    """pipe-copy with the readers in a child process: each end's pipe site under its own pid."""
    wl = led["workload"]
    procs = {p["role"]: p for p in led["by_process"]}
    wr, rd = procs["sender"], procs["receiver"]
    assert_eq("writer pid", wr["pid"], wl["sender_pid"])
    assert_eq("reader pid", rd["pid"], wl["receiver_pid"])
    assert wr["pid"] != rd["pid"], (wr["pid"], rd["pid"])
    assert_eq("writer's pipe_write_copy", wr["sites"]["pipe_write_copy"]["bytes"], wl["bytes"])
    assert_eq("reader's pipe_read_copy", rd["sites"]["pipe_read_copy"]["bytes"], wl["bytes_received"])
    assert_eq("writer's pipe_read_copy", wr["sites"]["pipe_read_copy"]["bytes"], 0)
    assert_eq("reader's pipe_write_copy", rd["sites"]["pipe_write_copy"]["bytes"], 0)


# A helper program: every other way bytes go into and out of pipes, each checked and counted; the
# counts go to the file in argv[1] (stdout may be a pipe, whose bytes the ledger would hold too).
PIPE_PATHS = r"""
import ctypes, json, os, sys, tempfile
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
def moved(n, want, what):
    if n != want:
        sys.exit(f"{what}: {n} of {want} ({os.strerror(ctypes.get_errno())})")
    return n
def read_n(fd, n):
    got = b""
    for _ in range(100):
        got += os.read(fd, n - len(got))
        if len(got) == n:
            return n
    sys.exit("short reads")
w_copy = r_copy = ref = 0
d = tempfile.mkdtemp()
fifo = os.path.join(d, "fifo")
os.mkfifo(fifo)
frd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
fwr = os.open(fifo, os.O_WRONLY)
w_copy += moved(os.write(fwr, b"f" * 1000), 1000, "write to a FIFO")
r_copy += read_n(frd, 1000)
r, w = os.pipe()
w_copy += moved(os.writev(w, [b"a" * 1000, b"b" * 1500, b"c" * 500]), 3000, "writev")
r_copy += moved(os.readv(r, [bytearray(1024), bytearray(4096)]), 3000, "readv")
with tempfile.TemporaryFile() as f:
    f.write(b"s" * 5000)
    f.flush()
    ref += moved(os.sendfile(w, f.fileno(), 0, 5000), 5000, "sendfile into a pipe")
r_copy += read_n(r, 5000)
r2, w2 = os.pipe()
r3, w3 = os.pipe()
w_copy += moved(os.write(w, b"x" * 2000), 2000, "write")
ref += moved(os.splice(r, w2, 2000), 2000, "splice pipe to pipe")
ref += moved(libc.tee(r2, w3, 2000, 0), 2000, "tee")
r_copy += read_n(r2, 2000) + read_n(r3, 2000)
src, dst = ctypes.create_string_buffer(b"v" * 8192, 8192), ctypes.create_string_buffer(8192)
ref += moved(libc.vmsplice(w, ctypes.byref(iovec(ctypes.addressof(src), 8192)), 1, 0), 8192, "vmsplice in")
r_copy += moved(libc.vmsplice(r, ctypes.byref(iovec(ctypes.addressof(dst), 8192)), 1, 0), 8192, "vmsplice out")
if dst.raw != src.raw:
    sys.exit("vmsplice out: not what went in")
os.unlink(fifo)
os.rmdir(d)
with open(sys.argv[1], "w") as out:
    json.dump({"pipe_write_copy": w_copy, "pipe_ref": ref, "pipe_read_copy": r_copy}, out)
"""


@case("stock")
def pipe_paths_exact(extra=()):
    """A FIFO, writev/readv, sendfile into a pipe, splice pipe->pipe, tee, vmsplice in and out of a
    pipe: the three pipe sites equal the program's own counts exactly (a command's whole run)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as own:
        p, led = traced_cmd([sys.executable, "-c", PIPE_PATHS, own.name], extra)
        assert p.returncode == 0, p.stdout[-800:] + p.stderr[-800:]
        counts = json.load(open(own.name))
    assert_eq("the program's own counts", counts, {"pipe_write_copy": 6000, "pipe_ref": 17192, "pipe_read_copy": 21192})
    for site, n in counts.items():
        assert_eq(site, site_bytes(led, site), n)
    return led


# ---- two ends of a workload on two hosts ----

def remote_ends_run(workload, rx_prefix, rx_addr, port, wargs, method=None):
    """The receiving end of @workload (--listen @rx_addr:@port, under @rx_prefix: ip netns exec NS)
    and its sending end (--connect), each traced by its own zctrace run: ((process, ledger) of the
    sender, (process, ledger) of the receiver)."""
    extra = ("--method", method) if method else ()
    with tempfile.TemporaryDirectory() as d:
        rx_json, tx_json = os.path.join(d, "rx.json"), os.path.join(d, "tx.json")
        rx = subprocess.Popen([*rx_prefix, ZCTRACE, "run", "--no-hist", "--json", rx_json, *extra, workload,
                               "--listen", f"{rx_addr}:{port}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        try:
            tx = zctrace("run", "--no-hist", "--json", tx_json, *extra, workload, "--connect", f"{rx_addr}:{port}",
                         *wargs)
            out, err = rx.communicate(timeout=TIMEOUT)
        finally:
            if rx.poll() is None:
                rx.kill()
                rx.communicate()
        rxp = subprocess.CompletedProcess(rx.args, rx.returncode, out, err)
        for p, path in ((tx, tx_json), (rxp, rx_json)):
            assert os.path.exists(path), (p.returncode, p.stdout[-1500:], p.stderr[-800:])
        return (tx, json.load(open(tx_json))), (rxp, json.load(open(rx_json)))


def check_remote_ends(tx, rx, kind):
    """Each end's ledger holds its own side exactly, and the two name the same run."""
    (tp, tl), (rp, rl) = tx, rx
    tw, rw = tl["workload"], rl["workload"]
    for p, led in ((tp, tl), (rp, rl)):
        failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
        assert p.returncode == 0 and not failed, (p.returncode, failed, p.stderr[-800:])
        assert "one end of a run on two hosts" in p.stdout, p.stdout[-1500:]
    assert tw["remote"]["role"] == "sender" and rw["remote"]["role"] == "receiver", (tw["remote"], rw["remote"])
    assert tw["remote"]["run"] == rw["remote"]["run"], (tw["remote"], rw["remote"])
    assert tw["remote"]["dev_kind"] == rw["remote"]["dev_kind"] == kind, (tw["remote"], rw["remote"])
    sent = tw["bytes"]
    assert sent > 0 and tw["bytes_received"] == 0 and rw["bytes"] == 0, (tw, rw)
    assert_eq("bytes received (receiving end's count)", rw["bytes_received"], sent)
    assert_eq("bytes received (its answer to the sending end)", tw["remote"]["peer_received"], sent)
    assert_eq("receiving end's recv_copy", site_bytes(rl, "recv_copy"), sent)
    assert_eq("sending end's recv_copy", site_bytes(tl, "recv_copy"), 0)
    for site in ("send_copy", "zc_pin", "splice_ref", "deferred_copy"):
        assert_eq(f"receiving end's {site}", site_bytes(rl, site), 0)
    return sent


def check_remote_udp_ends(tx, rx, kind):
    """Each end of a UDP workload exact to its own count; the receiving end's count is what the
    sending end learned, and each datagram not received is counted lost."""
    (tp, tl), (rp, rl) = tx, rx
    tw, rw = tl["workload"], rl["workload"]
    for p, led in ((tp, tl), (rp, rl)):
        failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
        assert p.returncode == 0 and not failed, (p.returncode, failed, p.stderr[-800:])
    assert tw["remote"]["run"] == rw["remote"]["run"], (tw["remote"], rw["remote"])
    assert tw["remote"]["dev_kind"] == rw["remote"]["dev_kind"] == kind, (tw["remote"], rw["remote"])
    sent, got = tw["bytes"], rw["bytes_received"]
    assert sent > 0 and tw["bytes_received"] == 0 and rw["bytes"] == 0, (tw, rw)
    assert_eq("what the receiving end answered", tw["remote"]["peer_received"], got)
    assert_eq("what the sending end told", rw["remote"]["peer_sent"], sent)
    assert_eq("datagrams: sent", rw["datagrams"]["sent"], tw["datagrams"]["sent"])
    assert_eq("datagrams: received", tw["datagrams"]["received"], rw["datagrams"]["received"])
    assert_eq("datagrams: lost", tw["datagrams"]["lost"], tw["datagrams"]["sent"] - rw["datagrams"]["received"])
    assert_eq("receiving end's udp_recv_copy", site_bytes(rl, "udp_recv_copy"), got)
    for site in ("udp_send_copy", "zc_pin", "deferred_copy", "recv_copy"):
        assert_eq(f"receiving end's {site}", site_bytes(rl, site), 0)
    assert_eq("sending end's udp_recv_copy", site_bytes(tl, "udp_recv_copy"), 0)
    return sent


def unskipped_pair(run, attempts=3):
    """remote_ends_run() made again while either end's kernel skipped runs of its programs or had
    zerocopy skbs of no known sender (unskipped())."""
    for attempt in range(attempts):
        tx, rx = run(attempt)
        if attempt < attempts - 1 and any((led.get("program_runs_skipped") or {"total": 0})["total"] or
                                          ownerless_zc_skbs(led) for _, led in (tx, rx)):
            print("  (skipped runs or ownerless zerocopy skbs; once more)", flush=True)
            continue
        return tx, rx


# ---- the program zctrace top and export trace ----

# Names itself with the bytes of argv[1] (hex; prctl(PR_SET_NAME), as any program may), then moves
# argv[2] bytes over a Unix socket pair and waits for a line.
ODD_NAMER = r"""
import ctypes, socket, sys
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(bytes.fromhex(sys.argv[1])), 0, 0, 0)
a, b = socket.socketpair()
for _ in range(int(sys.argv[2]) // 4096):
    a.sendall(b"x" * 4096)
    got = 0
    while got < 4096:
        got += len(b.recv(4096 - got))
print("DONE", flush=True)
sys.stdin.readline()
"""

# A process named argv[1] moving argv[2] MiB through a pipe of its own, 1 MiB written and read back
# at a time (the pipe made 1 MiB large); then it prints its own CPU time (ns, getrusage), and it
# waits for a line on stdin before it exits.
PIPE_MOVER = r"""
import ctypes, fcntl, os, resource, sys
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(sys.argv[1].encode()), 0, 0, 0)
r, w = os.pipe()
fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
buf = b"x" * (1 << 20)
for _ in range(int(sys.argv[2])):
    os.write(w, buf)
    got = 0
    while got < len(buf):
        got += len(os.read(r, len(buf) - got))
u = resource.getrusage(resource.RUSAGE_SELF)
print("CPU", int((u.ru_utime + u.ru_stime) * 1e9), flush=True)
sys.stdin.readline()
"""


# MiB the copy-cost tests move: tens of samples of each copy here; in an emulated guest fewer
# (there only where the time lands is checked)
COST_MIB = 128 if os.environ.get("ZCTRACE_KERNEL_UNDER_TEST") else 1024


def copy_cpu_plausible(what, cpu_ns, nbytes, own_ns, sample_ns):
    """A process's copy CPU time from the sampler (@cpu_ns, samples of @sample_ns) for @nbytes
    copied: within 0.01-5 ns a byte (any machine copies in that band, busy or not), within the
    samples' Poisson spread (two standard deviations and one sample), and no more
    than the process's own CPU time (@own_ns, the kernel's rusage) beyond the samples' Poisson
    spread (two standard deviations and one sample). In a guest of make test-kernels the CPU is
    emulated: there the time is only held to be there, and to the process's own."""
    assert cpu_ns > 0, f"{what}: no copy CPU time"
    spread = 2 * (cpu_ns / sample_ns) ** 0.5 * sample_ns + sample_ns
    if not os.environ.get("ZCTRACE_KERNEL_UNDER_TEST"):
        assert cpu_ns + spread >= 0.01 * nbytes and cpu_ns - spread <= 5 * nbytes, \
            f"{what}: {cpu_ns / nbytes:.3f} ns/B ({cpu_ns} ns for {nbytes} B)"
    slack = 2 * (own_ns / sample_ns) ** 0.5 * sample_ns + sample_ns
    assert cpu_ns <= own_ns + slack, f"{what}: copy CPU {cpu_ns} ns beyond the process's own {own_ns} ns"


# A process named argv[1] moving N messages of SIZE bytes through a Unix socket pair and a pipe,
# each read back whole; with argv[4], it first moves itself into that cgroup (its cgroup.procs).
TOP_PROGRAM = r"""
import ctypes, os, socket, sys
n, size = int(sys.argv[2]), int(sys.argv[3])
if len(sys.argv) > 4:
    open(sys.argv[4], "w").write(str(os.getpid()))
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
a, b = socket.socketpair()
r, w = os.pipe()
l = socket.create_server(("127.0.0.1", 0))
c = socket.create_connection(l.getsockname())
s = l.accept()[0]
buf = b"x" * size
for _ in range(n):
    a.sendall(buf)
    got = 0
    while got < size:
        got += len(b.recv(size - got))
    c.sendall(buf)
    got = 0
    while got < size:
        got += len(s.recv(size - got))
    os.write(w, buf)
    got = 0
    while got < size:
        got += len(os.read(r, size - got))
# TCP with MSG_TRUNC discards what it returns: no copy
c.sendall(buf)
got = 0
while got < size:
    got += len(s.recv(size - got, socket.MSG_TRUNC))
"""


def tcp_sweep_refused_here(why):
    """Whether @why is this machine's verifier refusing the sweep's storage for a socket reached
    from a descriptor: a kernel that takes the struct sock read through bpf_sock_from_file()'s
    socket as untrusted, which bpf_sk_storage_get() refuses. The census then counts TCP per call,
    and says why. The kernels make test-kernels boots load the sweep: there no refusal is taken."""
    return (not os.environ.get("ZCTRACE_KERNEL_UNDER_TEST") and "program tcp_sweep_iter: load refused: verifier:" in why
            and "untrusted_ptr_" in why)
