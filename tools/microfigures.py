"""The figures of a microbenchmark sweep (zctrace sweep WORKLOAD --param ...): the memory-latency
staircase with this machine's cache sizes, call cost against arguments, file read time against file
size, the file-cache knee, contention against readers and the timer's distributions. Each figure's
caption gives the kernel-checked assumptions of the runs it was drawn from ("...: passed in 5 of 5
runs"), under the plot and in the list tools/plot prints and writes (figures.json).

Points are the median over the ok runs of each run's median; the bars reach from the lowest sample
minimum to the highest p99 of those runs. Figures are 16 x 10 in at 100 dpi, like the stream ones.
"""
import os
import re
import statistics
import textwrap

FIG_INCHES = (16, 10)
DPI = 100
VERDICT = re.compile(r"^(.*): (holds|FAILS|NOT CHECKED)( \(.*\))?$")
NUMBER = re.compile(r"\d+(?:\.\d+)?[KMGT]?")


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def size_label(v):
    v = int(v)
    for shift, unit in ((40, "T"), (30, "G"), (20, "M"), (10, "K")):
        if v >= 1 << shift and v % (1 << shift) == 0:
            return f"{v >> shift}{unit}"
    return str(v)


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMGT]?)", str(text).strip())
    if not m:
        return None
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2)]


def is_micro(columns):
    return "m_name" in columns


def split_list(text):
    return [] if text in (None, "") else str(text).split(";")


def measurements(row):
    """The row's measurements: the JSON form's list whole, or rebuilt from the CSV's m_* lists."""
    if isinstance(row.get("measurements"), list):
        return [m for m in row["measurements"] if isinstance(m, dict)]
    names = split_list(row.get("m_name"))
    cols = {k: split_list(row.get(f"m_{k}")) for k in ("unit", "samples", "min", "median", "mean", "p99", "max")}
    out = []
    for i, name in enumerate(names):
        m = {"name": name}
        for k, vals in cols.items():
            v = vals[i] if i < len(vals) else ""
            try:
                m[k] = v if k == "unit" else float(v)
            except ValueError:
                m[k] = None
        out.append(m)
    return out


def assumptions(row):
    """[(claim, held)] of the row: the JSON form's list, or the CSV's verdicts split back."""
    if isinstance(row.get("assumptions"), list):
        return [(a.get("claim", "?"), bool(a.get("holds"))) for a in row["assumptions"] if isinstance(a, dict)]
    out = []
    for item in split_list(row.get("assumption_verdicts")):
        m = VERDICT.match(item)
        if m:
            out.append((m.group(1), m.group(2) == "holds"))
    return out


def which_runs(group_rows, rows):
    """", those with cache=cold" when the runs that stated a claim share a parameter value the
    others do not; "" when they are all the runs."""
    if len(group_rows) == len(rows):
        return ""
    shared = []
    for col in dict.fromkeys(k for r in rows for k in r if k.startswith("param_")):
        values = {str(r.get(col)) for r in group_rows}
        if len(values) == 1 and len({str(r.get(col)) for r in rows}) > 1:
            value = next(iter(values))
            shown = size_label(int(value)) if value.isdigit() and int(value) >= 1024 else value
            shared.append(f"{col[len('param_'):].replace('_', '-')}={shown}")
    return f", those with {', '.join(shared)}" if shared else ""


def claim_groups(rows):
    """The claims of @rows grouped across runs: a number that differs between runs reads N.
    [(claim, runs in which every instance held, runs that stated it, which runs those were)]."""
    groups = {}
    for r in rows:
        for claim, held in assumptions(r):
            # "1 reader" and "8 readers" are one claim
            key = re.sub(r"# (\w+?)s\b", r"# \1", NUMBER.sub("#", claim))
            g = groups.setdefault(key, {"claims": [], "runs": {}, "rows": {}})
            g["claims"].append(claim)
            g["runs"][id(r)] = g["runs"].get(id(r), True) and held
            g["rows"][id(r)] = r
    out = []
    for key, g in groups.items():
        numbers = [NUMBER.findall(c) for c in g["claims"]]
        parts = NUMBER.split(max(g["claims"], key=len))  # the plural, where there is one
        text = parts[0]
        for i, part in enumerate(parts[1:]):
            same = len({tuple(n[i:i + 1]) for n in numbers}) == 1
            text += (numbers[0][i] if same else "N") + part
        out.append((text, sum(g["runs"].values()), len(g["runs"]), which_runs(list(g["rows"].values()), rows)))
    return out


def caption(rows, summary):
    """The caption's lines: what the figure shows on this machine, then every assumption's tally."""
    lines = [summary] if summary else []
    checks = [r for r in rows if is_num(r.get("checks_failed"))]
    if checks:
        held = sum(1 for r in checks if r["checks_failed"] == 0)
        lines.append(f"ledger checks (copy sites, boundary account, step markers): all held in {held} of "
                     f"{len(checks)} runs")
    groups = claim_groups(rows)
    if not groups:
        lines.append("no assumption stated by these runs")
    for text, passed, runs, which in groups:
        lines.append(f"{text}: {'passed' if passed == runs else 'FAILED'} in {passed} of {runs} runs{which}")
    return lines


class Point:
    """One x of one line: the runs' medians, lowest minimum and highest p99."""

    def __init__(self):
        self.medians, self.lows, self.highs = [], [], []

    def add(self, m):
        if not is_num(m.get("median")):
            return
        self.medians.append(m["median"])
        self.lows.append(m["min"] if is_num(m.get("min")) else m["median"])
        self.highs.append(m["p99"] if is_num(m.get("p99")) else m["median"])

    def value(self):
        return statistics.median(self.medians)


def collect(rows, key_of):
    """{series: {x: Point}} from every measurement whose key_of(row, m) gives (series, x)."""
    lines = {}
    for r in rows:
        for m in measurements(r):
            key = key_of(r, m)
            if key:
                lines.setdefault(key[0], {}).setdefault(key[1], Point()).add(m)
    return lines


def draw_series(ax, lines, style=None):
    """One line per series; @style(label, i) gives its (colour, linestyle)."""
    for i, (label, pts) in enumerate(lines.items()):
        xs = sorted(x for x in pts if pts[x].medians)
        if not xs:
            continue
        ys = [pts[x].value() for x in xs]
        err = [[max(0, y - min(pts[x].lows)) for x, y in zip(xs, ys)],
               [max(0, max(pts[x].highs) - y) for x, y in zip(xs, ys)]]
        colour, linestyle = style(label, i) if style else (f"C{i}", "-")
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label, color=colour, linestyle=linestyle)


def log2_sizes(ax, xs):
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([size_label(x) for x in xs], rotation=45 if len(xs) > 10 else 0)
    ax.minorticks_off()


class Context:
    """What every figure needs: the rows, the machine line, matplotlib."""

    def __init__(self, plt, rows, meta, machine_line):
        self.plt = plt
        self.rows = rows
        self.meta = meta
        self.machine_line = machine_line

    def of(self, workload):
        return [r for r in self.rows if r.get("workload") == workload]

    def figure(self, n, title, ncols=None):
        ncols = ncols or min(n, 3)
        nrows = (n + ncols - 1) // ncols
        fig, axes = self.plt.subplots(nrows, ncols, figsize=FIG_INCHES, dpi=DPI, squeeze=False)
        for ax in axes.flat[n:]:
            ax.set_visible(False)
        machine = "\n".join(textwrap.wrap(self.machine_line, 190))
        fig.suptitle(f"{title}\n{machine}", fontsize=11)
        return fig, list(axes.flat[:n])


def finish(fig, lines):
    """The caption under the plot: as many lines as it has, the axes above them."""
    wrapped = [w for l in lines for w in textwrap.wrap(l, 200, subsequent_indent="    ")]
    shown = wrapped[:14] + ([f"... and {len(wrapped) - 14} more lines (figures.json has them all)"]
                            if len(wrapped) > 14 else [])
    bottom = 0.06 + 0.018 * len(shown)
    fig.subplots_adjust(left=0.06, right=0.98, top=0.88, bottom=bottom + 0.06, hspace=0.35, wspace=0.22)
    fig.text(0.01, bottom, "\n".join(shown), va="top", ha="left", fontsize=8.5, family="monospace")
    return fig


# ---- the machine's caches ----

def cache_sizes(meta):
    """[(label, bytes)] of CPU 0's data and unified caches: from the sweep's machine, else sysfs."""
    caches = (meta.get("machine") or {}).get("caches") if isinstance(meta.get("machine"), dict) else None
    if not caches:
        caches = []
        base = "/sys/devices/system/cpu/cpu0/cache"
        for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            try:
                caches.append({k: open(os.path.join(base, d, k)).read().strip() for k in ("level", "type", "size")})
            except OSError:
                continue
    out = []
    for c in caches:
        size = parse_size(c.get("size", ""))
        if size and c.get("type") in ("Data", "Unified"):
            out.append((f"L{c.get('level')}{'d' if c.get('type') == 'Data' else ''}", size))
    return out


def mark_caches(ax, meta, xs):
    """CPU 0's cache sizes as dashed vertical lines, those within reach of the x axis."""
    for i, (label, size) in enumerate(cache_sizes(meta)):
        if xs and not xs[0] / 4 <= size <= xs[-1] * 4:
            continue
        ax.axvline(size, color="0.3", linestyle="--", linewidth=1)
        ax.text(size, 0.97 - 0.05 * i, f" {label} {size_label(size)}", transform=ax.get_xaxis_transform(),
                fontsize=10, color="0.2")


# ---- the figures ----

def fig_memlat(ctx):
    rows = ctx.of("memlat")
    if not rows:
        return None, "no memlat runs", None

    def key(r, m):
        size = m.get("size") or parse_size(m.get("name", "").rsplit(" ", 1)[-1])
        pages = "2 MiB pages (--hugepages)" if r.get("param_hugepages") == "on" else "4 KiB pages"
        return (pages, size) if size else None
    lines = collect(rows, key)
    fig, (ax,) = ctx.figure(1, "Memory latency staircase: dependent loads over a random cyclic chain "
                            "against working-set size")
    draw_series(ax, lines)
    xs = sorted({x for pts in lines.values() for x in pts})
    log2_sizes(ax, xs)
    ax.set_yscale("log")
    mark_caches(ax, ctx.meta, xs)
    ax.set_xlabel("working set (bytes, log2)")
    ax.set_ylabel("latency per load (ns, log; median, bars min..p99)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    first = next(iter(lines.values()))
    steps = ", ".join(f"{size_label(x)} {first[x].value():.3g} ns" for x in sorted(first))
    return fig, None, f"median latency per load: {steps}"


def arg_count(m):
    found = re.match(r"call, (\d+) args?\b", m.get("name", ""))
    return int(found.group(1)) if found else None


def fig_call(ctx):
    rows = ctx.of("call")
    if not rows:
        return None, "no call runs", None
    lines = collect(rows, lambda r, m: ("procedure call, less the loop", arg_count(m))
                    if arg_count(m) is not None else None)
    loop = collect(rows, lambda r, m: ("loop", 0) if m.get("name", "").startswith("empty loop") else None)
    if not lines:
        return None, "no 'call, N args' measurements", None
    fig, (ax,) = ctx.figure(1, "Procedure call cost against the number of integer arguments (the empty "
                            "loop's cost subtracted)")
    draw_series(ax, lines)
    if loop:
        ax.axhline(loop["loop"][0].value(), color="0.4", linestyle=":",
                   label=f"empty loop, per iteration ({loop['loop'][0].value():.3g} ns, subtracted)")
    pts = lines["procedure call, less the loop"]
    ax.set_xticks(sorted(pts))
    ax.set_xlabel("integer arguments")
    ax.set_ylabel("ns per call (median, bars min..p99)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    summary = "median ns per call: " + ", ".join(f"{k} args {pts[k].value():.3g}" for k in sorted(pts))
    return fig, None, summary


FILEREAD = re.compile(r"^(seq|random) (\S+), ([^:]+): (MB/s|us/read)$")


def file_size_of(r):
    for col in ("param_file_size",):
        if is_num(r.get(col)):
            return r[col]
    found = re.search(r"--file-size (\S+)", str(r.get("workload_args") or ""))
    return parse_size(found.group(1)) if found else None


def fileread_style(label, i):
    """The cache state by colour, the pattern by line: sequential solid, random dashed."""
    states = ("cold", "warm", "O_DIRECT")
    colour = next((f"C{k}" for k, st in enumerate(states) if st in label), "C3")
    return colour, "--" if label.startswith("random") else "-"


def fig_fileread(ctx):
    rows = [r for r in ctx.of("fileread") if file_size_of(r)]
    if not rows:
        return None, "no fileread runs with a --param file-size", None
    panels = (("us/read", "time per read (µs, log; median, bars min..p99)"),
              ("MB/s", "throughput (MB/s, log; median, bars min..p99)"))
    fig, axes = ctx.figure(2, "File read time against file size: sequential and random reads, cold "
                           "(pages dropped before every sample) and warm", ncols=2)
    summary = []
    for ax, (unit, ylabel) in zip(axes, panels):
        def key(r, m, unit=unit):
            found = FILEREAD.match(m.get("name", ""))
            if not found or found.group(4) != unit:
                return None
            pattern = "sequential" if found.group(1) == "seq" else "random"
            return f"{pattern} {found.group(2)}, {found.group(3)}", file_size_of(r)
        lines = collect(rows, key)
        draw_series(ax, dict(sorted(lines.items(), key=lambda kv: kv[0].split(" ", 2)[::-1])), fileread_style)
        log2_sizes(ax, sorted({x for pts in lines.values() for x in pts}))
        ax.set_yscale("log")
        ax.set_xlabel("file size (bytes, log2)")
        ax.set_ylabel(ylabel)
        ax.set_title("time per read" if unit == "us/read" else "throughput")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=9)
        if unit == "us/read":
            for label, pts in sorted(lines.items()):
                biggest = max(pts)
                summary.append(f"{label} {pts[biggest].value():.3g} µs/read at {size_label(biggest)}")
    return fig, None, "; ".join(summary)


def fig_filecache(ctx):
    rows = ctx.of("filecache")
    if not rows:
        return None, "no filecache runs", None

    def key(r, m):
        size = m.get("file_size")
        if not size:
            found = re.match(r"re-read (\S+) file: MB/s", m.get("name", ""))
            size = parse_size(found.group(1)) if found else None
        return ("re-read throughput", size) if size else None
    lines = collect(rows, key)
    if not lines:
        return None, "no 're-read SIZE file' measurements", None
    fig, (ax,) = ctx.figure(1, "File cache knee: re-read throughput against file size (a file the page cache "
                            "holds whole is re-read at memory speed)")
    draw_series(ax, lines)
    pts = lines["re-read throughput"]
    xs = sorted(pts)
    # the sizes whose "served from the page cache" claim failed: the cache no longer held the file
    missed = {s for r in rows for claim, held in assumptions(r) if not held and "page cache" in claim
              for s in [parse_size(w) for w in NUMBER.findall(claim)] if s in pts}
    for s in sorted(missed):
        ax.plot([s], [pts[s].value()], "x", color="red", markersize=14, markeredgewidth=3)
    memory = (ctx.meta.get("machine") or {}).get("memory_bytes") if isinstance(ctx.meta.get("machine"), dict) else None
    note = ""
    if is_num(memory) and memory <= 4 * xs[-1]:
        ax.axvline(memory, color="0.3", linestyle="--")
        ax.text(memory, 0.95, f" memory {memory / 2**30:.1f} GiB", transform=ax.get_xaxis_transform())
    elif is_num(memory):
        note = (f"; memory is {memory / 2**30:.1f} GiB, beyond the largest file ({size_label(xs[-1])}): the knee "
                f"(where the cache stops holding the file) lies past this sweep")
    log2_sizes(ax, xs)
    mark_caches(ax, ctx.meta, xs)  # a drop where the page cache still served every re-read is the CPU's
    ax.set_xlabel("file size (bytes, log2)")
    ax.set_ylabel("re-read throughput (MB/s; median, bars min..p99)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    best = max(xs, key=lambda x: pts[x].value())
    summary = (f"re-read throughput {pts[xs[0]].value():.0f} MB/s at {size_label(xs[0])}, peak "
               f"{pts[best].value():.0f} at {size_label(best)}, {pts[xs[-1]].value():.0f} at {size_label(xs[-1])}; "
               f"sizes the page cache did not serve whole (red x): "
               f"{', '.join(size_label(s) for s in sorted(missed)) or 'none'}{note}")
    return fig, None, summary


def fig_contention(ctx):
    rows = ctx.of("contention")

    def key(r, m):
        found = re.match(r"(\d+) readers? at once: ms per file", m.get("name", ""))
        return ("each reader's cold 1-file read", int(found.group(1))) if found else None
    lines = collect(rows, key)
    if not lines:
        return None, "no contention runs", None
    sizes = {file_size_of(r) for r in rows} - {None}
    label = f"each reader's cold file ({', '.join(size_label(s) for s in sorted(sizes)) or 'default size'})"
    lines = {label: next(iter(lines.values()))}
    fig, (ax,) = ctx.figure(1, "Contention: N processes each reading their own cold file at once, time per "
                            "file against N")
    draw_series(ax, lines)
    pts = lines[label]
    ax.set_xticks(sorted(pts))
    ax.set_xlabel("readers at once (processes)")
    ax.set_ylabel("ms per file (median, bars min..p99)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    xs = sorted(pts)
    summary = (f"ms per file: {xs[0]} reader {pts[xs[0]].value():.3g}, {xs[-1]} readers "
               f"{pts[xs[-1]].value():.3g} ({pts[xs[-1]].value() / pts[xs[0]].value():.2g}x)")
    return fig, None, summary


HIST_BINS = 12  # the workload's: 12 equal bins from min to p99, then one for the rest up to max


def hist_panel(ax, rows, name):
    """Each run's histogram of @name, its samples above p99 as a hatched bar past the last bin;
    the run's median dashed. Returns (medians, unit, samples above p99, largest max)."""
    medians, unit, above, top = [], "", 0, None
    for i, r in enumerate(rows):
        m = next((m for m in measurements(r) if m["name"] == name and m.get("hist")), None)
        if not m:
            continue
        unit = m.get("unit", "")
        bins, rest = m["hist"][:HIST_BINS], m["hist"][HIST_BINS:]
        edges = [bins[0]["lo"]] + [b["hi"] for b in bins]
        ax.stairs([b["count"] for b in bins], edges, fill=True, alpha=0.45, color=f"C{i}",
                  label=f"run {r.get('run')}")
        if rest:
            width = max((edges[-1] - edges[0]) / HIST_BINS, 1e-9)
            ax.bar(edges[-1] + width / 2, rest[0]["count"], width, color=f"C{i}", alpha=0.45, hatch="//",
                   label=f"run {r.get('run')}: above p99, up to {rest[0]['hi']:.4g}")
            above += rest[0]["count"]
        ax.axvline(m["median"], color=f"C{i}", linestyle="--", linewidth=1)
        medians.append(m["median"])
        top = max(top or m["max"], m["max"])
    return medians, unit, above, top


def fig_timer(ctx):
    rows = [r for r in ctx.of("timer") if isinstance(r.get("measurements"), list)]
    if not rows:
        why = "no timer runs" if not ctx.of("timer") else "the histograms are in the sweep's JSON form only"
        return None, why, None
    names = list(dict.fromkeys(m["name"] for r in rows for m in measurements(r) if m.get("hist")))
    fig, axes = ctx.figure(len(names), "Timer overhead: the distribution of two back-to-back clock reads "
                           "(12 bins from min to p99, the rest hatched; medians dashed)")
    summary = []
    for ax, name in zip(axes, names):
        medians, unit, above, top = hist_panel(ax, rows, name)
        ax.set_title(f"{name}\nmedian {statistics.median(medians):.3g} {unit}; {above} samples above p99 "
                     f"(max {top:.4g})", fontsize=10)
        ax.set_xlabel(f"{unit} per pair of reads")
        ax.set_ylabel("samples")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        summary.append(f"{name}: median {statistics.median(medians):.3g} {unit}")
    return fig, None, "; ".join(summary)


# (name, what it shows, the workload, how to draw it)
FIGURES = [
    ("memlat_staircase", "latency per dependent load against working-set size, log2 x, with CPU 0's "
     "L1d/L2/L3 sizes as vertical lines", "memlat", fig_memlat),
    ("call_cost_vs_args", "procedure call cost against 0..7 integer arguments, the empty loop subtracted",
     "call", fig_call),
    ("fileread_vs_file_size", "time per read and throughput against file size: sequential (solid) and "
     "random (dashed), cold and warm as separate lines", "fileread", fig_fileread),
    ("filecache_knee", "re-read throughput against file size; a red x where the page cache did not serve "
     "the re-reads; CPU 0's cache sizes dashed", "filecache", fig_filecache),
    ("contention_vs_procs", "time per cold file against the number of processes reading at once",
     "contention", fig_contention),
    ("timer_histograms", "the distribution of each clock's back-to-back read cost, per run", "timer",
     fig_timer),
]


def draw_all(plt, rows, meta, machine_line, outdir, formats, say):
    """Draws every figure the ok rows have data for; returns the list of what was written, captions
    included (figures.json). @say(text) reports a skipped figure."""
    ok = [r for r in rows if r.get("status", "ok") == "ok"]
    ctx = Context(plt, ok, meta, machine_line)
    written = []
    for name, shows, workload, draw in FIGURES:
        if not ctx.of(workload):
            continue
        try:
            fig, why, summary = draw(ctx)
        except Exception as e:  # one figure's trouble must not cost the others
            fig, why, summary = None, f"{type(e).__name__}: {e}", None
        if fig is None:
            say(f"skipped {name}: {why}")
            continue
        lines = caption(ctx.of(workload), summary)
        finish(fig, lines)
        paths = [os.path.join(outdir, f"{name}.{fmt}") for fmt in formats]
        for p in paths:
            fig.savefig(p, dpi=DPI)
        plt.close(fig)
        written.append({"figure": name, "files": paths, "shows": shows, "workload": workload,
                        "runs": len(ctx.of(workload)), "caption": lines})
    return written
