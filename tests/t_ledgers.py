"""The TCP workloads (and io_uring's sends): exact ledgers on loopback, with the peer in a process of
its own, and across two network namespaces joined by veth.
"""

from harness import assert_eq
from checks import check_sides, check_tcp_ledger, check_veth, our_net_objects


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
