#!/usr/bin/env bash
# The demo: show the chosen probe methods, then trace the four TCP workloads and print each ledger.
set -uo pipefail
cd "$(dirname "$0")/.."

./zctrace probes
echo
rc=0
for w in tcp-twocopy tcp-onecopy tcp-zerocopy tcp-sendfile; do
	./zctrace run "$w" --size 64K --threads 2 --messages 2000 || rc=1
done
exit $rc
