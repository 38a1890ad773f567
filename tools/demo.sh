#!/usr/bin/env bash
# The demo: show the chosen probe methods, trace the TCP and file workloads and print each ledger,
# run three kernel-checked microbenchmarks, then sweep five socket workloads over sizes and threads (with
# membw's memcpy bandwidth), draw every figure into demo-out/ and print the findings table; last, sweep six
# microbenchmarks over their own parameters and draw their figures into demo-out/micro/.
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
# two hosts as a user runs them: each end a run of its own (--listen, --connect), here both on loopback;
# the receiving end's report after the sending end's
rx_out=$(mktemp)
trap 'rm -f "$rx_out"' EXIT
./zctrace run --no-hist tcp-zerocopy --listen 127.0.0.1:5731 >"$rx_out" 2>&1 &
rx=$!
./zctrace run --no-hist tcp-zerocopy --connect 127.0.0.1:5731 --size 64K --messages 2000 || rc=1
wait "$rx" || rc=1
cat "$rx_out"

# microbenchmarks whose assumptions the kernel checks: every getpid entered the kernel, the vDSO
# clock never did; the ping-pong handed the CPU over twice per round trip; a cold fault read one page
./zctrace run --no-hist syscall || rc=1
./zctrace run --no-hist ctxswitch || rc=1
./zctrace run --no-hist pagefault --file-size 16M || rc=1

echo
# a small grid, fresh each time: two-, one- and zero-copy, sendfile and UDP x 4 sizes (to 32K: a UDP datagram) x 2 thread counts
# x 2 reps, plus one membw run per rep; the receiver in a process of its own, so the counters hold the
# sender apart. Among the figures, cpu_by_site_vs_size: what each copy costs, by site, against size
rm -rf demo-out
mkdir -p demo-out
./zctrace sweep tcp-twocopy,tcp-onecopy,tcp-zerocopy,tcp-sendfile,udp-copy --sizes 1K,4K,16K,32K --threads 1,2 --reps 2 \
	--duration 0.3 --membw 64M -o demo-out/sweep.json -- --peer process || rc=1
tools/plot demo-out/sweep.json -o demo-out || rc=1

echo
# microbenchmarks over their own parameters (about 50 s): each figure's caption says which of the
# runs' assumptions the kernel confirmed. The png files in demo-out/micro/:
#   memlat_staircase       latency per dependent load against working set, the L1d/L2/L3 sizes marked
#   call_cost_vs_args      procedure call cost against 0..7 integer arguments, the loop subtracted
#   fileread_vs_file_size  time per read and MB/s against file size: sequential and random, cold and warm
#   filecache_knee         re-read throughput against file size, and where the page cache stopped serving
#   contention_vs_procs    time per cold file against 1..8 processes reading at once
#   timer_histograms       the distribution of rdtsc, rdtscp and clock_gettime read twice
mkdir -p demo-out/micro
./zctrace sweep memlat --param size=4K,32K,256K,2M,16M,64M -o demo-out/micro/memlat.json || rc=1
./zctrace sweep call --param max-args=7 --reps 2 -o demo-out/micro/call.json -- --iters 200000 --reps 30 || rc=1
./zctrace sweep fileread --param file-size=1M,4M,16M --param cache=cold,warm -o demo-out/micro/fileread.json \
	-- --reps 3 --reads 64 || rc=1
./zctrace sweep filecache --param max-size=64M --reps 2 -o demo-out/micro/filecache.json -- --bytes 64M --reps 5 || rc=1
./zctrace sweep contention --param procs=8 --reps 2 -o demo-out/micro/contention.json -- --file-size 1M --reps 5 || rc=1
./zctrace sweep timer --reps 2 -o demo-out/micro/timer.json -- --reps 20000 || rc=1
tools/plot demo-out/micro/*.json -o demo-out/micro || rc=1
exit $rc
