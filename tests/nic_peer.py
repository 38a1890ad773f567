#!/usr/bin/env python3
"""Senders (TCP and UDP MSG_ZEROCOPY, sendfile) and their receivers, for tests across a NIC pair
(tools/nic-pair.sh).

  nic_peer.py recv ADDR PORT           print "LISTEN" once listening, accept one connection (60 s
                                          at most), read to its end, print "RECV bytes"
  nic_peer.py send ADDR PORT N SIZE    N sends of SIZE bytes with MSG_ZEROCOPY (SO_ZEROCOPY),
                                          reap every completion notice from MSG_ERRQUEUE, print
                                          "SEND bytes calls notices copied_notices copied_calls
                                          copied_bytes retransmitted_bytes" (TCP_INFO's
                                          tcpi_bytes_retrans once every notice is in: all acked)
  nic_peer.py udp-recv ADDR PORT N     print "LISTEN" once bound, read datagrams until N came or
                                          none for 5 s (60 s for the first), print "RECV bytes"
  nic_peer.py udp-send ADDR PORT N SIZE
                                          N datagrams of SIZE bytes with MSG_ZEROCOPY on a
                                          connected UDP socket, each notice reaped, printed as
                                          "send" prints it (retransmitted_bytes 0)
  nic_peer.py sendfile ADDR PORT N SIZE FILE
                                          N sendfile() calls of SIZE bytes each from FILE (made
                                          here, N * SIZE bytes, read once so that it is in the
                                          page cache), print "SENDFILE bytes retransmitted_bytes"
                                          once the receiver has read it all
Every wait is bounded (10 s without progress ends it with exit 1).
"""
import errno
import os
import select
import socket
import struct
import sys

SO_ZEROCOPY, MSG_ZEROCOPY, SO_EE_ORIGIN_ZEROCOPY, SO_EE_CODE_ZEROCOPY_COPIED = 60, 0x4000000, 5, 1


def recv(addr, port):
    srv = socket.create_server((addr, port))
    print("LISTEN", flush=True)
    srv.settimeout(60)
    conn, _ = srv.accept()
    conn.settimeout(10)
    got = 0
    while True:
        b = conn.recv(1 << 20)
        if not b:
            break
        got += len(b)
    print("RECV", got, flush=True)


def retransmitted(s):
    """TCP_INFO's tcpi_bytes_retrans: a __u64 at byte 208 of struct tcp_info (Linux 4.19 on)."""
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return struct.unpack_from("=Q", info, 208)[0] if len(info) >= 216 else -1


def sendfile(addr, port, n, size, path):
    with open(path, "wb") as f:
        f.write(b"s" * (n * size))
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass
    s = socket.create_connection((addr, port), timeout=10)
    # blocking (sendfile() does not wait on a socket with a timeout); a send that waits 10 s fails
    s.settimeout(None)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 10, 0))
    sent = 0
    with open(path, "rb") as f:
        for i in range(n):
            off = i * size
            while off < (i + 1) * size:
                k = os.sendfile(s.fileno(), f.fileno(), off, (i + 1) * size - off)
                if k <= 0:
                    raise SystemExit("nic_peer: sendfile returned %d" % k)
                off += k
                sent += k
    s.shutdown(socket.SHUT_WR)
    # the receiver closes once it has read everything: every byte acked, none sent again after
    s.settimeout(10)
    while s.recv(1 << 16):
        pass
    print("SENDFILE", sent, retransmitted(s), flush=True)
    s.close()
    os.unlink(path)


def udp_recv(addr, port, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((addr, port))
    print("LISTEN", flush=True)
    # the first may wait for a traced sender to start (60 s), the others 5 s each
    s.settimeout(60)
    got = 0
    for _ in range(n):
        try:
            got += len(s.recv(1 << 16))
        except socket.timeout:
            break
        s.settimeout(5)
    print("RECV", got, flush=True)


def send(addr, port, n, size, udp=False):
    if udp:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect((addr, port))
    else:
        s = socket.create_connection((addr, port), timeout=10)
    # blocking, so that MSG_DONTWAIT is the kernel's; a send that waits 10 s fails (SO_SNDTIMEO)
    s.settimeout(None)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 10, 0))
    s.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
    buf = bytearray(b"z" * size)
    done = {"notices": 0, "calls": 0, "copied_notices": 0, "copied_calls": 0}
    call_bytes = []

    def reap(wait):
        while True:
            if wait and not select.select([s], [], [], 10)[0]:
                raise SystemExit("nic_peer: no completion notice in 10 s")
            try:
                _, anc, _, _ = s.recvmsg(1, 1024, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            for _, _, data in anc:
                _, origin, _, code, _, lo, hi = struct.unpack("=IBBBBII", data[:16])
                if origin != SO_EE_ORIGIN_ZEROCOPY:
                    continue
                done["notices"] += 1
                done["calls"] += hi - lo + 1
                if code & SO_EE_CODE_ZEROCOPY_COPIED:
                    done["copied_notices"] += 1
                    done["copied_calls"] += hi - lo + 1
                    done["copied_bytes"] = done.get("copied_bytes", 0) + sum(call_bytes[lo:hi + 1])
            wait = False

    sent = 0
    for _ in range(n):
        while True:
            try:
                k = s.sendmsg([buf], [], MSG_ZEROCOPY)
                break
            except OSError as e:
                # the socket's option memory holds the notices not yet read: read one, then again
                if e.errno != errno.ENOBUFS:
                    raise
                reap(True)
        call_bytes.append(k)
        sent += k
        reap(False)
    if not udp:
        s.shutdown(socket.SHUT_WR)
    while done["calls"] < n:
        reap(True)
    retrans = 0 if udp else retransmitted(s)
    print("SEND", sent, n, done["notices"], done["copied_notices"], done["copied_calls"],
          done.get("copied_bytes", 0), retrans, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "recv":
        recv(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "udp-recv":
        udp_recv(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "udp-send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), udp=True)
    elif sys.argv[1] == "sendfile":
        sendfile(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
