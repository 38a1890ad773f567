#!/usr/bin/env bash
# The demo: show the chosen probe methods, trace the four TCP workloads and print each ledger, then
# sweep the three socket workloads over sizes and threads and plot the sweep into demo-out/.
set -uo pipefail
cd "$(dirname "$0")/.."

./zctrace probes
echo
rc=0
for w in tcp-twocopy tcp-onecopy tcp-zerocopy tcp-sendfile; do
	./zctrace run "$w" --size 64K --threads 2 --messages 2000 || rc=1
done

echo
mkdir -p demo-out
./zctrace sweep tcp-twocopy,tcp-onecopy,tcp-zerocopy --sizes 4K,64K --threads 1,2 --reps 1 \
	--duration 0.5 -o demo-out/sweep.csv || rc=1
tools/plot demo-out/sweep.csv -o demo-out || rc=1
exit $rc
