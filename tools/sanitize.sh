#!/usr/bin/env bash
# Runs the end-to-end suite (or the tests named) against the ASan + UBSan build in OUTDIR: its
# zctrace, workloads and unit tests. Every process writes its sanitizer reports to
# OUTDIR/reports, so a report fails the run even where a test does not look at that process's
# stderr; they are printed at the end.
set -uo pipefail

out=$(cd "${1:?usage: tools/sanitize.sh OUTDIR [TEST ...]}" && pwd)
shift
root=$(cd "$(dirname "$0")/.." && pwd)
reports="$out/reports"
rm -rf "$reports"
mkdir -p "$reports"

export ZCTRACE_BIN="$out/zctrace" ZCTRACE_WORKLOADS="$out/workloads" ZCTRACE_UNIT_TESTS="$out/tests"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:log_path=$reports/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
python3 "$root/tests/run.py" "$@"
rc=$?

n=$(find "$reports" -type f | wc -l)
if [ "$n" -gt 0 ]; then
	echo "sanitize: $n sanitizer report(s):"
	for f in "$reports"/*; do
		echo "=== $f"
		head -60 "$f"
	done
	exit 1
fi
echo "sanitize: no sanitizer report"
exit $rc
