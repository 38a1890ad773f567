#!/usr/bin/env bash
# The demo: show the chosen probe methods, trace the TCP and file workloads and print each ledger,
# run three kernel-checked microbenchmarks, then sweep the three socket workloads over sizes and threads and plot the sweep into demo-out/.
set -uo pipefail
cd "$(dirname "$0")/.."

./zctrace probes
echo
rc=0
for w in tcp-twocopy tcp-onecopy tcp-zerocopy tcp-sendfile; do
	./zctrace run "$w" --size 64K --threads 2 --messages 2000 || rc=1
done
# duplicating a file: read/write crosses the user boundary twice, copy_file_range copies in the kernel
for w in file-readwrite file-copyrange; do
	./zctrace run --no-hist "$w" --file-size 64M --cache cold || rc=1
done
# serving a file over TCP: read+send copies it three times, sendfile once (on the receiver)
./zctrace run --no-hist serve-readsend --file-size 64M --size 4K || rc=1
./zctrace run --no-hist serve-sendfile --file-size 64M --size 64K || rc=1

# two hosts on one machine: the receiver in its own network namespace, joined by veth; each side's
# ledger and where the zerocopy skbs were delivered, then loopback against veth in one table
./zctrace run --no-hist tcp-zerocopy --netns --size 64K --messages 2000 || rc=1
./zctrace run --no-hist remote-fileread --netns --file-size 64M --pattern random || rc=1
tools/paths.py --reps 1 || rc=1

# microbenchmarks whose assumptions the kernel checks: every getpid entered the kernel, the vDSO
# clock never did; the ping-pong handed the CPU over twice per round trip; a cold fault read one page
./zctrace run --no-hist syscall || rc=1
./zctrace run --no-hist ctxswitch || rc=1
./zctrace run --no-hist pagefault --file-size 16M || rc=1

echo
mkdir -p demo-out
./zctrace sweep tcp-twocopy,tcp-onecopy,tcp-zerocopy --sizes 4K,64K --threads 1,2 --reps 1 \
	--duration 0.5 -o demo-out/sweep.csv || rc=1
tools/plot demo-out/sweep.csv -o demo-out || rc=1
exit $rc
