#!/usr/bin/env python3
"""Loopback against veth: the same workloads with the receiver in its own process, once over
loopback (--peer process) and once in a second network namespace joined by veth (--netns).

Every run is traced (zctrace run --json); the table gives the median throughput of N runs and, from
the kernel's ledger, bytes per payload byte at each site, the CPU copies per byte, and where the
zerocopy skbs were delivered (and so copied). remote-fileread is timed per MiB, seq and random.

Usage: tools/paths.py [--reps N] [--rate RATE]   (--rate shapes the veth link, e.g. 1gbit)
Needs root: zctrace makes the namespaces.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZCTRACE = os.path.join(ROOT, "zctrace")
SITES = ("send_copy", "zc_pin", "splice_ref", "deferred_copy", "recv_copy", "file_read_copy")
PATHS = (("loopback", ["--peer", "process"]), ("veth", ["--netns"]))


def traced(workload, args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, workload, *args],
                           capture_output=True, text=True, timeout=300)
        try:
            led = json.load(open(f.name))
        except ValueError:
            sys.exit(f"paths: {workload} {' '.join(args)}: no ledger (exit {p.returncode}): "
                     f"{p.stderr.strip()[-300:]}")
    if p.returncode != 0:
        failed = [c["name"] for c in led.get("checks", []) if not c["ok"]]
        sys.exit(f"paths: {workload} {' '.join(args)}: exit {p.returncode}, failed checks: {failed}")
    return led


def per_byte(led, site):
    s = led["sites"].get(site)
    return s["bytes"] / led["workload"]["bytes"] if s else float("nan")


def delivered(led):
    """Where the zerocopy skbs were delivered: device (namespace role), bytes per payload byte."""
    rx = [e for e in led.get("zerocopy_path") or [] if e["stage"] == "receive"]
    if not rx:
        return "-"
    where = ",".join(sorted({f"{e['dev']}({e['netns_role'] or e['netns']})" for e in rx}))
    return f"{where} {sum(e['bytes'] for e in rx) / led['workload']['bytes']:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rate", help="shape the veth link (tc tbf), e.g. 1gbit")
    a = ap.parse_args()
    if a.reps < 1 or a.reps > 50:
        ap.error("--reps: 1 to 50")
    veth = ["--netns"] + (["--rate", a.rate] if a.rate else [])
    paths = (PATHS[0], ("veth" + (f" {a.rate}" if a.rate else ""), veth))

    print(f"{'workload':14} {'path':14} {'Gbit/s':>7} " + " ".join(f"{s:>13}" for s in SITES[:5])
          + f" {'CPU copies/B':>12}  zerocopy skbs delivered at (bytes/B)")
    for w in ("tcp-zerocopy", "uring-sendzc", "tcp-sendfile"):
        for name, args in paths:
            leds = [traced(w, ["--size", "64K", "--messages", "4000", *args]) for _ in range(a.reps)]
            gbit = statistics.median(l["workload"]["throughput_gbit_s"] for l in leds)
            led = leds[len(leds) // 2]
            cpu = sum(per_byte(led, s) for s in SITES if led["sites"].get(s) and led["sites"][s]["cpu_copy"])
            print(f"{w:14} {name:14} {gbit:7.2f} " + " ".join(f"{per_byte(led, s):13.3f}" for s in SITES[:5])
                  + f" {cpu:12.3f}  {delivered(led)}")

    print(f"\n{'remote-fileread':16} {'path':14} {'ms/MiB':>8} {'MiB/s':>8} {'p50 us':>8} {'p99 us':>8} "
          f"{'CPU copies/B':>12}")
    for pattern in ("seq", "random"):
        for name, args in paths:
            leds = [traced("remote-fileread", ["--file-size", "128M", "--size", "64K", "--pattern", pattern,
                                               *args]) for _ in range(a.reps)]
            ms = statistics.median(l["workload"]["ms_per_mib"] for l in leds)
            led = leds[len(leds) // 2]
            lat = led["workload"]["latency_ns"]
            cpu = sum(per_byte(led, s) for s in SITES if led["sites"].get(s) and led["sites"][s]["cpu_copy"])
            print(f"{pattern + ' 64K':16} {name:14} {ms:8.3f} {1000 / ms:8.0f} {lat['p50'] / 1e3:8.1f} "
                  f"{lat['p99'] / 1e3:8.1f} {cpu:12.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
