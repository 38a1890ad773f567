#!/usr/bin/env python3
"""A TCP MSG_ZEROCOPY sender and its receiver, for tests across a NIC pair (tools/nic-pair.sh).

  zc_tcp_peer.py recv ADDR PORT           print "LISTEN" once listening, accept one connection (60 s
                                          at most), read to its end, print "RECV bytes"
  zc_tcp_peer.py send ADDR PORT N SIZE    N sends of SIZE bytes with MSG_ZEROCOPY (SO_ZEROCOPY),
                                          reap every completion notice from MSG_ERRQUEUE, print
                                          "SEND bytes calls notices copied_notices copied_calls
                                          copied_bytes retransmitted_bytes" (TCP_INFO's
                                          tcpi_bytes_retrans once every notice is in: all acked)
Every wait is bounded (10 s without progress ends it with exit 1).
"""
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


def send(addr, port, n, size):
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
                raise SystemExit("zc_tcp_peer: no completion notice in 10 s")
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
        k = s.sendmsg([buf], [], MSG_ZEROCOPY)
        call_bytes.append(k)
        sent += k
        reap(False)
    s.shutdown(socket.SHUT_WR)
    while done["calls"] < n:
        reap(True)
    # struct tcp_info: tcpi_bytes_retrans, a __u64 at byte 208 (Linux 4.19 on)
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    retrans = struct.unpack_from("=Q", info, 208)[0] if len(info) >= 216 else -1
    print("SEND", sent, n, done["notices"], done["copied_notices"], done["copied_calls"],
          done.get("copied_bytes", 0), retrans, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "recv":
        recv(sys.argv[2], int(sys.argv[3]))
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
