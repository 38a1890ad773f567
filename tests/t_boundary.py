"""The syscall boundary's own account: sendmmsg/recvmmsg, a descriptor reused by another type, a
receive that sleeps before its exit, a Python program's mixed paths, I/O syscalls at their own
functions, UDP zerocopy pins.
"""

import json
import os
import re
import tempfile

from harness import case, assert_eq, site_bytes, traced_cmd, zctrace


# ---- the syscall boundary: each call's own account ----

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


@case("stock", "rt", "old")
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


@case("stock")
def boundary_fd_reused_by_another_type():
    """One descriptor number reused round after round by a TCP socket, a UDP socket, a pipe and a
    regular file: each call's bytes land in its own file type's row of the account, exactly (a
    verdict on the descriptor's last file is never reused for the next). A write(), a read() and a
    MSG_ZEROCOPY send() of 400 bytes on the TCP socket, then a sendto() and a recv() of 400 on the
    UDP one on the same descriptor: neither UDP call is taken for TCP's (the mark a TCP send leaves
    for its exit, which neither the write's nor the zerocopy send's exit takes). With the best
    methods and with kprobes at most."""
    n = 80
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


@case("stock")
def boundary_receive_sleeps_before_its_exit():
    """A recvfrom() whose thread sleeps between its socket's return and its syscall's exit (a major
    fault on the address length it writes back), on TCP and on UDP: each call counted once in the
    account, exactly. The socket's return notes its type on the CPU; the sleep takes the note away,
    and the exit reads the descriptor instead of counting the call a second time. Each round also
    discards 100 bytes with a TCP recv(MSG_TRUNC): counted as calls of no known size, not as bytes.
    With the best methods and with kprobes at most."""
    n = 80
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


@case("stock")
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


@case("stock")
def io_syscalls_at_their_functions():
    """A command's run follows its I/O syscalls at their own functions (fentry/fexit on
    __x64_sys_read and the rest of the I/O calls) where the kernel allows fentry, not by the raw
    syscall tracepoints, which slow every syscall of the machine: the file, pipe and socket sites
    and the boundary account hold exactly the program's bytes either way, and the syscalls by
    number are "not measured" there; --complete takes the tracepoints and counts them. Where
    fentry is refused (this machine), the tracepoints, and why. On the kernels make test-kernels
    boots, the fentry path must be the one taken."""
    n, size = 160, 1400
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


@case("stock")
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
