"""zctrace export: the census as Prometheus metrics, scraped by a real Prometheus.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from harness import (
    case, ROOT, UNIT_TESTS, ZCTRACE, assert_eq, bpf_fds_of, scratch, Skip, wait_bpf_released, zctrace,
    zctrace_lines)
from checks import COST_MIB, ODD_NAMER, PIPE_MOVER, TOP_PROGRAM, copy_cpu_plausible, tcp_sweep_refused_here


# ---- zctrace export: the census as Prometheus metrics, scraped by a real Prometheus ----

EXPORT_SITES = ("unix_send_copy", "unix_recv_copy")
SCRAPE_S = 1  # Prometheus's scrape interval in these tests
OM_ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, accept=None, timeout=10):
    """(status, content type, body) of a GET; an HTTP error's status too."""
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def wait_for(what, fn, seconds):
    """Polls fn() until it returns something true, for at most @seconds; returns it."""
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except OSError as e:  # not listening yet
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds} s (last: {str(last)[:300]})")


def promtool_check(text):
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), \
        f"promtool check metrics: exit {p.returncode}: {(p.stdout + p.stderr)[:1500]}"


def openmetrics_families(text):
    """The exposition as an independent OpenMetrics parser reads it (it refuses what breaks the spec)."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    return {f.name: f for f in text_string_to_metric_families(text)}


def sample_value(text, name, **labels):
    """The sum of the samples of @name with @labels among theirs, from a text exposition; None
    when there is none."""
    values = []
    for line in text.splitlines():
        if not line.startswith(name + "{") and line.split(" ")[0] != name:
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            values.append(float(line.rsplit(" ", 1)[1]))
    return sum(values) if values else None


@case(root=False)
def export_exposition_format():
    """The exposition over hand-built census reads (tests/unit/exposition.c): promtool accepts the
    text format 0.0.4, an OpenMetrics parser accepts the OpenMetrics one; the label pairs past the
    bound are folded into other, an exited process's bytes stay in its label's series, the
    histogram's buckets are cumulative up to +Inf == _count, label values escaped; without the
    boundary account there is no unattributed series."""
    run = lambda fmt: subprocess.run([os.path.join(UNIT_TESTS, "exposition"), fmt], capture_output=True,
                                     text=True, timeout=60)
    om, txt = run("openmetrics"), run("text")
    assert om.returncode == 0 and txt.returncode == 0, om.stderr + txt.stderr
    promtool_check(txt.stdout)
    assert om.stdout.endswith("\n# EOF\n") and "# EOF" not in txt.stdout, om.stdout[-200:]
    fams = openmetrics_families(om.stdout)
    for name, typ in (("zctrace_copies", "counter"), ("zctrace_copy_bytes", "counter"),
                      ("zctrace_copy_size_bytes", "histogram"), ("zctrace_site", "info"),
                      ("zctrace_series_folded", "counter"), ("zctrace_census_keys", "gauge")):
        assert name in fams and fams[name].type == typ, (name, fams.get(name))
    assert fams["zctrace_copy_bytes"].unit == "bytes", fams["zctrace_copy_bytes"].unit
    got = {(s.labels["site"], s.labels["comm"], s.labels["cgroup"]): s.value
           for s in fams["zctrace_copy_bytes"].samples}
    assert_eq("nginx, its exited process kept", got[("unix_send_copy", "nginx", "/system.slice/nginx.service")], 1107)
    assert_eq("big, admitted first", got[("send_copy", "big", "/b")], 3 * 65536)
    assert_eq("other: small and mid", got[("send_copy", "other", "other")], 10 + 20 + 4096)
    assert ("pipe_write_copy", 'we"ird\\na\ufffd', "/user.slice") in got or \
        ("pipe_write_copy", 'we"ird\\na?', "/user.slice") in got, got.keys()
    assert_eq("series_folded", fams["zctrace_series_folded"].samples[0].value, 3)
    buckets = [s for s in fams["zctrace_copy_size_bytes"].samples if s.labels.get("site") == "send_copy"]
    bucket_samples = [s for s in buckets if s.name.endswith("_bucket")]
    counts = [s.value for s in bucket_samples]
    assert counts == sorted(counts) and bucket_samples[-1].labels["le"] == "+Inf", bucket_samples[-3:]
    count = next(s.value for s in buckets if s.name.endswith("_count"))
    assert_eq("send_copy +Inf bucket", counts[-1], count)
    assert_eq("send_copy copies", count, 6)
    le = {s.labels["le"]: s.value for s in buckets if s.name.endswith("_bucket")}
    assert_eq("send_copy copies of 64 KiB at le=131071", le["131071"] - le["65535"], 3)
    assert "user_copy" not in {s.labels.get("site") for s in buckets}  # not counted: no histogram
    methods = {s.labels["site"]: s.labels["method"] for s in fams["zctrace_site"].samples}
    assert methods["user_copy"] == "none" and methods["send_copy"] == "tp_btf", methods
    assert "zctrace_unattributed_bytes" in fams, sorted(fams)
    # without the boundary account the unattributed bytes are not measured: no series, never 0
    bare = subprocess.run([os.path.join(UNIT_TESTS, "exposition"), "openmetrics", "no-account"],
                          capture_output=True, text=True, timeout=60)
    assert bare.returncode == 0, bare.stderr
    fams = openmetrics_families(bare.stdout)
    assert "zctrace_unattributed_bytes" not in fams and "zctrace_copy_bytes" in fams, sorted(fams)


@case("stock", root=False)
def export_usage_errors():
    """A bad --listen is a usage error in one line (exit 2); a port in use is one line naming it
    (exit 1), before anything is loaded."""
    for bad in ("nope", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "::1:9435", "[::1:9435",
                "127.0.0.1:http", "999.1.1.1:9435"):
        p = zctrace("export", "--listen", bad, timeout=30)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and f"invalid --listen '{bad}'" in lines[0], (bad, p.returncode, p.stderr)
    for args in (("--max-series", "0"), ("--interval", "0"), ("--method", "raw"), ("surplus",)):
        p = zctrace("export", *args, timeout=30)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (args, p.returncode, p.stderr)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = zctrace("export", "--listen", f"127.0.0.1:{port}", timeout=30)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1 and lines == [f"zctrace: cannot listen on 127.0.0.1:{port}: Address already in use"], \
        (p.returncode, p.stderr)


def cgroup2_root():
    for line in open("/proc/mounts"):
        f = line.split()
        if f[2] == "cgroup2":
            return f[1]
    raise Skip("no cgroup v2 hierarchy mounted")


class Exporter:
    """'zctrace export' on a free loopback port, until stop(): then it must exit 0 and leave no
    BPF object behind."""

    def __init__(self, *args, scheme="http", serving=None):
        """@serving(url): whether the exporter answers there (by default: an HTTP 200)."""
        self.port = free_port()
        self.url = f"{scheme}://127.0.0.1:{self.port}/metrics"
        self.z = subprocess.Popen([ZCTRACE, "export", "--listen", f"127.0.0.1:{self.port}", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        serving = serving or (lambda url: http_get(url)[0] == 200)
        try:
            wait_for("the exporter serving", lambda: self.z.poll() is not None or serving(self.url), 60)
            assert self.z.poll() is None, f"zctrace export ended: exit {self.z.returncode}: {self.z.stderr.read()}"
            self.held = bpf_fds_of(self.z.pid)
            assert self.held["prog"] and self.held["map"], f"no BPF program or map held: {self.held}"
        except BaseException:
            self.kill()
            raise

    def text(self, accept=None):
        status, ctype, body = http_get(self.url, accept)
        assert status == 200, (status, body[:300])
        return ctype, body

    def rss_kib(self):
        return int(re.search(r"^VmRSS:\s+(\d+) kB", open(f"/proc/{self.z.pid}/status").read(), re.M).group(1))

    def kill(self):
        if self.z.poll() is None:
            self.z.kill()
            self.z.communicate()

    def stop(self):
        self.z.send_signal(signal.SIGTERM)
        try:
            out, err = self.z.communicate(timeout=30)
        finally:
            self.kill()
        assert self.z.returncode == 0, f"exit {self.z.returncode}: {err[-500:]}"
        assert zctrace_lines(err)[-1] == "zctrace: stopped by signal 15 (SIGTERM)", err[-500:]
        left = wait_bpf_released(self.held)
        assert left == {}, f"BPF objects of the exporter still loaded: {left}"
        return err


class Prometheus:
    """Debian's Prometheus server scraping @target every SCRAPE_S seconds, in a scratch directory."""

    def __init__(self, target, jobs=None, ready='up{job="zctrace"} == 1'):
        """@jobs: the scrape_configs' entries, YAML (by default one plain job, zctrace); @ready: a
        query that holds once the first scrapes are in."""
        if not shutil.which("prometheus"):
            raise AssertionError("no prometheus (tools/install-deps.sh installs it)")
        self.dir = tempfile.mkdtemp(prefix="zctrace-prom-")
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}/api/v1"
        jobs = jobs or (f"  - job_name: zctrace\n    static_configs:\n"
                        f"      - targets: ['127.0.0.1:{target}']\n")
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            f.write(f"global:\n  scrape_interval: {SCRAPE_S}s\n  evaluation_interval: {SCRAPE_S}s\n"
                    f"scrape_configs:\n{jobs}")
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.p = subprocess.Popen(["prometheus", f"--config.file={self.dir}/prometheus.yml",
                                   f"--storage.tsdb.path={self.dir}/data", f"--web.listen-address=127.0.0.1:{self.port}"],
                                  stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_for("prometheus ready", lambda: self.p.poll() is not None or
                     http_get(f"http://127.0.0.1:{self.port}/-/ready")[0] == 200, 60)
            assert self.p.poll() is None, f"prometheus ended: {self.logtail()}"
            wait_for("the exporter scraped", lambda: self.query(ready), 30)
        except BaseException:
            self.stop()
            raise

    def logtail(self):
        self.log.seek(0)
        return self.log.read()[-1500:]

    def query(self, expr, at=None):
        """An instant query's result vector; asserts the API said success."""
        args = {"query": expr, **({"time": f"{at:.3f}"} if at else {})}
        status, _, body = http_get(f"{self.api}/query?{urllib.parse.urlencode(args)}")
        r = json.loads(body)
        assert status == 200 and r["status"] == "success", (expr, status, body[:500])
        return r["data"]["result"]

    def value(self, expr, at=None):
        res = self.query(expr, at)
        assert len(res) <= 1, (expr, res)
        return float(res[0]["value"][1]) if res else None

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# Moves exactly the bytes it is told over a Unix socket pair: a prelude, then (on a line from the
# test) the payload, in chunks; each byte sent once and received once.
UNIX_MOVER = r"""
import socket, sys
prelude, n, chunk = map(int, sys.argv[1:4])
a, b = socket.socketpair()
def move(k):
    while k:
        m = min(chunk, k)
        a.sendall(b"x" * m)
        got = 0
        while got < m:
            got += len(b.recv(m - got))
        k -= m
move(prelude)
print("PRELUDE", flush=True)
sys.stdin.readline()
move(n)
print("DONE", flush=True)
sys.stdin.readline()
"""


class NamedCgroup:
    """A program under a name of its own (its comm: a link to the interpreter) in a cgroup of its own."""

    def __init__(self, prefix):
        self.name = f"{prefix}{os.getpid() % 100000}"
        self.link = os.path.join(scratch, self.name)
        if not os.path.exists(self.link):
            os.symlink(sys.executable, self.link)
        self.cgroup = "/" + self.name
        self.cgdir = cgroup2_root() + self.cgroup
        os.makedirs(self.cgdir, exist_ok=True)

    def popen(self, program, *args):
        def enter():
            with open(os.path.join(self.cgdir, "cgroup.procs"), "w") as f:
                f.write("0")
        return subprocess.Popen([self.link, "-c", program, *map(str, args)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, preexec_fn=enter)

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.cgdir)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)


@case("stock", "old", long=True)
def export_prometheus_round_trip():
    """The exporter scraped by a real Prometheus every second: a program in a cgroup of its own
    moves a prelude, then N bytes over a Unix socket pair. Prometheus's stored counters for its
    (comm, cgroup) equal the bytes at both Unix sites exactly; increase() over the burst is what
    the samples rose by, stretched by Prometheus's extrapolation of their span toward the window's
    ends and never past them. The live exposition passes promtool (text) and the OpenMetrics
    parser; SIGTERM: exit 0, nothing left."""
    prelude, n, chunk = 100_000, 8 << 20, 65536
    job = NamedCgroup("zcx-rt-")
    exp = Exporter("--interval", "0.5", "--max-series", "2000")
    prom = wl = None
    try:
        ctype, text = exp.text()
        assert ctype == "text/plain; version=0.0.4; charset=utf-8", ctype
        promtool_check(text)
        ctype, om = exp.text(OM_ACCEPT)
        assert ctype == "application/openmetrics-text; version=1.0.0; charset=utf-8", ctype
        fams = openmetrics_families(om)
        # the census's own cost only on request (--bpf-stats): absent, not 0
        assert fams["zctrace_site"].samples and "zctrace_bpf_run_seconds" not in fams, sorted(fams)
        info = fams["zctrace_census"].samples[0].labels
        assert info["unattributed"] == "none" and "add --complete" in info["why_not"], info
        prom = Prometheus(exp.port)
        wl = job.popen(UNIX_MOVER, prelude, n, chunk)
        assert wl.stdout.readline().strip() == "PRELUDE"
        # by comm, over its cgroup label: a process is named again at every read (see below)
        series = lambda site: f'zctrace_copy_bytes_total{{site="{site}",comm="{job.name}"}}'
        sel = lambda site: f'sum by (comm) ({series(site)})'
        for site in EXPORT_SITES:
            wait_for(f"{site} prelude in Prometheus", lambda: prom.value(sel(site)) == prelude, 30)
        time.sleep(3 * SCRAPE_S)  # the prelude's value held for a few scrapes
        t0 = time.time()
        wl.stdin.write("go\n")
        wl.stdin.flush()
        assert wl.stdout.readline().strip() == "DONE"
        for site in EXPORT_SITES:
            wait_for(f"{site} in Prometheus", lambda: prom.value(sel(site)) == prelude + n, 30)
        time.sleep(3 * SCRAPE_S)
        t1 = time.time()
        window = int(t1 - t0) + 3
        for site in EXPORT_SITES:
            # what Prometheus stored over the window, exactly: its last value less its first
            held = prom.value(f"max_over_time({sel(site)}[{window}s:]) - min_over_time({sel(site)}[{window}s:])", at=t1)
            assert_eq(f"{site} stored over {window}s", held, n)
            # increase() extrapolates the span of a series' samples in the window toward the
            # window's ends (at most 1.1 average intervals each), never past them: at least what
            # its samples rose by, at most n times the window over the shortest span. The samples
            # are read first: a scrape stored between the two queries only lengthens a span
            raw = prom.query(f"{series(site)}[{window}s]", at=t1)
            spans = [float(r["values"][-1][0]) - float(r["values"][0][0]) for r in raw if len(r["values"]) > 1]
            rose = sum(float(r["values"][-1][1]) - float(r["values"][0][1]) for r in raw)
            assert spans and min(spans) > 0 and 0 < rose <= n, raw
            most = n * window / min(spans)
            inc = prom.value(f"sum by (comm) (increase({series(site)}[{window}s]))", at=t1)
            assert inc is not None and rose <= inc * (1 + 1e-9) and inc <= most * (1 + 1e-9), \
                f"{site}: increase over {window}s {inc} vs {n} moved (from {rose:.0f} to {most:.0f}: samples over {min(spans):.2f} s)"
            print(f"  {site}: Prometheus has {prelude + n} B, {n} B over {window}s (exact); increase() "
                  f"{inc:.0f} ({100 * (inc - n) / n:+.1f}%)", flush=True)
        check_dashboard(prom)
        wl.stdin.close()
        assert wl.wait(timeout=30) == 0
        # its cgroup's own series, at the latest once the census has named it as it exited
        wait_for(f"a series with cgroup {job.cgroup}", lambda: prom.query(
            f'zctrace_payload_bytes_total{{comm="{job.name}",cgroup="{job.cgroup}"}}'), 30)
    finally:
        if wl and wl.poll() is None:
            wl.kill()
            wl.wait(timeout=30)
        if prom:
            prom.stop()
        try:
            exp.stop()
        finally:
            job.remove()


DASHBOARD = os.path.join(ROOT, "tools", "grafana", "zctrace.json")


def dashboard_exprs():
    dash = json.load(open(DASHBOARD))
    exprs = []
    def walk(panels):
        for p in panels:
            exprs.extend((p["title"], t["expr"]) for t in p.get("targets", ()))
            walk(p.get("panels", ()))
    walk(dash["panels"])
    return dash, exprs


def check_dashboard(prom):
    """Every PromQL expression of the Grafana dashboard runs against a Prometheus that scrapes
    the exporter ($__rate_interval as Grafana would set it for a 1 s scrape interval)."""
    dash, exprs = dashboard_exprs()
    titles = " ".join(p["title"] for p in dash["panels"])
    for word in ("copies per byte", "pinned", "unattributed"):
        assert word in titles.lower(), (word, titles)
    assert len(exprs) >= 5, exprs
    for title, expr in exprs:
        prom.query(expr.replace("$__rate_interval", "1m"))
    print(f"  {len(exprs)} dashboard expressions ran", flush=True)


# Forks @n children in batches; each moves @size bytes over a socket pair of its own and exits.
# Prints the bytes moved so far after each batch, then waits for a line.
FORK_MOVERS = r"""
import os, socket, sys, time
n, batch, size, pause = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
done = 0
while done < n:
    for _ in range(min(batch, n - done)):
        pid = os.fork()
        if pid == 0:
            a, b = socket.socketpair()
            a.sendall(b"y" * size)
            got = 0
            while got < size:
                got += len(b.recv(size - got))
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0
        done += 1
    print(done * size, flush=True)
    time.sleep(pause)
print("END", flush=True)
sys.stdin.readline()
"""


@case(alone=True)
def export_soak_short_processes():
    """Half a minute of short processes, 4000 of them in batches of 100 0.6 s apart, each moving
    100 B over a socket pair of its own and exiting, the exporter reading every 0.5 s: its totals
    for their label only grow and end equal to the bytes moved, at both Unix sites; its RSS grows
    by less than 2 MiB over the second half. It runs alone: the rest of the suite's processes
    would be series and census keys of its own."""
    n, batch, size, pause = 4000, 100, 100, 0.6
    job = NamedCgroup("zcx-soak-")
    exp = Exporter("--interval", "0.5", "--max-series", "2000")
    wl = None
    last = {s: 0 for s in EXPORT_SITES}
    rss = []
    try:
        wl = job.popen(FORK_MOVERS, n, batch, size, pause)
        moved = 0
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            line = wl.stdout.readline().strip()
            if line == "END" or not line:
                break
            moved = int(line)
            text = exp.text()[1]
            for site in EXPORT_SITES:
                v = sample_value(text, "zctrace_copy_bytes_total", site=site, comm=job.name) or 0
                assert v >= last[site] and v <= moved, f"{site}: {v} after {last[site]}, {moved} moved"
                last[site] = v
            rss.append(exp.rss_kib())
        assert line == "END", f"the movers did not finish: {line!r}"
        assert_eq("bytes moved", moved, n * size)
        # every process has exited: one more read or two and the totals are final
        deadline = time.monotonic() + 15
        while True:
            text = exp.text()[1]
            got = {site: sample_value(text, "zctrace_copy_bytes_total", site=site, comm=job.name)
                   for site in EXPORT_SITES}
            if set(got.values()) == {moved} or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        # warm: the second quarter, past the census's and malloc's high-water marks (a read that saw
        # many processes at once keeps its room). The RSS swings by about 2 MiB from one read to the
        # next, so peaks are compared: the second quarter's against the second half's. A leak of 1 KiB
        # a process would still add 2 MiB to the later peak
        warm, end = max(rss[len(rss) // 4:len(rss) // 2]), max(rss[len(rss) // 2:])
        print(f"  {n} processes, {moved} B moved; the exporter's totals {got}; exporter RSS {rss[0]} -> "
              f"{warm} (warm) -> {end} KiB; census evicted {sample_value(text, 'zctrace_census_evicted_total')}, "
              f"dropped {sample_value(text, 'zctrace_census_dropped_total')}", flush=True)
        assert end - warm < 2048, f"RSS grew {end - warm} KiB after warm-up: {rss}"
        for site in EXPORT_SITES:
            assert_eq(f"{site} of {n} processes", got[site], moved)
    finally:
        if wl:
            wl.stdin.close()
            wl.wait(timeout=30)
        try:
            exp.stop()
        finally:
            job.remove()


@case("stock")
def export_says_what_it_measures():
    """The exporter's info metrics say how each site is counted, or why it is not, and whether the
    unattributed bytes are measured; --complete adds the boundary account (zctrace_unattributed_bytes,
    the pipe sites); --bpf-stats adds the census's own BPF cost, per program, which a program that
    moves bytes makes grow. Both expositions pass promtool."""
    for extra in ((), ("--complete", "--bpf-stats")):
        exp = Exporter("--interval", "0.2", *extra)
        try:
            prog = subprocess.run(["/usr/bin/python3", "-c", TOP_PROGRAM, "zct-exp-info", "200", "1000"], timeout=60)
            assert prog.returncode == 0, prog.returncode
            time.sleep(0.5)
            text = exp.text()[1]
            promtool_check(text)
            fams = openmetrics_families(exp.text(OM_ACCEPT)[1])
        finally:
            exp.stop()
        sites = {s.labels["site"]: s.labels for s in fams["zctrace_site"].samples}
        info = fams["zctrace_census"].samples[0].labels
        assert sites["unix_send_copy"]["method"] != "none" and sites["unix_send_copy"]["why_not"] == "", sites
        assert sites["user_copy"]["method"] == "none" and sites["user_copy"]["why_not"], sites["user_copy"]
        if extra:
            assert info == {"unattributed": "measured", "why_not": ""}, info
            assert "zctrace_unattributed_bytes" in fams and sites["pipe_write_copy"]["method"] != "none", sites
            events = sum(s.value for s in fams["zctrace_bpf_events"].samples)
            assert events > 0 and any(s.labels["program"] == "census_iter" for s in fams["zctrace_bpf_events"].samples), \
                fams["zctrace_bpf_events"].samples
        else:
            assert info["unattributed"] == "none" and "zctrace_unattributed_bytes" not in fams, info
            assert "zctrace_bpf_events" not in fams, sorted(fams)
            if sites["pipe_write_copy"]["method"] == "none":
                assert sites["pipe_write_copy"]["why_not"] == "not measured: needs the syscall tracepoints (add --complete)", \
                    sites["pipe_write_copy"]


def end_all(*running):
    """Kills what a test left running (processes, Exporters) after a failure; a no-op for those
    that ended."""
    for r in running:
        if r is not None:
            r.kill()
            if isinstance(r, subprocess.Popen):
                r.wait()


@case()
def export_comm_any_bytes():
    """A process named with a quote, a backslash, a newline and bytes that are not UTF-8 is
    exported as OpenMetrics and the text format require: promtool accepts the exposition, the
    OpenMetrics parser reads it, and the name comes back escaped, each invalid byte as '?'."""
    comm = b'q"b\\s\nx\xff\xed\xa0\x80z'
    want = 'q"b\\s\nx????z'  # as a parser gives it back: each byte of the surrogate refused
    n = 1 << 20
    exp = Exporter("--interval", "0.5")
    job = None
    try:
        job = subprocess.Popen([sys.executable, "-c", ODD_NAMER, comm.hex(), str(n)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
        assert job.stdout.readline().strip() == "DONE"
        assert open(f"/proc/{job.pid}/comm", "rb").read().rstrip(b"\n") == comm

        def odd_series():
            fams = openmetrics_families(exp.text(OM_ACCEPT)[1])
            return [s for s in fams["zctrace_copy_bytes"].samples if s.labels["comm"] == want
                    and s.labels["site"] == "unix_send_copy" and s.value >= n]
        wait_for("the oddly named process's series", odd_series, 30)
        promtool_check(exp.text()[1])
        job.stdin.close()
        assert job.wait(timeout=30) == 0
        exp.stop()
    finally:
        end_all(job, exp)


@case("stock", "rt", "old")
def export_copy_cpu_seconds():
    """export --cost --complete: a process that moves 1 GiB (128 MiB in a guest) through a pipe of its own is exported
    with zctrace_copy_cpu_seconds_total at both pipe sites, within 0.01-5 ns a byte of the bytes
    counted there and no more than the process's own CPU time (its rusage), within the samples'
    spread; zctrace_cost_sample_seconds is 1/997 s. Without --cost neither family is there: not
    measured, absent, not 0. A bad --cost: exit 2, one line."""
    mib, name = COST_MIB, f"zcx-cost-{os.getpid() % 10000}"
    for bad in ("0", "-3", "100001", "fast"):
        p = zctrace("export", f"--cost={bad}", timeout=30)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and f"--cost '{bad}'" in p.stderr, \
            (bad, p.returncode, p.stderr)
    plain = Exporter("--complete")
    try:
        text = plain.text()[1]
        assert "zctrace_copy_cpu_seconds" not in text and "zctrace_cost_sample_seconds" not in text
    finally:
        plain.stop()
    exp = Exporter("--cost", "--complete", "--interval", "0.5")
    prog = None
    try:
        prog = subprocess.Popen([sys.executable, "-c", PIPE_MOVER, name, str(mib)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        said = prog.stdout.readline()  # through a pipe too: its bytes are pipe_write_copy's
        own = int(said.split()[1])
        sel = {"comm": name}
        want = {"pipe_write_copy": (mib << 20) + len(said), "pipe_read_copy": mib << 20}
        # both sites' bytes in, at a read after the last copy: so is every sample of them
        wait_for("the pipe's bytes exported", lambda: all(
            sample_value(exp.text()[1], "zctrace_copy_bytes_total", site=s, **sel) == want[s] for s in want), 30)
        time.sleep(1)
        ctype, text = exp.text()
        promtool_check(text)
        sample_ns = round(sample_value(text, "zctrace_cost_sample_seconds") * 1e9)
        assert_eq("one sample's ns", sample_ns, 10**9 // 997)
        cpu = {}
        for s in ("pipe_write_copy", "pipe_read_copy"):
            secs = sample_value(text, "zctrace_copy_cpu_seconds_total", site=s, **sel)
            assert secs, (s, [l for l in text.splitlines() if name in l])
            cpu[s] = round(secs * 1e9)
            copy_cpu_plausible(s, cpu[s], mib << 20, own, sample_ns)
        copy_cpu_plausible("both pipe sites", sum(cpu.values()), 2 * mib << 20, own, sample_ns)
        fams = openmetrics_families(exp.text(OM_ACCEPT)[1])
        assert fams["zctrace_copy_cpu_seconds"].type == "counter", fams["zctrace_copy_cpu_seconds"]
        print(f"  pipe_write_copy {cpu['pipe_write_copy'] / (mib << 20):.3f} ns/B, pipe_read_copy "
              f"{cpu['pipe_read_copy'] / (mib << 20):.3f} ns/B; the process's own CPU {own / 1e6:.0f} ms", flush=True)
        prog.stdin.close()
        assert prog.wait(timeout=30) == 0
        exp.stop()
    finally:
        end_all(prog, exp)


# ---- zctrace export --web-config: TLS and basic auth, the exporter-toolkit's format ----

class Pki:
    """A CA of the test's own, a server certificate for 127.0.0.1 and a client certificate signed
    by it, a stranger's self-signed client certificate, and a bcrypt hash (libxcrypt's, through
    Python's crypt) of the scraper's password, in a scratch directory."""

    USER, PASSWORD = "prometheus", "s3cret pass:word"

    def __init__(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt
        self.dir = tempfile.mkdtemp(prefix="zctrace-pki-")
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        self.ssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=zctrace test CA")
        for name, ext in (("server", "subjectAltName=IP:127.0.0.1\n"), ("client", "extendedKeyUsage=clientAuth\n"),
                          ("serveronly", "extendedKeyUsage=serverAuth\n")):
            self.write(f"{name}.ext", ext)
            self.ssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
            self.ssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                     "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")
        self.ssl("req", "-x509", *ec, "-keyout", "stranger.key", "-out", "stranger.crt", "-days", "2", "-subj", "/CN=stranger")
        self.hash = crypt.crypt(self.PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))
        assert self.hash.startswith("$2b$10$") and len(self.hash) == 60, self.hash

    def ssl(self, *args):
        subprocess.run(["openssl", *args], cwd=self.dir, check=True, capture_output=True, timeout=60)

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, text):
        # a new file put in place at once, as an operator's tooling would (the exporter reloads it)
        with open(self.path(name + ".new"), "w") as f:
            f.write(text)
        os.replace(self.path(name + ".new"), self.path(name))
        return self.path(name)

    def config(self, client_auth=None, users=True):
        # the files named relative to the config's own directory, as the exporter-toolkit takes them
        text = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        if client_auth:
            text += f"  client_auth_type: {client_auth}\n  client_ca_file: ca.crt\n"
        if users:
            text += f"basic_auth_users:\n  {self.USER}: '{self.hash}'\n"
        return text + "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def curl(url, *args):
    """curl's (exit code, HTTP status or None, body) of a GET: exit 0 only with a response."""
    p = subprocess.run(["curl", "-sS", "--max-time", "20", "-w", "\n%{http_code}", *args, url],
                       capture_output=True, text=True, timeout=60)
    body, _, code = p.stdout.rpartition("\n")
    return p.returncode, (int(code) if p.returncode == 0 else None), body


@case(root=False)
def export_web_config_refuses():
    """Each of 27 malformed --web-config files (unreadable, not YAML, an unknown or unsupported
    key, a certificate or key that does not load, a hash that is not bcrypt or too costly, ...) is
    refused at start in one line that names the file and the problem, exit 2, before anything is
    loaded."""
    pki = Pki()
    try:
        tls = f"tls_server_config:\n  cert_file: {pki.path('server.crt')}\n  key_file: {pki.path('server.key')}\n"
        pki.write("garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
        pki.write("empty.pem", "")
        unreadable = pki.write("unreadable.yml", tls)
        os.chmod(unreadable, 0)
        bad = [
            (pki.path("absent.yml"), "cannot read"),
            (pki.dir, "cannot read"),
            ("tls_server_config: [\n", "not YAML"),
            ("- a\n- b\n", "is not a mapping"),
            ("tls_config: {}\n", "unknown key tls_config"),
            (tls + "  certfile: x\n", "unknown key tls_server_config.certfile"),
            (tls + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n", "tls_server_config.cipher_suites is not supported"),
            (f"tls_server_config:\n  key_file: {pki.path('server.key')}\n", "no cert_file"),
            (f"tls_server_config:\n  cert_file: {pki.path('server.crt')}\n", "no key_file"),
            (tls.replace("server.crt", "absent.crt"), "cannot read"),
            (tls.replace("server.crt", "garbage.pem"), "does not load"),
            (tls.replace("server.key", "client.key"), "does not load"),
            (tls + "  client_auth_type: RequireSomeCert\n", "is not one of"),
            (tls + "  client_auth_type: RequestClientCert\n", "needs client_ca_file"),
            (tls + f"  client_ca_file: {pki.path('ca.crt')}\n", "asks for no client certificate"),
            (tls + "  client_auth_type: RequireAndVerifyClientCert\n", "needs client_ca_file"),
            (tls + f"  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: {pki.path('empty.pem')}\n",
             "does not load"),
            (tls + "  min_version: TLS10\n", "TLS 1.2 and 1.3 only"),
            (tls + "  min_version: TLS13\n  max_version: TLS12\n", "above max_version"),
            ("basic_auth_users:\n  a: '$6$salt$SJIeXQqJYBu7hZQH2DwR/MKMbqDBf9uu.bWaXyp3qdRmCvsa.bO7xTL5u1G9sxMwUnwsJ8GqnvMdgCNIk5xgO1'\n",
             "is not a bcrypt hash"),
            ("basic_auth_users:\n  a: '$2b$04$" + "!" * 53 + "'\n", "crypt() does not take"),
            ("basic_auth_users:\n  a: '$2b$16$" + pki.hash[7:] + "'\n", "bcrypt cost 16 is above 15"),
            ("http2: true\0\n", "holds a NUL byte"),
            ("basic_auth_users: [a, b]\n", "basic_auth_users is not a mapping"),
            (f"basic_auth_users:\n  a: '{pki.hash}'\n  a: '{pki.hash}'\n", "basic_auth_users.a is given twice"),
            ("http_server_config:\n  headers:\n    Set-Cookie: a=b\n", "header Set-Cookie cannot be set"),
            ("http_server_config:\n  http2: maybe\n", "http2 is not true or false"),
        ]
        assert len(bad) == 27
        for i, (text, want) in enumerate(bad):
            path = text if text.startswith("/") else pki.write(f"bad{i}.yml", text)
            p = zctrace("export", "--listen", f"127.0.0.1:{free_port()}", "--web-config", path, timeout=30)
            lines = p.stderr.strip().splitlines()
            assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"zctrace: --web-config {path}: ") \
                and want in lines[0] and not p.stdout, (i, text, want, p.returncode, p.stderr)
    finally:
        pki.remove()


@case(long=True)
def export_tls_basic_auth():
    """zctrace export --web-config with TLS (a CA of the test's own) and a bcrypt user, scraped by
    Debian's Prometheus: with the password up is 1, with a wrong one or none up is 0, what it
    stores is what the exporter serves, and that is what a plain-HTTP exporter serves beside it
    (every family, every site's method). curl gets no metric line without credentials, with a wrong
    password, trusting no CA, or over plain HTTP. The file is then replaced by one that also needs a
    client certificate signed by the CA: the exporter reloads it, the job with that certificate
    still scrapes (up 1) and the one without it no longer does (up 0), and curl with a stranger's
    self-signed certificate, or one of the CA's for a server only, gets no metric. A file made bad is not taken, and said so once: the last
    one keeps serving until a good one comes."""
    pki = Pki()
    exp = prom = None
    web = pki.write("web.yml", pki.config())
    ca, cred = ["--cacert", pki.path("ca.crt")], ["-u", f"{Pki.USER}:{Pki.PASSWORD}"]
    cert = ["--cert", pki.path("client.crt"), "--key", pki.path("client.key")]
    try:
        exp = Exporter("--web-config", web, scheme="https",
                       serving=lambda url: curl(url, *ca, *cred)[1] == 200)
        rc, code, text = curl(exp.url, *ca, *cred)
        promtool_check(text)
        assert "zctrace_copy_bytes_total" in text, text[:500]
        rc, code, head = curl(exp.url, *ca, *cred, "-o", "/dev/null", "-D", "-")
        assert re.search(r"^X-Content-Type-Options: nosniff\r?$", head, re.M | re.I), head
        for what, args in (("no credentials", ca), ("a wrong password", ca + ["-u", f"{Pki.USER}:wrong"]),
                           ("an unknown user", ca + ["-u", f"nobody:{Pki.PASSWORD}"])):
            rc, code, body = curl(exp.url, *args)
            assert code == 401 and "zctrace_" not in body, (what, rc, code, body[:300])
        rc, code, body = curl(exp.url, *cred)
        assert rc == 60 and "zctrace_" not in body, ("no CA trusted", rc, code, body[:300])
        rc, code, body = curl(exp.url.replace("https:", "http:"), *cred)
        assert rc != 0 and "zctrace_" not in body, ("plain HTTP", rc, code, body[:300])
        target = f"static_configs:\n      - targets: ['127.0.0.1:{exp.port}']\n"
        tls = f"scheme: https\n    tls_config:\n      ca_file: {pki.path('ca.crt')}\n"
        auth = f"basic_auth:\n      username: {Pki.USER}\n      password: '{Pki.PASSWORD}'\n"
        client = f"      cert_file: {pki.path('client.crt')}\n      key_file: {pki.path('client.key')}\n"
        jobs = (f"  - job_name: good\n    {tls}    {auth}    {target}"
                f"  - job_name: good_with_cert\n    {tls}{client}    {auth}    {target}"
                f"  - job_name: wrong\n    {tls}    {auth.replace(Pki.PASSWORD, 'wrong')}    {target}"
                f"  - job_name: none\n    {tls}    {target}")
        prom = Prometheus(exp.port, jobs, ready="up == 0 or up == 1")
        want = {"good": 1, "good_with_cert": 1, "wrong": 0, "none": 0}
        ups = lambda: {r["metric"]["job"]: float(r["value"][1]) for r in prom.query("up")}
        wait_for(f"up {want}", lambda: ups() == want, 30)
        # what Prometheus stored through TLS is what the exporter serves: its own BPF objects' counts
        wait_for("the exporter's series in Prometheus", lambda: prom.query('{job="good",__name__=~"zctrace_.*"}'), 30)
        rc, code, text = curl(exp.url, *ca, *cred)
        families = {m.group(1) for m in re.finditer(r"^# TYPE (\S+) ", text, re.M)}
        stored = {r["metric"]["__name__"] for r in prom.query('{job="good",__name__=~"zctrace_.*"}')}
        assert stored and stored <= {f + s for f in families for s in ("", "_total", "_bucket", "_sum", "_count",
                                                                       "_info")}, (stored - families, families)
        # the same exposition as a plain-HTTP exporter's beside it: every family, and how each site is counted
        plain = Exporter()
        try:
            shape = lambda t: ({m.group(1) for m in re.finditer(r"^# TYPE (\S+) ", t, re.M)},
                               sorted(l for l in t.splitlines() if l.startswith(("zctrace_site_info", "zctrace_census_info"))))
            assert_eq("the TLS exposition's families and sites against plain HTTP's", shape(curl(exp.url, *ca, *cred)[2]),
                      shape(plain.text()[1]))
        finally:
            plain.stop()
        # a client certificate signed by the CA is needed now
        pki.write("web.yml", pki.config("RequireAndVerifyClientCert"))
        want = {"good": 0, "good_with_cert": 1, "wrong": 0, "none": 0}
        wait_for(f"up {want}", lambda: ups() == want, 30)
        rc, code, body = curl(exp.url, *ca, *cred)
        assert code == 401 and "zctrace_" not in body, ("no client certificate", rc, code, body[:300])
        rc, code, body = curl(exp.url, *ca, *cred, "--cert", pki.path("stranger.crt"), "--key", pki.path("stranger.key"))
        assert code == 401 and "zctrace_" not in body, ("a stranger's certificate", rc, code, body[:300])
        rc, code, body = curl(exp.url, *ca, *cred, "--cert", pki.path("serveronly.crt"), "--key",
                              pki.path("serveronly.key"))
        assert code == 401 and "zctrace_" not in body, ("a certificate for a server only", rc, code, body[:300])
        rc, code, body = curl(exp.url, *ca, *cred, *cert)
        assert code == 200 and "zctrace_copy_bytes_total" in body, (rc, code, body[:300])
        # a bad file is said once and not taken
        pki.write("web.yml", "tls_server_config: [\n")
        time.sleep(3)
        rc, code, body = curl(exp.url, *ca, *cred, *cert)
        assert code == 200, (rc, code, body[:300])
        # and a good one again is taken: basic auth alone
        pki.write("web.yml", pki.config())
        wait_for("the password alone let in again", lambda: curl(exp.url, *ca, *cred)[1] == 200, 30)
        said = [line for line in zctrace_lines(exp.stop()) if "--web-config" in line]
        assert said == [f"zctrace: --web-config {web} reloaded",
                        f"zctrace: --web-config {web} not reloaded, the last one kept: not YAML: did not "
                        "find expected node content at line 2, column 1",
                        f"zctrace: --web-config {web} reloaded"], said
    finally:
        if prom:
            prom.stop()
        if exp:
            exp.kill()
        pki.remove()


@case("stock", "rt")
def export_tcp_counters():
    """The exporter's TCP bytes from the sockets' own counters: a named program that streams over
    TCP to itself is exported with zctrace_tcp_sent_bytes_total and zctrace_tcp_received_bytes_total
    exactly its bytes (the discarded MSG_TRUNC ones too), the same as its per-call send_copy; the
    families pass promtool and the OpenMetrics parser. Where this machine's verifier refuses the
    sweep (tcp_sweep_refused_here()), the families are absent, the exporter says why at its start,
    and send_copy, counted per call, is still exact."""
    n, size, name = 500, 4000, f"zcx-tcp-{os.getpid() % 10000}"
    exp = Exporter("--interval", "0.5")
    try:
        prog = subprocess.Popen(["/usr/bin/python3", "-c", TOP_PROGRAM, name, str(n), str(size)])
        assert prog.wait(timeout=60) == 0, prog.returncode
        want = (n + 1) * size
        counters = "zctrace_tcp_sent_bytes" in exp.text()[1]
        if counters:
            wait_for("the TCP bytes exported", lambda: all(
                sample_value(exp.text()[1], f"zctrace_tcp_{d}_bytes_total", comm=name) == want
                for d in ("sent", "received")), 30)
        else:
            wait_for("the program's send_copy exported", lambda: sample_value(
                exp.text()[1], "zctrace_copy_bytes_total", site="send_copy", comm=name) == want, 30)
        ctype, text = exp.text()
        promtool_check(text)
        fams = openmetrics_families(exp.text(OM_ACCEPT)[1])
        assert_eq("send_copy", sample_value(text, "zctrace_copy_bytes_total", site="send_copy", comm=name), want)
        if counters:
            assert fams["zctrace_tcp_sent_bytes"].type == "counter", fams["zctrace_tcp_sent_bytes"]
            assert sample_value(text, "zctrace_tcp_unowned_sent_bytes_total") is not None, text[-500:]
    finally:
        err = exp.stop()
    refused = re.search(r"^zctrace: TCP bytes from the sockets' own counters: not measured: (.*)$", err, re.M)
    assert bool(refused) != counters, err[-500:]
    if refused:
        assert tcp_sweep_refused_here(refused.group(1)), refused.group(0)
        print(f"  TCP counters not measured here: {refused.group(1)}", flush=True)
