"""The TCP workloads (and io_uring's sends): exact ledgers on loopback, with the peer in a process of
its own, and across two network namespaces joined by veth.
"""

import os

from harness import assert_eq, case, declare, swept, traced
from checks import EXPECT, SIZES, check_sides, check_tcp_ledger, check_veth, our_net_objects


# ---- the four TCP workloads: exact ledgers ----

def make_tcp_test(workload, size, threads):
    def t():
        check_tcp_ledger(workload, size, threads)
    t.__name__ = f"ledger_{workload}_{size}_{threads}thr"
    return t


# ---- two hosts: network namespaces joined by veth ----

def make_netns_tcp_test(workload, size, threads):
    def t():
        before = our_net_objects()
        led = check_tcp_ledger(workload, size, threads, ("--netns",))
        check_veth(led)
        assert_eq("namespaces and links left", our_net_objects(), before)
    t.__name__ = f"netns_ledger_{workload}_{size}_{threads}thr"
    return t


def make_peer_process_test(workload):
    def t():
        led = check_tcp_ledger(workload, "64K", 2, ("--peer", "process"))
        assert led["network"]["path"] == "loopback" and led["network"]["namespaces"] is None, led["network"]
        snd, rcv = check_sides(led)
        assert snd["netns"] == rcv["netns"] == "host", (snd, rcv)
    t.__name__ = f"peer_process_ledger_{workload}"
    return t


def make_netns_zerocopy_path_test(workload):
    def t():
        netns_zerocopy_path(workload)
    t.__name__ = "netns_zerocopy_path" if workload == "tcp-zerocopy" else f"netns_{workload}_path"
    return t


def netns_zerocopy_path(workload):
    """On veth the zerocopy skbs leave the sender's end and reach the receiver's still holding the
    pinned pages (SKBFL_DONT_ORPHAN); the copy comes on delivery there, and the notices say COPIED."""
    led = check_tcp_ledger(workload, "64K", 1, ("--netns",))
    net = led["network"]
    path = {(e["stage"], e["dev"]): e for e in led["zerocopy_path"]}
    tx = path.get(("xmit", net["veth"]["sender"]))
    rx = path.get(("receive", net["veth"]["receiver"]))
    assert tx and rx, led["zerocopy_path"]
    assert tx["netns_role"] == "sender" and rx["netns_role"] == "receiver", (tx, rx)
    for e in (tx, rx):
        assert e["skbs"] > 0 and e["dont_orphan"] == e["skbs"], e
        assert e["bytes"] >= led["workload"]["bytes"], (e, led["workload"]["bytes"])
    # nothing on loopback: every zerocopy skb took the veth pair
    assert all(e["dev"] != "lo" for e in led["zerocopy_path"]), led["zerocopy_path"]
    zc = led["workload"]["zerocopy"]
    assert_eq("COPIED notices", zc["notices_copied"], zc["notices"])


# ---- MSG_ZEROCOPY's notices: however many sends one covers ----

def zerocopy_counts(led, udp=False):
    """A MSG_ZEROCOPY run's notices against the workload's own count: every send completed, every
    notice's range matched to the sends zctrace kept, and the bytes of its COPIED notices the
    bytes copied on delivery (loopback: all that was pinned)."""
    wl, notices = led["workload"], led["zerocopy_notices"]
    zc = wl["zerocopy"]
    assert_eq("completed calls == sends", zc["completed"], zc["sends"])
    assert_eq("notices", notices["notices"], zc["notices"])
    assert_eq("completed calls", notices["calls_completed"], zc["completed"])
    assert_eq("notices with no send kept", notices["calls_unmatched"], 0)
    pinned = led["sites"]["zc_pin"]["bytes"]
    assert_eq("zc_pin", pinned, wl["bytes"] - (led["sites"]["udp_send_copy"]["bytes"] if udp else 0))
    assert_eq("bytes of COPIED notices", notices["bytes_copied_notice"], pinned)
    assert all(c["ok"] for c in led["checks"]), [c for c in led["checks"] if not c["ok"]]
    return zc


@case("stock", "rt", "old")
def zerocopy_notices_coalesced():
    """tcp-zerocopy reading its notices after every 2,000 sends: the kernel coalesces the notices
    that wait, and one covers 1,000 sends or more. zctrace matches each to the bytes of its sends
    with two lookups of the socket's running sum, whatever its length, exactly."""
    p, led = traced("tcp-zerocopy", "--size", "1K", "--messages", "12000", "--notice-batch", "2000")
    assert p.returncode == 0, f"exit {p.returncode}: {p.stdout[-1500:]} {p.stderr[-300:]}"
    zc = zerocopy_counts(led)
    assert zc["widest"] >= 1000, zc


@case("stock", "rt", "old", long=True)
def zerocopy_small_messages_repeated():
    """1 KiB MSG_ZEROCOPY sends from 4 threads for a second, TCP and UDP, run again and again
    ($ZCTRACE_TEST_REPEAT times, 3 by default) as the repetitions of one sweep, whose runs share
    one tracer: the shape where the kernel coalesces completions into notices of any length, at
    the timing's whim. Every run's notices match its sends."""
    repeat = int(os.environ.get("ZCTRACE_TEST_REPEAT", "3"))
    shape = ("--size", "1K", "--threads", "4", "--duration", "1")
    runs = swept("tcp-zerocopy,udp-zerocopy", "--sizes", "1K", "--threads", "4", "--duration", "1",
                 "--reps", str(repeat), runs=2 * repeat, rerun=lambda row: traced(row["workload"], *shape))
    assert [r["workload"] for r, _, _ in runs] == ["tcp-zerocopy", "udp-zerocopy"] * repeat, runs
    for row, status, led in runs:
        failed = [c for c in led["checks"] if not c["ok"]]
        assert status == 0, (f"run {row['run']} ({row['workload']}): exit {status}", failed, row.get("error"))
        zerocopy_counts(led, udp=row["workload"] == "udp-zerocopy")


# The guest parts that run a TCP ledger (workload, size, threads) besides this machine: a stock
# kernel the 64 KiB shapes and small zerocopy sends; PREEMPT_RT those and io_uring's zerocopy from
# 4 threads; 5.10 the four TCP workloads at 1 KiB x 4 threads and 64 KiB x 1.
LEDGER_PARTS = {
    ("tcp-twocopy", "1K", 4): ("old",), ("tcp-onecopy", "1K", 4): ("old",), ("tcp-sendfile", "1K", 4): ("old",),
    ("tcp-zerocopy", "1K", 4): ("stock", "rt", "old"),
    ("tcp-twocopy", "64K", 1): ("stock", "rt", "old"), ("tcp-onecopy", "64K", 1): ("stock", "rt", "old"),
    ("tcp-zerocopy", "64K", 1): ("stock", "rt", "old"), ("tcp-sendfile", "64K", 1): ("stock", "rt", "old"),
    ("tcp-zerocopy", "64K", 4): ("stock", "rt", "old"),
    ("uring-send", "64K", 1): ("stock",), ("uring-sendzc", "64K", 1): ("stock",),
    ("uring-sendzc", "64K", 4): ("stock", "rt"),
}
for w in EXPECT:
    for size in SIZES:
        for threads in (1, 4):
            declare(make_tcp_test(w, size, threads), *LEDGER_PARTS.get((w, size, threads), ()))


for w in EXPECT:
    for threads in (1, 2):
        declare(make_netns_tcp_test(w, "64K", threads))
for w in ("tcp-zerocopy", "tcp-sendfile", "uring-sendzc"):
    declare(make_peer_process_test(w))
for w in ("tcp-zerocopy", "uring-sendzc"):
    declare(make_netns_zerocopy_path_test(w), "stock")
