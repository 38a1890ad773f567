#!/usr/bin/env bash
# The demo: show the chosen probe methods, then trace the TCP and file workloads and print each ledger.
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
exit $rc
