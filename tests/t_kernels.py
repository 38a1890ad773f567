"""What a kernel offers and lacks: every method (fentry, kprobe, tracepoint) site by site, tracepoints
and programs the kernel refuses, raw_tp methods, a kernel without BTF, PREEMPT_RT.
"""

import json
import os
import re
import subprocess
import tempfile

from harness import (
    case, declare, TIMEOUT, UNIT_TESTS, ZCTRACE, assert_eq, refused, site_bytes, Skip, swept, traced, traced_once, unskipped,
    zctrace)
from checks import (
    COPY_SITES, EXPECT, FILE_SITES, KERNEL, MESSAGES, PIPE_ALL_SITES, check_file_ledger, check_pipe_ends,
    check_pipe_ledger, check_tcp_ledger, deferred_want, kernel_at_least, pipe_paths_exact, preempt_rt,
    probes_by_method)


# ---- every method, site by site: what the kernel offers runs exactly, what it lacks says why ----

# io_uring's zerocopy send (IORING_OP_SEND_ZC) came with 6.0
SEND_ZC = kernel_at_least(6, 0)

# the attach points whose absence makes a site "not supported", by the method that needs them
LACKS = re.compile(r"not in this kernel|not in kernel BTF|not in /proc/kallsyms")


# the method matrix asks what each method counts: the untraced pass, timing alone, is left out
TRACED_ONLY = ("--passes", "traced")


def make_method_matrix_test(method):
    want_method = {"fentry": "fentry", "kprobe": "kprobe", "tracepoint": "tp_btf"}[method]

    def t():
        chosen, out = probes_by_method(method)
        if method != "tracepoint" and chosen.get("recv_copy") != want_method:
            if not KERNEL:  # this machine: tested under QEMU by make test-kernels instead
                why = re.search(rf"refused {want_method}: (.*)", out)
                raise Skip(f"{method} refused here ({why.group(1) if why else '?'}); run by make test-kernels")
            raise AssertionError(f"{method} not used on {KERNEL}:\n{out}")
        for site in COPY_SITES:
            if chosen[site] == "none":
                # a kernel that lacks the site's attach points says so, by name
                block = re.search(rf"^{site}\s+none.*?(?=^\w)", out, re.M | re.S).group(0)
                assert LACKS.search(block), f"{site} not supported without a missing attach point:\n{block}"
            else:
                assert chosen[site] == want_method, f"{site}: {chosen[site]} under --method {method}"
        # One sweep, whose runs share a tracer where their programs are the same. The zerocopy sends
        # follow their notices with programs of their own, so they go last: two loads in all.
        ws = sorted((w for w in EXPECT if w != "uring-sendzc" or SEND_ZC), key=lambda w: EXPECT[w]["zc_pin"] == "sent")
        shape = ("--size", "64K", "--messages", "100")
        runs = swept(",".join(ws), "--sizes", "64K", "--messages", "100", "--method", method, runs=len(ws),
                     rerun=lambda row: traced(row["workload"], *shape, extra=("--method", method, *TRACED_ONLY)))
        assert [r["workload"] for r, _, _ in runs] == ws, [r["workload"] for r, _, _ in runs]
        for row, status, led in runs:
            w = row["workload"]
            sent = led["workload"]["bytes"]
            assert_eq(f"{w} bytes sent", sent, 100 * 65536)
            checks = {c["name"]: c for c in led["checks"]}
            wants = dict(EXPECT[w], recv_copy="sent")
            for site, want in wants.items():
                if site == "user_copy":
                    continue
                if chosen[site] == "none":
                    assert led["sites"][site] is None, f"{w} {site}: unmeasured site shown as figures"
                    c = [c for n, c in checks.items() if n.startswith(site + " bytes")]
                    assert c and not c[0]["ok"] and "not measured" in c[0]["detail"], (w, site, c)
                    assert status == 1, f"{w}: a site not measured must fail the run"
                    continue
                want = sent if want == "sent" else want
                if site == "deferred_copy":
                    want = deferred_want(led, want)
                assert_eq(f"{w} {site} ({chosen[site]})", site_bytes(led, site), want)
                assert led["probes"][site] == want_method, (site, led["probes"][site])
            if all(chosen[s] != "none" for s in wants if s != "user_copy"):
                assert status == 0, f"{w}: exit {status}: {row.get('error')}: {[c for c in led['checks'] if not c['ok']]}"
        # the file sites: every file copy exact through this method's probes, where the kernel has
        # them (5.10: no filemap_read, and no BTF for ext4's tracepoints, a module's)
        by_method = []
        for site in FILE_SITES:
            if chosen[site] == want_method:
                by_method.append(site)
                continue
            block = re.search(rf"^{site}\s+\w+.*?(?=^\w)", out, re.M | re.S).group(0)
            assert re.search(rf"refused {want_method}: .*({LACKS.pattern})", block), \
                f"{site}: {chosen[site]} under --method {method}:\n{out}"
        for w, cache in (("file-readwrite", "cold"), ("file-sendfile", "warm"), ("file-splice", "warm"),
                         ("file-copyrange", "warm"), ("serve-readsend", "warm")):
            led = check_file_ledger(w, cache, "64K", extra=("--method", method, *TRACED_ONLY),
                                    unmeasured=[s for s in COPY_SITES + FILE_SITES if chosen[s] == "none"])
            assert all(led["probes"][s] == want_method for s in by_method), led["probes"]
        method_matrix_pipes(method, want_method, chosen, out)
    t.__name__ = f"method_matrix_{method}"
    return t


# fentry is a stock kernel's default, so its ledgers are its fentry matrix: the guests run the
# other two (5.10 the tracepoints alone)
declare(make_method_matrix_test("fentry"))
declare(make_method_matrix_test("kprobe"), "stock")
declare(make_method_matrix_test("tracepoint"), "stock", "old")


def method_matrix_pipes(method, want_method, chosen, out):
    """The pipe sites under --method: the copies through this method's probes (a kernel without
    their functions says so, and falls back to the syscall's return), pipe_ref by the syscall's
    return on every kernel; pipe-copy (both peers) and pipe-vmsplice exact."""
    for site in PIPE_ALL_SITES:
        want = "tp_btf" if site == "pipe_ref" else want_method
        if chosen[site] != want:
            block = re.search(rf"^{site}\s+\w+.*?(?=^\w)", out, re.M | re.S).group(0)
            assert chosen[site] == "tp_btf" and LACKS.search(block), f"{site}: {chosen[site]} under --method {method}:\n{block}"
    extra, unmeasured = ("--method", method), [s for s in COPY_SITES + FILE_SITES if chosen[s] == "none"]
    for threads, args in ((1, ()), (2, ("--peer", "process"))):
        led = check_pipe_ledger("pipe-copy", "64K", threads, args, extra=extra + TRACED_ONLY, unmeasured=unmeasured)
        assert all(led["probes"][s] == chosen[s] for s in PIPE_ALL_SITES), led["probes"]
        if args:
            check_pipe_ends(led)
    led = check_pipe_ledger("pipe-vmsplice", "64K", 1, extra=extra + TRACED_ONLY, unmeasured=unmeasured)
    assert all(led["probes"][s] == chosen[s] for s in PIPE_ALL_SITES), led["probes"]
    led = pipe_paths_exact(extra)
    assert all(led["probes"][s] == chosen[s] for s in PIPE_ALL_SITES), led["probes"]


@case()
def kprobe_programs_pass_verifier():
    """Where kprobes cannot attach, their programs must still load: the verifier accepts every
    kprobe/kretprobe program of the object on this kernel."""
    p = subprocess.run([os.path.join(UNIT_TESTS, "load_programs")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr[-1500:]
    assert re.search(r"kprobe programs: \d+, load ok", p.stdout), p.stdout


@case()
def tracepoint_forced_matches_default():
    """--method tracepoint must give the same exact ledger as the default choice."""
    p, led = traced("tcp-twocopy", "--size", "16K", "--messages", "500", extra=("--method", "tracepoint"))
    assert p.returncode == 0, p.stdout[-800:]
    assert set(led["probes"][s] for s in ("send_copy", "recv_copy")) == {"tp_btf"}, led["probes"]
    assert_eq("send_copy", site_bytes(led, "send_copy"), led["workload"]["bytes"])


# ---- what a kernel refuses or lacks: tracepoints, programs, BTF; PREEMPT_RT ----

@case()
def robust_refused_tracepoint():
    """A tracepoint the kernel lacks (simulated with ZCTRACE_REFUSE): its sites are not supported,
    say why in 'zctrace probes' and the ledger, are null in JSON, and the run goes on; a fallback
    takes over where there is one; the sites every run needs stop it, in one line."""
    env = refused(["tp_btf:tcp_sendmsg_locked"])
    p = subprocess.run([ZCTRACE, "probes"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert re.search(r"^send_copy\s+none\s", p.stdout, re.M), p.stdout
    assert "refused tp_btf: tp_btf:tcp_sendmsg_locked: refused by ZCTRACE_REFUSE" in p.stdout, p.stdout
    assert re.search(r"^recv_copy\s+tp_btf\s", p.stdout, re.M), p.stdout
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "4K",
                            "--messages", "500"], capture_output=True, text=True, env=env, timeout=TIMEOUT)
        led = json.load(open(f.name))
    assert p.returncode == 1, (p.returncode, p.stderr)
    for site in ("send_copy", "zc_pin", "splice_ref", "deferred_copy"):
        assert led["sites"][site] is None, (site, led["sites"][site])
        assert "ZCTRACE_REFUSE" in led["probes_refused"][site], led["probes_refused"]
        assert f"{site} not supported: tp_btf:tcp_sendmsg_locked: refused by ZCTRACE_REFUSE" in p.stdout
    assert re.search(r"^  send_copy +- +not supported", p.stdout, re.M), p.stdout[:1500]
    assert_eq("recv_copy", site_bytes(led, "recv_copy"), led["workload"]["bytes_received"])
    failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
    unattributed = failed.pop("no unattributed bytes", None)
    assert set(failed) == {"send_copy bytes == bytes sent", "zc_pin bytes == 0", "splice_ref bytes == 0",
                           "deferred_copy bytes == 0"}, failed
    assert all("not measured" in d for d in failed.values()), failed
    # the bytes sent are not lost from the ledger: the calls' own account holds them, unattributed
    sent = led["workload"]["bytes"]
    assert unattributed and f"{sent} B no site explains: TCP/UDP send {sent} B (a site not measured)" in unattributed, unattributed
    assert_eq("unattributed", led["unattributed"], sent)
    assert re.search(rf"^  unattributed +- +- +{sent} ", p.stdout, re.M), p.stdout[:2000]

    # sched_switch without BTF typing: raw_tp takes over and counts the same switches
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "4K",
                            "--messages", "500"], capture_output=True, text=True,
                           env=refused(["tp_btf:sched_switch"]), timeout=TIMEOUT)
        led = json.load(open(f.name))
    assert p.returncode == 0 and led["probes"]["sched"] == "raw_tp", (p.returncode, led["probes"])
    assert led["sched"]["switches"] > 0, led["sched"]
    # no sched_switch at all: the scheduler figures are not supported, the byte checks still hold
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "--json", f.name, "tcp-onecopy", "--size", "4K",
                            "--messages", "500"], capture_output=True, text=True,
                           env=refused(["tp_btf:sched_switch", "raw_tp:sched_switch"]), timeout=TIMEOUT)
        led = json.load(open(f.name))
    assert p.returncode == 0, (p.returncode, [c for c in led["checks"] if not c["ok"]])
    assert led["sched"] is None and "ZCTRACE_REFUSE" in led["probes_refused"]["sched"], led["probes_refused"]
    assert "kernel (whole run): context switches not supported (raw_tp:sched_switch: refused by ZCTRACE_REFUSE" in p.stdout
    assert_eq("send_copy", site_bytes(led, "send_copy"), led["workload"]["bytes"])
    # without fork/exit tracepoints no process can be followed: the run stops before it starts
    p = subprocess.run([ZCTRACE, "run", "tcp-onecopy"], capture_output=True, text=True,
                       env=refused(["tp_btf:sched_process_fork", "raw_tp:sched_process_fork"]), timeout=60)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode == 1 and p.stdout == "", (p.returncode, p.stdout[:300])
    assert len(lines) == 1 and "no way to attach 'targets'" in lines[0] and "ZCTRACE_REFUSE" in lines[0], p.stderr


@case("rt")
def preempt_rt_passes_fentry_over():
    """On a PREEMPT_RT kernel a thread can be preempted inside an fentry or fexit program, and the
    kernel then skips that program's runs for the next thread on the CPU to reach it (one program
    runs once per CPU at a time): 4-thread zerocopy senders lost hundreds of runs. zctrace takes
    kprobes and tracepoints there, which run with preemption off on RT too, and the raw syscall
    tracepoints rather than fentry on the I/O syscalls: `zctrace probes` says why fentry was passed
    over, and the 4-thread TCP and io_uring zerocopy ledgers are exact with no run skipped.
    --method fentry still takes it: such a run is exact, or it fails the check "no program run
    skipped", which names PREEMPT_RT, and exits non-zero."""
    if not preempt_rt():
        raise Skip("needs a PREEMPT_RT kernel (make test-kernels boots Debian's)")
    p = zctrace("probes")
    assert p.returncode == 0 and "passed over on this PREEMPT_RT kernel" in p.stdout, p.stdout[-2000:]
    chosen = dict(re.findall(r"^(\w+) +(\w+) ", p.stdout, re.M))
    assert "fentry" not in chosen.values(), {s: m for s, m in chosen.items() if m == "fentry"}

    def no_skips(*args):
        p, led = traced_once(*args)
        assert led["program_runs_skipped"]["total"] == 0, led["program_runs_skipped"]
        assert "fentry" not in led["probes"].values(), led["probes"]
        return p, led
    for workload in ("tcp-zerocopy", "uring-sendzc"):
        check_tcp_ledger(workload, "64K", 4, runner=no_skips)
    p, led = traced_once("uring-sendzc", "--size", "64K", "--threads", "4", "--messages", MESSAGES["64K"],
                         extra=("--method", "fentry"))
    assert led["probes"]["send_copy"] == "fentry", led["probes"]
    failed = {c["name"]: c["detail"] for c in led["checks"] if not c["ok"]}
    if led["program_runs_skipped"]["total"]:
        # the figures the skipped runs would have counted are short: other checks may fail too
        assert p.returncode != 0 and "no program run skipped" in failed, (p.returncode, failed)
        assert "on PREEMPT_RT, fentry programs are preempted" in failed["no program run skipped"], failed
    else:
        assert p.returncode == 0 and not failed, (p.returncode, failed)


# Reads every BPF map of the machine through the bpf() syscall, without pause, for 300 s at most:
# what a second tracer (a census, bpftool) does to a kernel's BPF busy count.
# Each dump that worked adds a line to the file named by $DUMPS.
MAP_READER = ("end=$(($(date +%s) + 300)); while [ $(date +%s) -lt $end ]; do "
              "for id in $(bpftool map show | sed -n 's/^\\([0-9]*\\):.*/\\1/p'); do "
              "bpftool map dump id $id > /dev/null 2>&1 && echo >> \"$DUMPS\"; done; done")


@case("rt")
def preempt_rt_prefers_tracepoints():
    """On PREEMPT_RT every kprobe program shares one busy count per CPU with the bpf() calls that
    read maps, and a task preempted inside such a call holds it: every kprobe run on that CPU is
    then skipped (counted from 6.7 on, silently before). Under QEMU, with another process reading
    maps, 6.1-rt's kprobe on skb_copy_datagram_iter missed 0.6% of a stream's received bytes with
    no skip counted; 6.12-rt's kprobes skipped up to 135 runs, and it missed 1.1%. zctrace takes a tracepoint where a site has one:
    recv_copy at skb_copy_datagram_iovec. A TCP stream traced while another process reads every
    map without pause: recv_copy exact, no tracepoint program skipped, and where send_copy is on a
    tracepoint too (tcp_sendmsg_locked's, from 2025) the whole ledger holds."""
    if not preempt_rt():
        raise Skip("needs a PREEMPT_RT kernel (make test-kernels boots Debian's)")
    p = zctrace("probes")
    assert p.returncode == 0 and re.search(r"bpf\(\) map call\s+holds\s+the\s+CPU's\s+BPF\s+count", p.stdout), \
        p.stdout[-2000:]
    chosen = dict(re.findall(r"^(\w+) +(\w+) ", p.stdout, re.M))
    assert chosen["recv_copy"] == "tp_btf", chosen
    dumps = tempfile.NamedTemporaryFile()
    reader = subprocess.Popen(["/bin/sh", "-c", MAP_READER], start_new_session=True,
                              env=dict(os.environ, DUMPS=dumps.name))
    try:
        for _ in range(3):
            p, led = traced_once("tcp-onecopy", "--peer", "process", "--size", "4K", "--messages", "20000",
                                 extra=("--passes", "traced"))
            tps = {n: k for n, k in led["program_runs_skipped"]["by_program"].items()
                   if not n.endswith(("_kprobe", "_kretprobe"))}
            assert not tps, led["program_runs_skipped"]
            assert_eq("recv_copy", led["sites"]["recv_copy"]["bytes"], led["workload"]["bytes_received"])
            if led["probes"]["send_copy"] != "kprobe":
                failed = [c for c in led["checks"] if not c["ok"]]
                assert p.returncode == 0 and not failed, (p.returncode, failed)
            print(f"  send_copy by {led['probes']['send_copy']}; kprobe runs skipped: "
                  f"{led['program_runs_skipped']['total']}", flush=True)
    finally:
        os.killpg(reader.pid, 9)
        reader.wait()
        dumped = len(open(dumps.name).read())
        dumps.close()
    # the reader read maps all along (bpftool there, the tracer's maps seen)
    assert dumped > 10, dumped


# The program each site's method is refused through: at load where the program is a tracing one
# (ZCTRACE_REFUSE=load: points it at a function with fewer arguments, which the verifier refuses),
# at attach otherwise (a kprobe).
REFUSE_THROUGH = {
    ("send_copy", "fentry"): "load:tcp_sendmsg_locked_fexit",
    ("send_copy", "tp_btf"): "load:tcp_sendmsg_locked_btf",
    ("send_copy", "kprobe"): "attach:tcp_sendmsg_locked_kretprobe",
    ("recv_copy", "fentry"): "attach:skb_copy_datagram_iter_fexit",
    ("recv_copy", "tp_btf"): "attach:skb_copy_datagram_iovec_btf",
    ("recv_copy", "kprobe"): "attach:skb_copy_datagram_iter_kprobe",
}


@case("stock", "rt", "old")
def robust_refused_program_falls_back():
    """A program the kernel refuses at load (the verifier) or at attach sets its candidate aside, and
    the run goes on with the next one: send_copy's and recv_copy's methods here, refused, fall back
    to another method (fentry to kprobes, a kprobe to the tracepoint, on PREEMPT_RT a kprobe to
    fentry, where the kernel has them: make test-kernels) that counts the same bytes, or the site
    is not supported, with the kernel's reason, and the run says so. Where one falls back, one
    run refuses both; where neither does, one run refuses each, and the other site stays exact."""
    sites = ("send_copy", "recv_copy")
    p = zctrace("probes")
    assert p.returncode == 0, p.stderr
    chosen = dict(re.findall(r"^(\w+) +(fentry|kprobe|tp_btf|raw_tp|none) ", p.stdout, re.M))
    missing = [(site, chosen.get(site)) for site in sites if (site, chosen.get(site)) not in REFUSE_THROUGH]
    assert not missing, f"no program to refuse named for {missing} (REFUSE_THROUGH)"
    points = {site: REFUSE_THROUGH[(site, chosen[site])] for site in sites}
    p = subprocess.run([ZCTRACE, "probes"], capture_output=True, text=True, timeout=TIMEOUT,
                       env=refused(points.values()))
    assert p.returncode == 0, p.stderr
    then = {}
    for site, point in points.items():
        why = "load refused: verifier: " if point.startswith("load:") else "attach refused: "
        assert re.search(rf"refused {chosen[site]}: program {point.split(':')[1]}: {why}", p.stdout), p.stdout
        then[site] = re.search(rf"^{site} +(\w+) ", p.stdout, re.M).group(1)
        assert then[site] != chosen[site], (point, p.stdout)
        print(f"  {site}: {chosen[site]} refused ({point}), then {then[site]}", flush=True)
    together = any(then[site] != "none" for site in sites)
    for refuse in ([sites] if together else [[site] for site in sites]):
        # the method taken may lose runs where the kernel prefers another (on PREEMPT_RT): made again
        r, led = unskipped(lambda _: traced_once("tcp-onecopy", "--size", "64K", "--messages", "100",
                                                 env=refused(points[site] for site in refuse)))
        sent = led["workload"]["bytes"]
        for site in sites:
            if site not in refuse:
                assert_eq(f"{site} (not refused)", site_bytes(led, site), sent)
                continue
            assert led["probes"][site] == then[site], (refuse, then, led["probes"])
            if then[site] != "none":
                assert_eq(f"{site} through {then[site]}", site_bytes(led, site), sent)
            else:
                assert led["sites"][site] is None, (site, led["sites"][site])
        if all(then[site] != "none" for site in refuse):
            assert r.returncode == 0, r.stdout[-1000:]
        else:
            assert r.returncode == 1 and "not measured" in r.stdout, r.stdout[-1000:]


@case("stock", "rt", "old")
def unattributed_where_a_site_is_refused():
    """A copy site the kernel lacks (every method of recv_copy refused): the bytes the receive
    calls moved stay in the ledger, as unattributed, and the run fails its check."""
    env = refused(["tp_btf:skb_copy_datagram_iovec", "fentry:skb_copy_datagram_iter",
                   "kprobe:skb_copy_datagram_iter"])
    p, led = unskipped(lambda _: traced_once("tcp-onecopy", "--size", "16K", "--messages", "300", env=env))
    assert p.returncode == 1, (p.returncode, p.stdout[-1500:])
    assert led["sites"]["recv_copy"] is None, led["sites"]["recv_copy"]
    got = led["workload"]["bytes_received"]
    assert_eq("unattributed", led["unattributed"], got)
    group = [g for g in led["boundary"]["groups"] if g["group"] == "TCP receive"]
    assert group and group[0]["site_missing"] and group[0]["account_bytes"] == got, led["boundary"]["groups"]
    checks = {c["name"]: c for c in led["checks"]}
    c = checks["no unattributed bytes"]
    assert not c["ok"] and f"TCP receive {got} B (a site not measured)" in c["detail"], c
    assert re.search(rf"^  unattributed +- +- +{got} ", p.stdout, re.M), p.stdout[:2500]
    assert re.search(rf"^  unattributed TCP receive: {got} B of {got} B the calls moved", p.stdout, re.M), p.stdout
    # the sending side is still explained by its site
    assert_eq("send_copy", site_bytes(led, "send_copy"), led["workload"]["bytes"])


@case("stock", "rt", "old")
def raw_tp_programs_count_the_same():
    """Where tp_btf is refused, the raw_tp programs of the target filter, syscalls and page faults
    take over and count the same: every sendmsg of the run, the forked receiver followed. (Before
    5.18, as on 5.10, sched is on raw_tp from the start.)"""
    refuse = ["tp_btf:sched_process_fork", "tp_btf:sched_process_exit", "tp_btf:sys_enter",
              "tp_btf:page_fault_user", "tp_btf:page_fault_kernel", "tp_btf:sched_switch"]
    figures, first = [], {}
    for env in (None, refused(refuse)):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            p = subprocess.run([ZCTRACE, "run", "--no-hist", "--passes", "traced", "--json", f.name, "tcp-onecopy", "--size", "64K",
                                "--messages", "100", "--peer", "process"], capture_output=True, text=True,
                               env=env, timeout=TIMEOUT)
            led = json.load(open(f.name))
        assert p.returncode == 0, p.stdout[-1500:]
        want = "raw_tp" if env else "tp_btf"
        for site in ("targets", "syscalls", "page_faults", "sched", "boundary"):
            first.setdefault(site, led["probes"][site])
            # before 5.18 sched_switch has no state argument: sched is on raw_tp from the start
            assert led["probes"][site] == want or \
                (site == "sched" and first[site] == "raw_tp" and not kernel_at_least(5, 18)), (site, led["probes"])
        assert_eq(f"unattributed ({want})", led["unattributed"], 0)
        sends = [r for r in led["boundary"]["calls"] if r["call"] == "sendmsg" and r["file"] == "TCP socket"]
        assert sends and sends[0]["bytes"] == led["workload"]["bytes"], (want, led["boundary"]["calls"])
        assert_eq(f"sendmsg calls ({want})", led["phase_syscalls"].get("sendmsg"), 100)
        assert led["processes"] >= 2, f"{want}: the receiving process was not followed"
        assert led["page_faults"]["user"] > 0, led["page_faults"]
        figures.append((led["phase_syscalls"].get("sendmsg"), led["processes"]))
    assert figures[0] == figures[1], figures


@case()
def robust_no_btf():
    """A kernel without BTF (simulated with ZCTRACE_BTF=/nonexistent): 'zctrace probes' shows every
    BTF-typed candidate refused and the raw_tp fallbacks; a run stops at once, in one line naming
    BTF, since the CO-RE programs cannot be relocated. ZCTRACE_BTF naming the real BTF works."""
    env = dict(os.environ, ZCTRACE_BTF="/nonexistent")
    p = subprocess.run([ZCTRACE, "probes"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "refused tp_btf: tp_btf:tcp_sendmsg_locked: no kernel BTF (/nonexistent: No such file or directory)" \
        in p.stdout, p.stdout
    for site in ("targets", "sched", "syscalls", "page_faults"):
        assert re.search(rf"^{site}\s+raw_tp\s", p.stdout, re.M), (site, p.stdout)
    assert re.search(r"^send_copy\s+none\s", p.stdout, re.M), p.stdout
    p = subprocess.run([ZCTRACE, "run", "tcp-onecopy"], capture_output=True, text=True, env=env, timeout=60)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode == 1 and p.stdout == "", (p.returncode, p.stdout[:300])
    assert len(lines) == 1 and "no kernel BTF (/nonexistent" in lines[0] and "CONFIG_DEBUG_INFO_BTF" in lines[0], \
        p.stderr
    env = dict(os.environ, ZCTRACE_BTF="/sys/kernel/btf/vmlinux")
    p = subprocess.run([ZCTRACE, "run", "--no-hist", "tcp-onecopy", "--size", "4K", "--messages", "200"],
                       capture_output=True, text=True, env=env, timeout=TIMEOUT)
    assert p.returncode == 0, (p.returncode, p.stderr, p.stdout[-500:])
