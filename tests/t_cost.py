"""What each copy costs: the sampler's CPU time by copy site, held against the ledger's bytes, the
traced tasks' task-clock and the walk's recorded stacks. Under QEMU's emulation (the guests of make
test-kernels) time is emulated: there the tests check where the samples land, not how fast."""
import glob
import json
import os
import subprocess
import tempfile

from harness import case, ROOT, UNIT_TESTS, traced, traced_once, zctrace


def in_guest():
    """Whether this runs in a guest of make test-kernels, whose CPU is emulated."""
    return bool(os.environ.get("ZCTRACE_KERNEL_UNDER_TEST"))


def cost_of(led):
    cost = led["cost"]
    assert cost["measured"], cost
    # every sample is placed once: by site and by kind, nothing twice, nothing lost
    placed = sum(k["samples"] for k in cost["by_kind"].values()) + sum(s["samples"] for s in cost["by_site"].values() if s)
    assert placed == cost["samples"], (placed, cost["samples"])
    assert cost["stack_errors"] == 0, cost
    return cost


def sampled(led, site):
    s = led["sites"][site]
    assert s["cpu_samples"] == led["cost"]["by_site"][site]["samples"], (site, s)
    return s["cpu_samples"]


def held(led, name):
    checks = [c for c in led["checks"] if c["name"].startswith(name)]
    assert checks and all(c["ok"] for c in checks), (name, checks)


@case("stock", "rt", "old", root=False)
def cost_walk_on_recorded_stacks():
    """The walk the sampler runs in the kernel places every recorded stack of every kernel as
    checked by hand (tests/unit/stacks/KERNEL.txt; written.txt: by hand, for paths no recorded run took)."""
    files = sorted(glob.glob(os.path.join(ROOT, "tests", "unit", "stacks", "*.txt")))
    assert files
    p = subprocess.run([os.path.join(UNIT_TESTS, "costwalk"), *files], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and " 0 not" in p.stdout, p.stdout + p.stderr


@case("stock", "rt", "old")
def cost_of_tcp_copies():
    """tcp-twocopy at 64 KiB: the send and receive copies are timed (samples under
    tcp_sendmsg_locked's and tcp_recvmsg's copy routines), their ns per byte is CPU time over the
    ledger's exact bytes, the sampled time holds against task-clock, and no site copies faster
    than the machine could (here: 0.01 to 2 ns a byte, within the interval of its samples: the
    program's own 8 KiB copies run from L1 at over 100 GB/s, and may draw 2 samples)."""
    p, led = traced("tcp-twocopy", "--size", "64K", "--messages", "4000")
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-500:])
    cost = cost_of(led)
    if in_guest():
        # QEMU's TCG: the sampling timer does not keep its rate, and the report says so
        assert "emulated (QEMU TCG)" in (cost["task_clock_check_why"] or ""), cost
        assert not any(c["name"].startswith("sampled CPU time") for c in led["checks"]), led["checks"]
    else:
        assert cost["task_clock_check_why"] is None, cost
        held(led, "sampled CPU time == task-clock")
    for site in ("send_copy", "recv_copy"):
        assert sampled(led, site) > 0, (site, led["sites"][site])
        npb = led["sites"][site]["ns_per_byte"]
        want = led["sites"][site]["cpu_ns"] / led["sites"][site]["bytes"]
        assert abs(npb["value"] - want) < 1e-9 * max(1, want) and npb["lo"] <= npb["value"] <= npb["hi"], (site, npb)
        if not in_guest():
            assert npb["hi"] >= 0.01 and npb["lo"] <= 2, (site, npb)
    # the program's own memcpy of its 8 fields: a user-mode sample in libc's copy routine
    if reads_user_files(cost):
        assert sampled(led, "user_copy") > 0, led["sites"]["user_copy"]
        npb = led["sites"]["user_copy"]["ns_per_byte"]
        if not in_guest():
            assert npb["hi"] >= 0.01 and npb["lo"] <= 2, led["sites"]["user_copy"]
    else:
        assert "user_copy        not measured: the kernel could not read the file of" in p.stdout, p.stdout
    assert 0 < cost["copy_share"] < 1, cost


def reads_user_files(cost):
    """Whether the sampler read the files of the user-mode samples (their build IDs): everywhere but
    on PREEMPT_RT, where the kernel does not in the sampling interrupt. Where it did not, user_copy
    has no time, and says why."""
    assert cost["user_copy_functions_known"] > 0, cost
    if "PREEMPT_RT" not in os.uname().version:
        assert cost["user_copy_why"] is None and cost["user_unread_samples"] * 2 <= cost["user_samples"], cost
        return True
    assert cost["user_unread_samples"] == cost["user_samples"] > 0, cost
    assert "could not read the file of" in cost["user_copy_why"], cost
    assert cost["by_site"]["user_copy"] is None, cost
    return False


@case("stock", "rt", "old", alone=True)
def cost_of_user_copies():
    """membw's memcpy passes over 4 MiB: the samples land in libc's copy routine, as the
    program's own copy (user_copy), which the ledger counts exactly from the workload's USDT
    markers. Its sampled rate, CPU time over those bytes, is the workload's own clocked rate
    within a factor of 2 (the workload times each pass by the wall clock, the sampler by CPU
    time), and no faster than memcpy at that size, measured in the run. On PREEMPT_RT the kernel
    reads no file in the sampling interrupt: the ledger says so, and no time is made up."""
    p, led = traced("membw", "--kind", "memcpy", "--size", "4M", "--reps", "400")
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-500:])
    cost = cost_of(led)
    uc = led["sites"]["user_copy"]
    assert uc["bytes"] == 402 * 4 * 1024 * 1024, uc
    if not reads_user_files(cost):
        assert uc["cpu_ns"] is None and uc["ns_per_byte"] is None, uc
        return
    # the measured phase is memcpy and its loop alone
    assert cost["by_site"]["user_copy"]["samples"] >= 0.8 * cost["samples"] > 0, cost
    if in_guest():
        return
    own = next(r for r in led["workload"]["results"] if r["name"] == "memcpy")
    sampled_mb_s = 1e3 / uc["ns_per_byte"]["value"]
    assert 0.5 <= sampled_mb_s / own["median"] <= 2, (sampled_mb_s, own["median"])
    held(led, "user_copy copies no faster than memcpy")


FUNCTIONS_COPY = "/run/zctrace/functions"


@case("stock", "rt", "old", alone=True)
def cost_functions_from_the_boots_copy():
    """The first run of a boot reads the kernel's functions from /proc/kallsyms and keeps them in
    /run/zctrace/functions, root's alone; the next reads that copy, and knows the same functions of
    the kernel and its modules (the JITed BPF functions, listed live, come and go with the runs).
    A copy named for another boot, or one others may write, is not read: that run reads kallsyms
    again and keeps a new copy."""
    def functions():
        # one run each, whatever its ledger's checks say: a retry would read the copy it kept
        _, led = traced_once("tcp-onecopy", "--size", "64K", "--messages", "100")
        cost = cost_of(led)
        assert cost["bpf_functions_known"] > 0, cost  # zctrace's own programs at least
        return cost["functions_from"], cost["functions_known"] - cost["bpf_functions_known"]

    if os.path.exists(FUNCTIONS_COPY):
        os.unlink(FUNCTIONS_COPY)
    source, kernel = functions()
    assert source == "kallsyms", source
    assert os.stat(FUNCTIONS_COPY).st_mode & 0o777 == 0o600, oct(os.stat(FUNCTIONS_COPY).st_mode)
    assert functions() == ("cache", kernel)
    # another boot's: the first byte of the boot id it is named for, changed
    with open(FUNCTIONS_COPY, "r+b") as f:
        f.seek(8)
        byte = f.read(1)
        f.seek(8)
        f.write(bytes([byte[0] ^ 1]))
    assert functions() == ("kallsyms", kernel)
    # the run that read kallsyms kept a copy of its own, which others may write now
    os.chmod(FUNCTIONS_COPY, 0o622)
    assert functions() == ("kallsyms", kernel)
    assert os.stat(FUNCTIONS_COPY).st_mode & 0o777 == 0o600


@case(alone=True)
def cost_of_user_copies_without_erms():
    """As cost_of_user_copies, with glibc told this CPU has no ERMS (glibc.cpu.hwcaps=-ERMS), as
    AMD's Zen 1 and 2 and QEMU's default CPU have none: its memmove entry then moves 32 to 64 bytes
    itself and jumps into its _erms sibling's loops for every larger copy. Those loops are
    user_copy's too: the samples of 4 MiB copies land there."""
    env = dict(os.environ, GLIBC_TUNABLES="glibc.cpu.hwcaps=-ERMS")
    p, led = traced("membw", "--kind", "memcpy", "--size", "4M", "--reps", "200", env=env)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-500:])
    cost = cost_of(led)
    assert led["sites"]["user_copy"]["bytes"] == 202 * 4 * 1024 * 1024, led["sites"]["user_copy"]
    if not reads_user_files(cost):
        return
    assert cost["by_site"]["user_copy"]["samples"] >= 0.8 * cost["samples"] > 0, cost


@case("stock", "rt", "old")
def cost_of_a_commands_own_copies():
    """A command of the user's that loops over memcpy() of 1 MiB (tests/progs/copyloop.c): linked to the system's libc, its
    samples are user_copy's (CPU time, no bytes: nothing announces them); the same loop over
    memset() spends its time in libc too, but in no copy routine, so user_copy's bounds are the
    copy routine's alone; linked statically, its memcpy is its own, in no library zctrace knows,
    and user_copy says it is not measured rather than 0. "Most" is 60% of the samples: on a busy
    machine the scheduler and interrupts take a fifth of a loop's."""
    for link, mode in (("", ()), ("", ("set",)), ("-static", ())):
        exe = os.path.join(UNIT_TESTS, "copyloop" + link)
        p, led = traced("--", exe, "1" if in_guest() else "0.5", *mode)
        assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-500:])
        cost = cost_of(led)
        what = (link, mode, cost)
        if link:
            assert cost["by_site"]["user_copy"] is None and led["sites"]["user_copy"]["cpu_ns"] is None, what
            assert cost["by_kind"]["user"]["samples"] >= 0.6 * cost["samples"] > 0, what
            why = cost["user_copy_why"]
            assert why and ("in the libc zctrace knows" in why or "could not read the file" in why), what
        elif reads_user_files(cost) and not mode:
            assert cost["by_site"]["user_copy"]["samples"] >= 0.6 * cost["samples"] > 0, what
            assert led["sites"]["user_copy"]["cpu_ns"] > 0, led["sites"]["user_copy"]
        elif reads_user_files(cost):
            assert cost["by_site"]["user_copy"]["samples"] <= 0.05 * cost["samples"], what
            assert cost["by_kind"]["user"]["samples"] >= 0.6 * cost["samples"] > 0, what


@case("stock", "rt", "old")
def cost_of_pipes():
    """pipe-copy with 1 MiB messages: both pipe copies are timed (under pipe_write() and
    pipe_read(), or 6.15's anon_pipe_write() and anon_pipe_read()), in a plausible range of ns a byte,
    and no faster than memcpy at their copy size, measured in the same run. How fast a copy runs
    is the bench's to say: the range, 0.2 to 100 GB/s, holds on a busy machine too."""
    p, led = traced("pipe-copy", "--size", "1M", "--messages", "1000")
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-500:])
    cost_of(led)
    for site in ("pipe_write_copy", "pipe_read_copy"):
        assert sampled(led, site) > 0, (site, led["sites"][site])
        if not in_guest():
            assert 0.01 <= led["sites"][site]["ns_per_byte"]["value"] <= 5, (site, led["sites"][site])
            # memcpy's rate at the site's copy size, measured in the run, and the check against it
            assert led["sites"][site]["memcpy_gb_s"] > 0, led["sites"][site]
            held(led, f"{site} copies no faster than memcpy")


@case("stock", "rt", "old")
def cost_of_zerocopy_pinning():
    """tcp-zerocopy at 4 KiB over loopback: pinning and notices take time of their own (the
    zerocopy kind, which is zc_pin's cpu_ns), the deferred copy on delivery is timed, and the
    report compares the time a send spends pinning with the time a copy of its bytes takes in the
    same run."""
    p, led = traced("tcp-zerocopy", "--size", "4K", "--duration", "1")
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-500:])
    cost = cost_of(led)
    pin = led["sites"]["zc_pin"]
    assert cost["by_kind"]["zerocopy"]["samples"] > 0, cost["by_kind"]
    assert pin["cpu_ns"] == cost["by_kind"]["zerocopy"]["cpu_ns"] > 0 and pin["ns_per_byte"]["value"] > 0, pin
    assert sampled(led, "deferred_copy") > 0, led["sites"]["deferred_copy"]
    zc = cost["zerocopy_per_call"]
    assert zc and zc["calls"] == led["zerocopy_notices"]["calls_completed"], (zc, led["zerocopy_notices"])
    assert zc["bytes_per_call"] == led["sites"]["zc_pin"]["bytes"] / zc["calls"], zc
    assert zc["ns_per_call_lo"] <= zc["ns_per_call"] <= zc["ns_per_call_hi"], zc
    assert "zerocopy: pinning and notices: " in p.stdout, p.stdout


@case("stock", "rt", "old")
def cost_turned_off_and_bad_rates():
    """--sample-hz 0 attaches no sampler: its figures are absent with the reason, never 0; a rate
    that is not a number from 0 to 100000 is refused in one line, exit 2."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = zctrace("run", "--no-hist", "--passes", "traced", "--sample-hz", "0", "--json", f.name, "tcp-onecopy",
                    "--messages", "200")
        led = json.load(open(f.name))
    assert p.returncode == 0, p.stderr[-500:]
    assert led["cost"] == {"measured": False, "why": "not measured: turned off (--sample-hz 0)"}, led["cost"]
    assert led["sites"]["send_copy"]["cpu_ns"] is None and led["sites"]["send_copy"]["cpu_samples"] is None
    assert "CPU time by site: not measured: turned off (--sample-hz 0)" in p.stdout, p.stdout
    assert not any(c["name"].startswith("sampled CPU time") for c in led["checks"])
    for bad in ("-1", "abc", "100001", "", "5x"):
        p = zctrace("run", "--sample-hz", bad, "tcp-onecopy")
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and "--sample-hz" in lines[0], (bad, p.returncode, p.stderr)


@case("stock", "rt", "old")
def cost_refused_never_stops_a_run():
    """A kernel that refuses the sampler's event or its program's attach (simulated with
    ZCTRACE_REFUSE) still gives the whole ledger: the CPU time is "not measured" with the kernel's
    reason, in the report, the JSON and the probes it refused, and every other check holds."""
    for point, why in (("perf:cpu-clock", "perf:cpu-clock: refused by ZCTRACE_REFUSE"),
                       ("attach:cost_sample", "program cost_sample: attach refused")):
        env = dict(os.environ, ZCTRACE_REFUSE=point)
        p, led = traced("tcp-onecopy", "--messages", "500", extra=("--passes", "traced"), env=env)
        assert p.returncode == 0 and led["ok"], (point, p.stdout[-1500:], p.stderr[-500:])
        assert not led["cost"]["measured"] and why in led["cost"]["why"], (point, led["cost"])
        assert why in led["probes_refused"]["cost"], (point, led["probes_refused"])
        assert led["sites"]["send_copy"]["cpu_ns"] is None and led["sites"]["send_copy"]["bytes"] > 0, led["sites"]
        assert f"CPU time by site: not measured: {why}" in p.stdout, p.stdout


@case("stock", "rt", "old")
def timed_copies_cross_check():
    """--time-copies: where fentry loads (every guest of make test-kernels), each call of
    skb_copy_datagram_iter and skb_copy_ubufs is timed from entry to return. tcp-twocopy's receive
    copy and tcp-zerocopy's deferred copy are timed at their sites, at a time per byte no copy can
    beat or an emulator exceed, within the traced tasks' task-clock. With enough samples the
    receive copy is within a factor of 4 of the sampler's time for it (under emulation the
    sampler's timer does not keep its rate, and its times run low: 1.1 to 2.2 times below in the
    guests), and the deferred copy no less than a quarter of it: skb_copy_ubufs() also allocates
    the pages it copies into, which the sampler places in alloc. Where fentry is refused (here),
    the section says why and the ledger is whole."""
    for workload, site in (("tcp-twocopy", "recv_copy"), ("tcp-zerocopy", "deferred_copy")):
        p, led = traced(workload, "--size", "64K", "--messages", "2000", extra=("--time-copies",))
        assert p.returncode == 0, (workload, p.stdout[-2000:], p.stderr[-500:])
        t = led["timed_copies"]
        if not t["measured"]:
            assert not in_guest(), ("every guest kernel allows fentry", t)
            assert "refused" in t["why"] and t["why"].startswith("not measured: "), t
            assert "Timed copies: not measured: " in p.stdout, p.stdout[-1500:]
            assert all(c["ok"] for c in led["checks"]), [c for c in led["checks"] if not c["ok"]]
            continue
        by = t["by_site"]
        timed = sum(k["cpu_ns"] for k in by.values())
        assert 0 < timed <= led["perf"]["task-clock"], (workload, timed, led["perf"]["task-clock"])
        assert site in by, (workload, by)
        k = by[site]
        assert k["calls"] > 0 and k["cpu_ns"] > 0, (workload, k)
        # 0.005 ns a byte is 200 GB/s, beyond any memory; 50 is 20 MB/s, beneath any emulator
        assert k["ns_per_byte"] is not None and 0.005 < k["ns_per_byte"] < 50, (workload, k)
        s = led["cost"]["by_site"][site] if led["cost"]["measured"] else None
        if s and s["samples"] >= 50:
            assert 1 / 4 < k["cpu_ns"] / s["cpu_ns"] < (4 if site == "recv_copy" else float("inf")), (workload, k, s)
        assert "Timed copies (fentry/fexit" in p.stdout, p.stdout[-1500:]
