#!/usr/bin/env bash
# Runs every libFuzzer target built in OUTDIR/fuzz for SECONDS each, from the seeds in
# tests/fuzz/corpus/TARGET plus what earlier runs found (OUTDIR/corpus/TARGET). One line per
# target; a crash, leak or failed invariant prints the fuzzer's report and the input that did it.
set -uo pipefail

out=${1:?usage: tools/fuzz.sh OUTDIR SECONDS}
secs=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
failed=0

for bin in "$out"/fuzz/*; do
	[ -x "$bin" ] || continue
	t=$(basename "$bin")
	mkdir -p "$out/corpus/$t" "$out/artifacts"
	seeds=()
	[ -d "$root/tests/fuzz/corpus/$t" ] && seeds=("$root/tests/fuzz/corpus/$t")
	log="$out/$t.log"
	"$bin" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$out/artifacts/$t-" "$out/corpus/$t" "${seeds[@]}" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	n=$(find "$out/corpus/$t" -type f | wc -l)
	if [ $rc -eq 0 ]; then
		echo "fuzz $t: ok, ${runs:-?} inputs in ${secs} s (${rate:-?}/s), ${cov:-cov: ?} edges, corpus $n"
	else
		failed=1
		echo "fuzz $t: FAILED (exit $rc) after ${runs:-?} inputs; log $log"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz_|.*runtime error)|artifact_prefix|Test unit written' "$log" | head -20
	fi
done
exit $failed
