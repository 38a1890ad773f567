#!/usr/bin/env python3
"""zctrace's test suite: unit tests, then end-to-end runs that really load BPF and trace workloads.

Every end-to-end test asserts kernel figures against independent ones (the workload's own byte
counts, the traffic a helper process generated), exactly. Ends with 'N passed, N failed, N skipped'.

The tests live in one module per topic (t_*.py), found here by name, on the harness (harness.py:
case(), zctrace(), traced(), ...) and the ledger checks more than one topic runs (checks.py). Each
test is declared where it is written (@case(PARTS, root=...)); the suite runs them in the order
the modules declare them, those that need no root first.

    run.py [NAME...]            the tests whose names hold NAME (NAME$: the one so named); all by default
    run.py --part PART [NAME...]  of those, the ones guest part PART runs (stock, rt, old, nic)
    run.py --check [NAME...]    of those, the ones that need no root, as any user (make check)
    run.py --root [NAME...]     of those, the ones that need root (make test runs --check, then these)
    run.py --slice K/N ...      of those, every Nth from the Kth (1 <= K <= N): N guests share a part
    run.py --list ...           print the names the same arguments select
    run.py -j N ...             up to N tests side by side, each in a process of its own, its output
                                printed whole when it ends; the tests declared alone=True run
                                first, one by one, then long=True ones start before the others
                                (1 by default: one at a time, in order)
"""
import ctypes
import glob
import importlib
import os
import re
import signal
import sys
import tempfile
import time

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
PARENT = os.getpid()
STOPS = {signal.SIGINT, signal.SIGTERM}


def all_tests():
    """Every test, in the order the suite runs them: the topic modules' declarations, those that
    need no root first."""
    for path in sorted(glob.glob(os.path.join(HERE, "t_*.py"))):
        importlib.import_module(os.path.basename(path)[:-3])
    return [t for t in harness.SUITE if not t.root] + [t for t in harness.SUITE if t.root]


def forked(t):
    """Starts test @t in a child process of its own process group (a Ctrl-C at the terminal is
    run.py's to pass on, once), its output to a file of its own, and ended by SIGINT if run.py
    dies. Returns (pid, file). The child's exit status is its outcome: 0 passed, 1 failed, 3
    skipped."""
    out = tempfile.TemporaryFile()
    sys.stdout.flush()
    # no interrupt between the fork and the child's own group and handlers, on either side
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    pid = os.fork()
    if pid:
        try:
            os.setpgid(pid, pid)  # the child sets it too: whichever comes first
        except OSError:
            pass
        return pid, out, mask
    status = 1
    try:
        os.setpgid(0, 0)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if os.getppid() != PARENT:
            raise KeyboardInterrupt
        harness.results.update(passed=0, failed=0, skipped=0)
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        harness.test(t)
        r = harness.results
        status = 1 if r["failed"] else 3 if r["skipped"] else 0
    except BaseException as e:  # an interrupt, or SystemExit from a test: a failure, named
        print(f"FAIL {t.__name__}: {type(e).__name__}: {e}", flush=True)
    finally:
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
        except BaseException:
            pass
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except BaseException:
                pass
        os._exit(status)


def run_side_by_side(chosen, jobs):
    """Runs @chosen, up to @jobs at once: the alone=True tests first, one by one, then the long=True
    ones and the rest side by side, each in the order declared. Prints each test's output whole as
    it ends and counts its outcome in harness.results. Interrupted (Ctrl-C, SIGTERM), it passes
    one SIGINT to each running test, waits 60 s for them to clean up, kills what is left and
    returns False (True when every test ran)."""
    running = {}
    todo = [t for t in chosen if t.alone] + [t for t in chosen if not t.alone and t.long] + \
        [t for t in chosen if not t.alone and not t.long]

    def reap(block=True):
        # waits, interruptibly, without reaping; then reaps, prints and counts with no interrupt
        # between: a test reaped is counted, one counted is reaped
        try:
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG))
        except ChildProcessError:
            running.clear()
            return False
        if not ended:
            return False
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
        try:
            pid, status = os.waitpid(ended.si_pid, 0)
            t, out = running.pop(pid)
            out.seek(0)
            sys.stdout.write(out.read().decode(errors="replace"))
            out.close()
            code = os.waitstatus_to_exitcode(status)
            outcome = {0: "passed", 3: "skipped"}.get(code, "failed")
            if code not in (0, 1, 3):
                print(f"FAIL {t.__name__}: its process ended with status {code}")
            harness.results[outcome] += 1
            sys.stdout.flush()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return True

    def signal_all(sig):
        for pid in running:
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                pass

    def terminated(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)
    try:
        while todo or running:
            if todo and (todo[0].alone and not running or not todo[0].alone and len(running) < jobs):
                t = todo.pop(0)
                pid, out, mask = forked(t)
                running[pid] = (t, out)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                if not t.alone:
                    continue
            reap()
    except KeyboardInterrupt:
        if os.getpid() != PARENT:  # never a test process's to handle
            os._exit(1)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print(f"run.py: interrupted; stopping {len(running)} running tests", flush=True)
        signal_all(signal.SIGINT)
        deadline = time.monotonic() + 60
        while running and time.monotonic() < deadline:
            if not reap(block=False):
                time.sleep(0.1)
        signal_all(signal.SIGKILL)
        while running:
            reap()
        return False
    return True


def usage(msg):
    print(f"run.py: {msg} (see its docstring)", file=sys.stderr)
    return 2


def main():
    args, listing, part, check, root, jobs, nth = sys.argv[1:], False, None, False, False, 1, (1, 1)
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt.startswith("--part=") or opt.startswith("--slice=") or opt.startswith("-j") and len(opt) > 2:
            opt, value = (opt.split("=", 1) if opt.startswith("--") else (opt[:2], opt[2:]))
            args.insert(0, value)
        if opt == "-j":
            if not args or not re.fullmatch(r"[1-9][0-9]*", args[0]):
                return usage("-j needs a number of tests to run at once, 1 or more")
            jobs = int(args.pop(0))
        elif opt == "--list":
            listing = True
        elif opt == "--check":
            check = True
        elif opt == "--root":
            root = True
        elif opt == "--part":
            if not args:
                return usage("--part needs a part (" + ", ".join(harness.PARTS) + ")")
            part = args.pop(0)
            if part not in harness.PARTS:
                return usage(f"unknown part '{part}' (known: {', '.join(harness.PARTS)})")
        elif opt == "--slice":
            m = re.fullmatch(r"([1-9][0-9]*)/([1-9][0-9]*)", args.pop(0) if args else "")
            if not m or int(m.group(1)) > int(m.group(2)):
                return usage("--slice needs K/N, 1 <= K <= N: every Nth test from the Kth")
            nth = (int(m.group(1)), int(m.group(2)))
        else:
            return usage(f"unknown option '{opt}'")
    if check and root:
        return usage("--check and --root select no test together")
    if not listing and not check and os.geteuid() != 0:
        print("tests need root (BPF, perf counters); make check runs the ones that need none", file=sys.stderr)
        return 2
    # NAME runs the tests whose names hold NAME; NAME$ runs the one test so named
    chosen = [t for t in all_tests()
              if (not args or any(t.__name__ == o[:-1] if o.endswith("$") else o in t.__name__ for o in args))
              and (part is None or part in t.parts) and (not check or not t.root) and (not root or t.root)]
    if any(a.startswith("-") for a in args):
        return usage(f"options come before names: {next(a for a in args if a.startswith('-'))}")
    if args and not chosen:
        return usage(f"no test matches {' '.join(args)}")
    # the tests of a slice alternate through the declarations, so that slices take about as long
    chosen = chosen[nth[0] - 1::nth[1]]
    if listing:
        for t in chosen:
            print(t.__name__)
        return 0
    whole = True
    if jobs == 1:
        for t in chosen:
            harness.test(t)
    else:
        whole = run_side_by_side(chosen, jobs)
    results = harness.results
    print(f"{results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped"
          + ("" if whole else f", {len(chosen) - sum(results.values())} not run (interrupted)"))
    return 130 if not whole else 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
