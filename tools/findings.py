"""The findings of a sweep, computed from its rows: who wins where, the sizes at which one way
overtakes another and in how many repetitions, the share of the traced CPU time the copies took
(sampled: zctrace run's sampler), the size from which zero-copy's fixed cost per send (pinning and
notices) falls below the copy it saves, and, without the sampler, how much of each run the CPU
copies alone would explain at this machine's memcpy bandwidth. tools/plot prints them, writes them as JSON and draws
them; nothing here is typed in by hand.
"""
import statistics

GBIT = 1e9 / 8  # bytes per second in a Gbit/s


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def size_label(v):
    v = int(v)
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if v >= 1 << shift and v % (1 << shift) == 0:
            return f"{v >> shift}{unit}"
    return str(v)


def threads_label(t):
    return f"{t} thread{'s' if t != 1 else ''}"


def median_of(rows, col):
    vals = [r.get(col) for r in rows if is_num(r.get(col))]
    return statistics.median(vals) if vals else None


def pins_refs_per_byte(row, sites):
    """Bytes per payload byte at the sites that are not CPU copies (pins, page references)."""
    cpu = set(str(row.get("cpu_copy_sites") or "").split(";"))
    if not row.get("cpu_copy_sites"):
        return None
    vals = [row.get(f"{s}_per_byte") for s in sites if s not in cpu]
    return sum(v for v in vals if is_num(v))


class Grid:
    """The ok rows of the grid, by (workload, size, threads); membw rows give the copy bandwidth."""

    def __init__(self, rows, sites):
        self.sites = sites
        self.bandwidth_rows = [r for r in rows if is_num(r.get("memcpy_mb_s"))]
        self.rows = [r for r in rows if not is_num(r.get("memcpy_mb_s")) and is_num(r.get("throughput_gbit_s"))]
        self.workloads = list(dict.fromkeys(r["workload"] for r in self.rows))
        self.sizes = sorted(set(r["size"] for r in self.rows))
        self.threads = sorted(set(r["threads"] for r in self.rows))
        self.cell = {}
        for r in self.rows:
            self.cell.setdefault((r["workload"], r["size"], r["threads"]), []).append(r)

    def reps(self):
        return sorted(set(r.get("rep") for r in self.rows if is_num(r.get("rep"))))

    def median(self, col, w, s, t):
        return median_of(self.cell.get((w, s, t), []), col)

    def by_rep(self, col, w, s, t):
        return {r.get("rep"): r[col] for r in self.cell.get((w, s, t), []) if is_num(r.get(col))}

    def pins_refs(self, w, s, t):
        vals = [pins_refs_per_byte(r, self.sites) for r in self.cell.get((w, s, t), [])]
        vals = [v for v in vals if v is not None]
        return statistics.median(vals) if vals else None

    def bandwidth(self):
        """The median memcpy bandwidth of the sweep's membw runs, bytes per second, and what it was."""
        if not self.bandwidth_rows:
            return None
        mb_s = median_of(self.bandwidth_rows, "memcpy_mb_s")
        sizes = sorted(set(r.get("size") for r in self.bandwidth_rows if is_num(r.get("size"))))
        return {"memcpy_mb_s": mb_s, "bytes_per_s": mb_s * 1e6, "runs": len(self.bandwidth_rows),
                "buffer_sizes": sizes}


def point(grid, w, s, t):
    return {"workload": w, "size": s, "size_label": size_label(s), "threads": t,
            "throughput_gbit_s": grid.median("throughput_gbit_s", w, s, t),
            "cpu_copies_per_byte": grid.median("cpu_copies_per_byte", w, s, t),
            "pins_refs_per_byte": grid.pins_refs(w, s, t)}


def peaks(grid):
    """Each workload's highest median throughput and where; the overall peak."""
    out = []
    for w in grid.workloads:
        cells = [(grid.median("throughput_gbit_s", w, s, t), s, t) for s in grid.sizes for t in grid.threads]
        cells = [c for c in cells if c[0] is not None]
        if cells:
            _, s, t = max(cells)
            out.append(point(grid, w, s, t))
    overall = max(out, key=lambda p: p["throughput_gbit_s"]) if out else None
    return overall, out


def best_threads(grid):
    """For each workload and size, the thread count with the highest median throughput."""
    out = []
    for w in grid.workloads:
        for s in grid.sizes:
            cells = [(grid.median("throughput_gbit_s", w, s, t), t) for t in grid.threads]
            cells = [c for c in cells if c[0] is not None]
            if cells:
                out.append(point(grid, w, s, max(cells)[1]))
    return out


def crossover(grid, a, b, t):
    """The smallest size from which a's median throughput is >= b's at every larger size, at t
    threads, and in how many repetitions that held at every one of those sizes."""
    sizes = [s for s in grid.sizes if grid.median("throughput_gbit_s", a, s, t) is not None
             and grid.median("throughput_gbit_s", b, s, t) is not None]
    if not sizes:
        return None
    start = None
    for s in reversed(sizes):
        if grid.median("throughput_gbit_s", a, s, t) < grid.median("throughput_gbit_s", b, s, t):
            break
        start = s
    tail = [s for s in sizes if start is not None and s >= start] or sizes[-1:]
    holding, reps = 0, 0
    for rep in grid.reps() or [None]:
        pairs = []
        for s in tail:
            ra, rb = grid.by_rep("throughput_gbit_s", a, s, t), grid.by_rep("throughput_gbit_s", b, s, t)
            if rep in ra and rep in rb:
                pairs.append(ra[rep] >= rb[rep])
        if len(pairs) == len(tail):
            reps += 1
            holding += all(pairs)
    pa, pb = point(grid, a, tail[0], t), point(grid, b, tail[0], t)
    found = {"faster": a, "than": b, "threads": t, "from_size": start,
             "from_size_label": size_label(start) if start is not None else None,
             "sizes": [size_label(s) for s in sizes], "reps_holding": holding, "reps": reps,
             "cpu_copies_per_byte": {a: pa["cpu_copies_per_byte"], b: pb["cpu_copies_per_byte"]},
             "pins_refs_per_byte": {a: pa["pins_refs_per_byte"], b: pb["pins_refs_per_byte"]}}
    found["text"] = crossover_text(found, sizes)
    return found


def fmt(v, spec=".2f"):
    return format(v, spec) if is_num(v) else "-"


def crossover_text(c, sizes):
    a, b, t = c["faster"], c["than"], c["threads"]
    copies = (f"CPU copies/B {fmt(c['cpu_copies_per_byte'][a])} vs {fmt(c['cpu_copies_per_byte'][b])}, "
              f"pins+refs/B {fmt(c['pins_refs_per_byte'][a])} vs {fmt(c['pins_refs_per_byte'][b])}")
    if c["from_size"] is None:
        last = size_label(sizes[-1])
        return (f"{a} never overtakes {b} up to {last} (below it at {last} in {c['reps'] - c['reps_holding']} "
                f"of {c['reps']} reps; {threads_label(t)}); {copies}")
    where = "at every size" if c["from_size"] == sizes[0] else f"from {c['from_size_label']} on"
    return (f"{a} >= {b} {where}, in {c['reps_holding']} of {c['reps']} reps ({threads_label(t)}); "
            f"{copies}")


def crossovers(grid, pairs=None):
    """Each workload against the one before it in the sweep's order (or the pairs given)."""
    pairs = pairs or list(zip(grid.workloads[1:], grid.workloads[:-1]))
    out = []
    for a, b in pairs:
        for t in grid.threads:
            c = crossover(grid, a, b, t)
            if c:
                out.append(c)
    return out


def copy_bound(grid, bw):
    """Per point: the seconds the CPU copies alone take per second of run at memcpy bandwidth,
    throughput x CPU copies per byte / bandwidth (median over the repetitions)."""
    if not bw:
        return []
    out = []
    for (w, s, t), rows in sorted(grid.cell.items(), key=lambda kv: (grid.workloads.index(kv[0][0]), kv[0][1:])):
        fracs = [r["throughput_gbit_s"] * GBIT * r["cpu_copies_per_byte"] / bw["bytes_per_s"] for r in rows
                 if is_num(r.get("cpu_copies_per_byte"))]
        p = point(grid, w, s, t)
        p["copy_share"] = statistics.median(fracs) if fracs else None
        p["copy_share_min"] = min(fracs) if fracs else None
        p["copy_share_max"] = max(fracs) if fracs else None
        out.append(p)
    return out


def copy_time(grid):
    """Per point: the share of the traced tasks' CPU time in the copy routines, as the sampler
    measured it (median over the repetitions, and their range); none where no row was sampled."""
    out = []
    for (w, s, t), rows in sorted(grid.cell.items(), key=lambda kv: (grid.workloads.index(kv[0][0]), kv[0][1:])):
        shares = [r["copy_cpu_share"] for r in rows if is_num(r.get("copy_cpu_share"))]
        if not shares:
            continue
        p = point(grid, w, s, t)
        p["copy_share"] = statistics.median(shares)
        p["copy_share_min"], p["copy_share_max"] = min(shares), max(shares)
        out.append(p)
    return out


def zerocopy_breakeven(grid):
    """For each workload whose rows time zero-copy's pinning and notices per send, at each thread
    count: the smallest size from which that fixed cost is below the copy of a send's bytes at the
    run's own copy rate, at every larger size (medians over the repetitions)."""
    out = []
    for w in grid.workloads:
        for t in grid.threads:
            sizes = [s for s in grid.sizes if grid.median("zc_ns_per_call", w, s, t) is not None
                     and grid.median("zc_copy_ns_per_call", w, s, t) is not None]
            if not sizes:
                continue
            start = None
            for s in reversed(sizes):
                if grid.median("zc_ns_per_call", w, s, t) >= grid.median("zc_copy_ns_per_call", w, s, t):
                    break
                start = s
            found = {"workload": w, "threads": t, "from_size": start,
                     "from_size_label": size_label(start) if start is not None else None,
                     "by_size": [{"size": s, "size_label": size_label(s),
                                  "pin_notify_ns_per_send": grid.median("zc_ns_per_call", w, s, t),
                                  "copy_ns_per_send": grid.median("zc_copy_ns_per_call", w, s, t)} for s in sizes]}
            found["text"] = breakeven_text(found)
            out.append(found)
    return out


def breakeven_text(b):
    pts = ", ".join(f"{p['size_label']} {fmt(p['pin_notify_ns_per_send'] / 1e3)} vs {fmt(p['copy_ns_per_send'] / 1e3)} us"
                    for p in b["by_size"])
    if b["from_size"] is None:
        when = f"never falls below the copy it saves up to {b['by_size'][-1]['size_label']}"
    elif b["from_size"] == b["by_size"][0]["size"]:
        when = "is below the copy it saves at every size"
    else:
        when = f"falls below the copy it saves from {b['from_size_label']} on"
    return (f"{b['workload']} ({threads_label(b['threads'])}): pinning + notices per send {when} "
            f"(pin+notify vs copy per send: {pts})")


def compute(rows, sites, machine, pairs=None):
    grid = Grid(rows, sites)
    bw = grid.bandwidth()
    overall, by_workload = peaks(grid)
    return {
        "machine": machine,
        "runs": len(grid.rows), "reps": len(grid.reps()),
        "copy_bandwidth": bw,
        "peak": overall, "peak_by_workload": by_workload,
        "best_threads": best_threads(grid),
        "crossovers": crossovers(grid, pairs),
        "copy_bound": copy_bound(grid, bw),
        "copy_bound_why": None if bw else "no membw rows in the sweep (zctrace sweep --membw SIZE measures it)",
        "copy_time": copy_time(grid),
        "zerocopy_breakeven": zerocopy_breakeven(grid),
    }


def table(f):
    """The findings as text lines."""
    lines = [f"findings ({f['machine']}; {f['runs']} ok runs, {f['reps']} rep{'s' if f['reps'] != 1 else ''})"]
    p = f["peak"]
    if p:
        lines.append(f"  peak: {p['workload']} {fmt(p['throughput_gbit_s'])} Gbit/s at {p['size_label']}, "
                     f"{threads_label(p['threads'])}")
    lines.append(f"  {'WORKLOAD':<16} {'PEAK Gbit/s':>11} {'SIZE':>6} {'THREADS':>7} {'CPU COPIES/B':>12} "
                 f"{'PINS+REFS/B':>11}")
    for p in f["peak_by_workload"]:
        lines.append(f"  {p['workload']:<16} {fmt(p['throughput_gbit_s']):>11} {p['size_label']:>6} "
                     f"{p['threads']:>7} {fmt(p['cpu_copies_per_byte']):>12} {fmt(p['pins_refs_per_byte']):>11}")
    lines.append("  best thread count per size (median Gbit/s):")
    for p in f["best_threads"]:
        lines.append(f"    {p['workload']:<16} {p['size_label']:>6}: {threads_label(p['threads'])}, "
                     f"{fmt(p['throughput_gbit_s'])} Gbit/s")
    lines.append("  crossovers (each workload against the one before it):")
    lines += [f"    {c['text']}" for c in f["crossovers"]] or ["    (one workload: nothing to compare)"]
    best = {(p["workload"], p["size"], p["threads"]) for p in f["best_threads"]}
    if f.get("zerocopy_breakeven"):
        lines.append("  zero-copy's fixed cost against the copy it saves (sampled):")
        lines += [f"    {b['text']}" for b in f["zerocopy_breakeven"]]
    if f.get("copy_time"):
        lines.append("  copy time: the share of the traced tasks' CPU time in the copy routines (sampled; each "
                     "workload and size at its best thread count, every point in the JSON)")
        for p in f["copy_time"]:
            if (p["workload"], p["size"], p["threads"]) in best:
                lines.append(f"    {p['workload']:<16} {p['size_label']:>6} {threads_label(p['threads']):>10}: "
                             f"{fmt(p['copy_share'] * 100, '.1f')}% ({fmt(p['copy_share_min'] * 100, '.1f')}-"
                             f"{fmt(p['copy_share_max'] * 100, '.1f')}% over the reps), "
                             f"{fmt(p['cpu_copies_per_byte'])} copies/B")
        return lines
    bw = f["copy_bandwidth"]
    if not bw:
        lines.append(f"  copy bound: {f['copy_bound_why']}")
        return lines
    lines.append(f"  copy bound: throughput x CPU copies/B against memcpy at {bw['memcpy_mb_s']:.0f} MB/s "
                 f"(membw, {'/'.join(size_label(s) for s in bw['buffer_sizes'])} buffers, median of "
                 f"{bw['runs']}): the share of the run's time (one core's) the copies alone explain")
    lines.append("    (each workload and size at its best thread count; every point in the JSON)")
    for p in f["copy_bound"]:
        if (p["workload"], p["size"], p["threads"]) not in best:
            continue
        lines.append(f"    {p['workload']:<16} {p['size_label']:>6} {threads_label(p['threads']):>10}: "
                     f"{fmt(p['throughput_gbit_s'])} Gbit/s x {fmt(p['cpu_copies_per_byte'])} copies/B = "
                     f"{fmt(p['copy_share'] * 100 if is_num(p['copy_share']) else None, '.1f')}% of the run")
    return lines
