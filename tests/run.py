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
    run.py --list ...           print the names the same arguments select
"""
import glob
import importlib
import os
import sys

import harness

HERE = os.path.dirname(os.path.abspath(__file__))


def all_tests():
    """Every test, in the order the suite runs them: the topic modules' declarations, those that
    need no root first."""
    for path in sorted(glob.glob(os.path.join(HERE, "t_*.py"))):
        importlib.import_module(os.path.basename(path)[:-3])
    return [t for t in harness.SUITE if not t.root] + [t for t in harness.SUITE if t.root]


def usage(msg):
    print(f"run.py: {msg} (see its docstring)", file=sys.stderr)
    return 2


def main():
    args, listing, part, check, root = sys.argv[1:], False, None, False, False
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt.startswith("--part="):
            opt, value = opt.split("=", 1)
            args.insert(0, value)
        if opt == "--list":
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
    if args and not chosen:
        return usage(f"no test matches {' '.join(args)}")
    for t in chosen:
        if listing:
            print(t.__name__)
        else:
            harness.test(t)
    if listing:
        return 0
    results = harness.results
    print(f"{results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
