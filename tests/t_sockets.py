"""UDP and Unix sockets: exact ledgers (threads, processes, network namespaces, GSO, IPv6); network
namespaces: signals, rights, usage errors, link shaping, a workload's two ends in two namespaces.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import time

from harness import case, declare, TIMEOUT, WORKLOADS, ZCTRACE, assert_eq, read_csv, scratch, site_bytes, Skip, sweep, traced, zctrace
from checks import (
    FILE_SITES, check_remote_ends, check_remote_udp_ends, check_tcp_ledger, kernel_at_least, netns_holders,
    our_net_objects, remote_ends_run, unskipped_pair)


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


@case("stock")
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


@case()
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


# The guest parts that run a socket ledger besides this machine: UDP and Unix on every kernel;
# UDP across namespaces, with GSO, and over IPv6 on a stock one.
SOCK_PARTS = {("udp-copy", 2, "process"): ("stock", "rt", "old"), ("udp-zerocopy", 1, "thread"): ("stock", "rt", "old"),
              ("unix-stream", 2, "process"): ("stock", "rt", "old")}
for w in SOCK_EXPECT:
    for threads in (1, 2):
        for peer in ("thread", "process"):
            declare(make_sock_test(w, threads, peer), *SOCK_PARTS.get((w, threads, peer), ()))
for w in ("udp-copy", "udp-zerocopy"):
    for threads in (1, 2):
        declare(make_udp_netns_test(w, threads), *(("stock",) if threads == 1 else ()))
for peer in ("thread", "process"):
    declare(make_udp_gso_test("udp-zerocopy", peer), *(("stock",) if peer == "thread" else ()))
declare(make_udp_gso_test("udp-copy", "thread"))
declare(make_udp_netns_test("udp-zerocopy", 1, ("--gso", "1400"), 14000, 10, "_gso"))
declare(make_udp_ipv6_test("udp-copy"), "stock")
declare(make_udp_ipv6_test("udp-zerocopy"))


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
            assert_eq("names during the run", our_net_objects(mine=z.pid), before)
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


for sig in (signal.SIGINT, signal.SIGTERM):
    declare(make_netns_signal_test(sig))


@case()
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


@case(root=False)
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


@case()
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


@case()
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
