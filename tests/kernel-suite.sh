#!/bin/sh
# The portable part of the suite, run inside each kernel that make test-kernels boots: for each
# method, the site -> method table (lines "SITE METHOD_ASKED SITE_NAME CHOSEN": the default, then
# --method kprobe and tracepoint), then the tests. With "table", the table alone (make test-kernels
# asks it of this machine's kernel too); with "rt", the tests of what a PREEMPT_RT kernel changes:
# programs preempted and threads moved mid-call, softirqs in threads (the ledgers of every kind of
# workload, threads and processes sharing CPUs, and the choice of probes there); with "old", on a
# kernel before bpf_loop() (5.17), what its compat object gives. Each test says, where it is
# declared, which of these parts run it (@case("stock", "rt", "old") in tests/t_*.py). A second
# argument K/N runs one slice of the part (run.py --slice), so that N guests share it; the table
# comes with the first.
cd "$(dirname "$0")/.." || exit 2
slice=${2:-1/1}
case $slice in
[1-9]*/[1-9]*) ;;  # run.py checks the numbers
*) echo "kernel-suite.sh: a slice is K/N, not '$slice'" >&2; exit 2 ;;
esac
[ "${slice%/*}" = 1 ] && for m in default kprobe tracepoint; do
	opt=--method=$m
	[ $m = default ] && opt=
	./zctrace probes $opt | awk -v m=$m '/^[a-z_]+ +[a-z_]+ /{ print "SITE", m, $1, $2 }'
done
[ "${1:-}" = table ] && exit 0
case "${1:-stock}" in
stock | rt | old) exec /usr/bin/python3 tests/run.py --part "${1:-stock}" --slice "$slice" ;;
*) echo "kernel-suite.sh: unknown part '$1' (stock, rt, old or table)" >&2; exit 2 ;;
esac
