"""Real NICs (tools/nic-pair.sh, on make test-kernels' device path; skipped without
ZCTRACE_NIC_PAIR): zerocopy and sendfile copied or held on transmit, UDP zerocopy, a workload's
two ends across a NIC pair.
"""

import json
import os
import re
import subprocess
import tempfile

from harness import case, ROOT, assert_eq, refused, site_bytes, Skip, unskipped, zctrace
from checks import check_remote_ends, check_remote_udp_ends, remote_ends_run, unskipped_pair


# ---- two NIC pairs on QEMU hubs ----

def nic_short(res, no_sg, tcp=True):
    """What nic_peer.py's traced sender (nic_peer_run()'s @res) has short in its sites: the bytes
    it sent, held by the send's site (zc_pin, udp_send_copy or splice_ref), and over TCP to a
    device without scatter-gather (@no_sg) those sent and retransmitted in tx_copy; or None."""
    p, led = res[0], res[1]
    m = re.search(r"^SEND (\d+) (?:\d+ ){5}(\d+)$", p.stdout, re.M) or re.search(r"^SENDFILE (\d+) (\d+)$", p.stdout, re.M)
    if not m:
        return None
    sent, retrans = map(int, m.groups())
    got = {s: (led["sites"].get(s) or {}).get("bytes", 0) for s in ("zc_pin", "udp_send_copy", "splice_ref", "tx_copy")}
    held = got["zc_pin"] + got["udp_send_copy"] + got["splice_ref"]
    if held < sent:
        return f"the send's sites hold {held} B of {sent} B sent"
    if tcp and no_sg and got["tx_copy"] < sent + retrans:
        return f"tx_copy holds {got['tx_copy']} B of {sent + retrans} B sent and retransmitted"
    return None


# Attempts at a NIC test's traced run (unskipped()): a kprobe program on the transmit path
# (skb_segment, __pskb_pull_tail) is skipped where a softirq sends on a CPU in the middle of another
# kprobe program; rare on a quiet host, it cost 3 runs of 3 on a loaded one (docs/sites-and-kernels.md).
# tests/device-suite.sh steers the interrupts away from the tests' CPU, so that it should not happen.
NIC_ATTEMPTS = 5


def nic_peer_run(prog, peer, port, n, size, method, env, ns="zcnic", mode=("send",)):
    """nic_peer.py's receiver behind a NIC pair (in namespace @ns) and its sender (@mode: send,
    udp-send, or sendfile FILE) traced by a command's run: (the run, its JSON ledger, the
    receiver's stdout and stderr)."""
    rx_args = ["udp-recv", peer, str(port), str(n)] if mode[0] == "udp-send" else ["recv", peer, str(port)]
    rx = subprocess.Popen(["ip", "netns", "exec", ns, "/usr/bin/python3", prog, *rx_args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert rx.stdout.readline().strip() == "LISTEN", rx.stderr.read()[-500:]
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            p = zctrace("run", "--no-hist", "--json", f.name, "--method", method, "--",
                        "/usr/bin/python3", prog, mode[0], peer, str(port), str(n), str(size), *mode[1:],
                        env=env)
            led = json.load(open(f.name))
        out, err = rx.communicate(timeout=60)
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.communicate()
    return p, led, out, err


@case("nic")
def nic_zerocopy_copied_on_transmit():
    """Across two NICs on one QEMU hub (tools/nic-pair.sh: virtio-net with no vnet header, so the
    device offers neither scatter-gather nor checksum offload), a TCP MSG_ZEROCOPY sender's pages
    are pinned (the route's caps carry software GSO's scatter-gather) and the kernel copies them on
    transmit (skb_segment, __pskb_pull_tail): its notices say COPIED. With fentry and with kprobes
    tx_copy holds exactly the bytes sent and those retransmitted (the socket's TCP_INFO), and the
    notices' bytes are in it; nothing is copied on delivery (deferred_copy 0); the pins, the
    notices and the receiver's bytes are the program's own counts. Where that copy is not counted
    (no tracepoint marks it; simulated here by refusing its attach points), the run never reads
    "the zero-copy send held": the check that holds the COPIED notices' bytes to a copy site fails,
    naming them, and the run exits 1. A run in which the kernel skipped a program's runs says so
    and is made once more, and so is a short one on a kernel that does not count the kprobe runs
    it skips (unskipped())."""
    peer = os.environ.get("ZCTRACE_NIC_PAIR")
    if not peer:
        raise Skip("needs two NICs joined back to back (make test-kernels boots them: tests/device-suite.sh)")
    n, size = 100, 65536
    prog = os.path.join(ROOT, "tests", "nic_peer.py")
    unseen = refused(["fentry:skb_segment", "kprobe:skb_segment"])
    for port, method, env in ((5601, "fentry", None), (5602, "kprobe", None), (5603, "fentry", unseen)):
        p, led, out, err = unskipped(lambda attempt: nic_peer_run(prog, peer, port + 10 * attempt, n, size, method, env),
                                     NIC_ATTEMPTS, short=None if env else lambda res: nic_short(res, True))
        m = re.search(r"^SEND (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M)
        assert m and re.search(r"^RECV (\d+)$", out, re.M), (method, p.stdout[-1500:], p.stderr[-500:], out, err)
        sent, calls, notices, copied_notices, copied_calls, copied_bytes, retrans = map(int, m.groups())
        assert_eq(f"bytes received {method}", int(re.search(r"^RECV (\d+)$", out, re.M).group(1)), sent)
        zn = led["zerocopy_notices"]
        assert_eq(f"notices {method}", zn["notices"], notices)
        assert_eq(f"COPIED notices {method}", zn["notices_copied"], copied_notices)
        assert_eq(f"bytes of COPIED notices {method}", zn["bytes_copied_notice"], copied_bytes)
        # the kernel's notices understate it: skb_segment() copies without clearing the zerocopy flag
        assert "the zero-copy send held" not in p.stdout, p.stdout[-2500:]
        failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
        assert_eq(f"zc_pin {method}", site_bytes(led, "zc_pin"), sent)
        assert_eq(f"deferred_copy {method}", site_bytes(led, "deferred_copy"), 0)
        if not env:
            assert led["probes"]["tx_copy"] == method, (method, led["probes"])
            # a retransmitted segment leaves through the same copy again
            assert_eq(f"tx_copy {method} (sent, and {retrans} B retransmitted)", site_bytes(led, "tx_copy"),
                      sent + retrans)
            assert p.returncode == 0 and not failed, (method, p.returncode, failed)
            assert re.search(r"of the pinned bytes were copied on transmit, for a device without scatter-gather",
                             p.stdout), p.stdout[-2500:]
            understated = re.search(r"^  The kernel's notices say COPIED for .* only: skb_segment\(\) copies", p.stdout, re.M)
            assert bool(understated) == (copied_bytes < sent + retrans), (copied_bytes, sent, retrans, p.stdout[-2500:])
        else:
            assert led["sites"]["tx_copy"] is None, led["sites"]["tx_copy"]
            assert re.search(r"notices say COPIED for [\d.]+ \w+ of the sends, more than any copy site counted",
                             p.stdout), p.stdout[-2500:]
            assert p.returncode == 1 and list(failed) == ["COPIED notices' bytes in a copy site"], (p.returncode, failed)
            assert f"covering {copied_bytes} B; deferred_copy 0 B, tx_copy not measured" in \
                failed["COPIED notices' bytes in a copy site"], failed

@case("nic")
def nic_zerocopy_held_on_sg_device():
    """Across two Intel e1000e NICs on one QEMU hub (tools/nic-pair.sh; the device model checksums
    and segments, so the driver offers scatter-gather and TSO), a TCP MSG_ZEROCOPY sender's pinned
    pages leave as they are: with fentry and with kprobes, zc_pin is the bytes sent, nothing is
    copied on transmit or later (tx_copy 0, deferred_copy 0), no notice says COPIED, and zc_path
    shows the skbs handed to that NIC with the user's pages: the bytes sent and retransmitted
    (TCP_INFO). The run says the zero-copy send held, and exits 0."""
    peer = os.environ.get("ZCTRACE_NIC_PAIR_SG")
    if not peer:
        raise Skip("needs two e1000e NICs joined back to back (make test-kernels boots them: tests/device-suite.sh)")
    n, size = 100, 65536
    prog = os.path.join(ROOT, "tests", "nic_peer.py")
    route = subprocess.run(["ip", "-o", "route", "get", peer], capture_output=True, text=True, timeout=30).stdout
    dev = re.search(r" dev (\S+)", route).group(1)
    for port, method in ((5701, "fentry"), (5702, "kprobe")):
        p, led, out, err = unskipped(lambda attempt: nic_peer_run(prog, peer, port + 10 * attempt, n, size, method,
                                                                 None, ns="zcsg"),
                                     NIC_ATTEMPTS, short=lambda res: nic_short(res, False))
        m = re.search(r"^SEND (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M)
        assert m and re.search(r"^RECV (\d+)$", out, re.M), (method, p.stdout[-1500:], p.stderr[-500:], out, err)
        sent, calls, notices, copied_notices, copied_calls, copied_bytes, retrans = map(int, m.groups())
        assert_eq(f"bytes received {method}", int(re.search(r"^RECV (\d+)$", out, re.M).group(1)), sent)
        assert copied_notices == 0 and calls == n, ("the device copied: not the device this test wants", m.groups())
        zn = led["zerocopy_notices"]
        assert_eq(f"notices {method}", zn["notices"], notices)
        assert_eq(f"COPIED notices {method}", zn["notices_copied"], 0)
        assert_eq(f"zc_pin {method}", site_bytes(led, "zc_pin"), sent)
        assert_eq(f"tx_copy {method}", site_bytes(led, "tx_copy"), 0)
        assert_eq(f"deferred_copy {method}", site_bytes(led, "deferred_copy"), 0)
        xmit = [r for r in led["zerocopy_path"] if r["stage"] == "xmit"]
        assert [r["dev"] for r in xmit] == [dev], (dev, led["zerocopy_path"])
        assert_eq(f"zc_path xmit bytes {method} (sent, and {retrans} B retransmitted)", xmit[0]["bytes"],
                  sent + retrans)
        failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
        assert p.returncode == 0 and not failed, (method, p.returncode, failed)
        assert "the zero-copy send held" in p.stdout, p.stdout[-2500:]


def nic_pairs_runs(first_port, mode, tcp=True):
    """For each NIC pair (virtio-net, then e1000e) and method (fentry, kprobe): (namespace, whether
    the device lacks scatter-gather, method, and nic_peer_run()'s run of nic_peer.py @mode, a
    TCP sender's if @tcp)."""
    pairs = [(os.environ.get("ZCTRACE_NIC_PAIR"), "zcnic", True), (os.environ.get("ZCTRACE_NIC_PAIR_SG"), "zcsg", False)]
    if not all(p[0] for p in pairs):
        raise Skip("needs the NIC pairs (make test-kernels boots them: tests/device-suite.sh)")
    prog = os.path.join(ROOT, "tests", "nic_peer.py")
    port = first_port
    for peer, ns, no_sg in pairs:
        for method in ("fentry", "kprobe"):
            port += 10 * NIC_ATTEMPTS
            yield ns, no_sg, method, unskipped(lambda attempt: mode(prog, peer, port + 10 * attempt, method, ns),
                                               NIC_ATTEMPTS, short=lambda res: nic_short(res, no_sg, tcp))


@case("nic")
def nic_sendfile_copied_on_transmit():
    """sendfile() over TCP across each NIC pair (tools/nic-pair.sh): page references to the page
    cache go into the socket (splice_ref, the bytes sent); a device without scatter-gather
    (virtio-net here) has the kernel copy them on transmit, counted for the sender in tx_copy (the
    bytes sent and retransmitted, TCP_INFO), while e1000e takes them as they are (tx_copy 0). With
    fentry and with kprobes; nothing copied from user memory (user_copy, send_copy 0)."""
    n, size = 100, 65536
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        src = os.path.join(d, "src")
        runs = list(nic_pairs_runs(5801, lambda prog, peer, port, method, ns: nic_peer_run(
            prog, peer, port, n, size, method, None, ns=ns, mode=("sendfile", src))))
    for ns, copies, method, (p, led, out, err) in runs:
        m = re.search(r"^SENDFILE (\d+) (\d+)$", p.stdout, re.M)
        assert m and re.search(r"^RECV (\d+)$", out, re.M), (ns, method, p.stdout[-1500:], p.stderr[-500:], out, err)
        sent, retrans = map(int, m.groups())
        assert_eq(f"bytes received {ns} {method}", int(re.search(r"^RECV (\d+)$", out, re.M).group(1)), sent)
        assert_eq(f"sent {ns} {method}", sent, n * size)
        assert_eq(f"splice_ref {ns} {method}", site_bytes(led, "splice_ref"), sent)
        assert_eq(f"send_copy {ns} {method}", site_bytes(led, "send_copy"), 0)
        assert led["probes"]["tx_copy"] == method, (method, led["probes"])
        assert_eq(f"tx_copy {ns} {method} (sent, and {retrans} B retransmitted)", site_bytes(led, "tx_copy"),
                  sent + retrans if copies else 0)
        failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
        assert p.returncode == 0 and not failed, (ns, method, p.returncode, failed)


@case("nic")
def nic_udp_zerocopy():
    """UDP MSG_ZEROCOPY across each NIC pair (tools/nic-pair.sh), with fentry and with kprobes.
    Over e1000e (scatter-gather, checksum offload) every datagram's pages are pinned: zc_pin is
    the bytes sent, udp_send_copy 0, no notice says COPIED. Over virtio-net (neither) the kernel
    copies each datagram at the send instead (__ip_append_data() drops zerocopy for such a
    device): udp_send_copy is the bytes sent, zc_pin 0, and every notice says COPIED, as the
    program's own count has it; the run never says the zero-copy send held. Nothing is copied on
    transmit or delivery (tx_copy, deferred_copy 0), and the receiver got every byte: a run in
    which datagrams were lost between the two emulated NICs (UDP on a guest that fell behind: 46
    of 200 over virtio-net once) says so and is made again, up to NIC_ATTEMPTS runs."""
    n, size = 200, 1400

    def delivered(prog, peer, port, method, ns):
        for attempt in range(NIC_ATTEMPTS):
            res = nic_peer_run(prog, peer, port + attempt, n, size, method, None, ns=ns, mode=("udp-send",))
            sent = re.search(r"^SEND (\d+) ", res[0].stdout, re.M)
            got = re.search(r"^RECV (\d+)$", res[2], re.M)
            if not (sent and got) or int(got.group(1)) >= int(sent.group(1)) or attempt == NIC_ATTEMPTS - 1:
                return res
            print(f"  ({ns} {method}: the receiver got {got.group(1)} B of {sent.group(1)} B sent: datagrams "
                  "lost between the NICs; once more)", flush=True)

    for ns, copies, method, (p, led, out, err) in nic_pairs_runs(5901, delivered, tcp=False):
        m = re.search(r"^SEND (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M)
        assert m and re.search(r"^RECV (\d+)$", out, re.M), (ns, method, p.stdout[-1500:], p.stderr[-500:], out, err)
        sent, calls, notices, copied_notices, copied_calls, copied_bytes, _ = map(int, m.groups())
        assert_eq(f"bytes received {ns} {method}", int(re.search(r"^RECV (\d+)$", out, re.M).group(1)), sent)
        assert_eq(f"sent {ns} {method}", sent, n * size)
        assert_eq(f"calls completed {ns} {method}", calls, n)
        assert_eq(f"COPIED calls {ns} {method} (program)", copied_calls, n if copies else 0)
        zn = led["zerocopy_notices"]
        assert_eq(f"notices {ns} {method}", zn["notices"], notices)
        assert_eq(f"COPIED notices {ns} {method}", zn["notices_copied"], copied_notices)
        assert_eq(f"udp_send_copy {ns} {method}", site_bytes(led, "udp_send_copy"), sent if copies else 0)
        assert_eq(f"zc_pin {ns} {method}", site_bytes(led, "zc_pin"), 0 if copies else sent)
        assert_eq(f"tx_copy {ns} {method}", site_bytes(led, "tx_copy"), 0)
        assert_eq(f"deferred_copy {ns} {method}", site_bytes(led, "deferred_copy"), 0)
        failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
        assert p.returncode == 0 and not failed, (ns, method, p.returncode, failed)
        assert ("the zero-copy send held" in p.stdout) != copies, (ns, method, p.stdout[-2500:])


@case("nic")
def nic_remote_ends():
    """The two ends of the built-in workloads across each NIC pair (tools/nic-pair.sh), as on two
    hosts: the receiving end (--listen) behind the second NIC, the sending end (--connect) in the
    root namespace, each traced by its own zctrace (fentry). tcp-zerocopy, uring-sendzc and
    tcp-sendfile: the sender's pinned pages or page references are copied on transmit to the virtio-net device,
    which lacks scatter-gather (tx_copy = the bytes sent and retransmitted, TCP_INFO), and by no
    CPU for e1000e (tx_copy 0); never on delivery (deferred_copy 0); the receiving end's recv_copy
    is what it received. UDP (udp-copy, udp-zerocopy with and without --gso): pinned for e1000e,
    copied at the send for virtio-net (udp_send_copy, every notice COPIED), nothing after. Each
    ledger's own checks hold, and a run whose notices say COPIED never reads "the zero-copy send
    held"."""
    pairs = [(os.environ.get("ZCTRACE_NIC_PAIR"), "zcnic", False), (os.environ.get("ZCTRACE_NIC_PAIR_SG"), "zcsg", True)]
    if not all(p[0] for p in pairs):
        raise Skip("needs the NIC pairs (make test-kernels boots them: tests/device-suite.sh)")
    port = 6301
    for peer, ns, sg in pairs:
        for workload in ("tcp-zerocopy", "uring-sendzc", "tcp-sendfile"):
            port += 30
            tx, rx = unskipped_pair(lambda attempt: remote_ends_run(workload, ("ip", "netns", "exec", ns), peer,
                                                                    port + 10 * attempt,
                                                                    ("--threads", "2", "--messages", "60"),
                                                                    method="fentry"))
            sent = check_remote_ends(tx, rx, "device")
            r = tx[1]["workload"]["remote"]
            assert r["dev_sg"] == sg, (ns, r)
            assert_eq(f"{ns} {workload} tx_copy (sent, and {r['bytes_retransmitted']} B retransmitted)",
                      site_bytes(tx[1], "tx_copy"), 0 if sg else sent + r["bytes_retransmitted"])
            assert_eq(f"{ns} {workload} deferred_copy", site_bytes(tx[1], "deferred_copy"), 0)
            if workload != "tcp-sendfile":
                assert ("the zero-copy send held" in tx[0].stdout) == sg, (ns, workload, tx[0].stdout[-2500:])
        # UDP pins for a device with scatter-gather and checksum offload; for virtio-net here the
        # kernel copies each datagram at the send instead, and every notice says COPIED
        for workload, extra in (("udp-copy", ()), ("udp-zerocopy", ()), ("udp-zerocopy", ("--gso", "1400", "--size", "14000"))):
            port += 30
            tx, rx = unskipped_pair(lambda attempt: remote_ends_run(workload, ("ip", "netns", "exec", ns), peer,
                                                                    port + 10 * attempt,
                                                                    ("--threads", "2", "--messages", "60", *extra),
                                                                    method="fentry"))
            if "--gso" in extra and not sg and tx[0].returncode != 0 and "send: Input/output error" in tx[0].stderr:
                # UDP segmentation needs the device's checksum offload: some kernels (6.1) refuse
                # the send for one without (udp_send_skb(): EIO), and the run says so
                assert tx[1]["workload"]["remote"]["dev_csum"] is False, tx[1]["workload"]["remote"]
                print(f"  ({ns}: the kernel refuses UDP segmentation without checksum offload: EIO)", flush=True)
                continue
            sent = check_remote_udp_ends(tx, rx, "device")
            copies = workload == "udp-copy" or not sg
            assert_eq(f"{ns} {workload} {extra} udp_send_copy", site_bytes(tx[1], "udp_send_copy"), sent if copies else 0)
            assert_eq(f"{ns} {workload} {extra} zc_pin", site_bytes(tx[1], "zc_pin"), 0 if copies else sent)
            for site in ("deferred_copy", "tx_copy"):
                # udp-copy makes no zerocopy send: the transmit path is not followed for it
                if not (workload == "udp-copy" and site == "tx_copy"):
                    assert_eq(f"{ns} {workload} {extra} {site}", site_bytes(tx[1], site), 0)
            if workload == "udp-zerocopy":
                zn = tx[1]["zerocopy_notices"]
                assert_eq(f"{ns} {extra} COPIED notices", zn["notices_copied"], 0 if sg else zn["notices"])
                assert ("the zero-copy send held" in tx[0].stdout) == sg, (ns, workload, tx[0].stdout[-2500:])
