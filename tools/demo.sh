#!/usr/bin/env bash
# The demo: show the chosen probe methods, trace the TCP and file workloads and print each ledger,
# run three kernel-checked microbenchmarks, then sweep the three socket workloads over sizes and threads (with
# membw's memcpy bandwidth), draw every figure into demo-out/ and print the findings table.
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
# a small grid, fresh each time: 3 workloads x 3 sizes x 2 thread counts x 2 reps, plus one membw run
# per rep; the receiver in a process of its own, so the counters hold the sender apart
rm -rf demo-out
mkdir -p demo-out
./zctrace sweep tcp-twocopy,tcp-onecopy,tcp-zerocopy --sizes 1K,4K,16K --threads 1,2 --reps 2 \
	--duration 0.3 --membw 64M -o demo-out/sweep.json -- --peer process || rc=1
tools/plot demo-out/sweep.json -o demo-out || rc=1
exit $rc
