#!/bin/sh
# Builds the lmbench programs `make bench` compares against, from an lmbench source tree kept
# outside this project (e.g. a clone of intel/lmbench), into OUT. Needs gcc and libtirpc-dev.
# Usage: tools/build-lmbench.sh LMBENCH_SRC OUT   then   LMBENCH=OUT make bench
set -eu
[ $# -eq 2 ] || { echo "usage: $0 LMBENCH_SRC OUT" >&2; exit 2; }
src=$1/src
[ -f "$src/lat_syscall.c" ] || { echo "$0: $1 is not an lmbench tree (no src/lat_syscall.c)" >&2; exit 2; }
[ -f /usr/include/tirpc/rpc/rpc.h ] || { echo "$0: needs libtirpc-dev (lmbench includes <rpc/rpc.h>)" >&2; exit 1; }
mkdir -p "$2"
lib="lib_tcp.c lib_udp.c lib_unix.c lib_timing.c lib_mem.c lib_stats.c lib_debug.c lib_sched.c getopt.c"
for prog in lat_syscall lat_ctx lat_proc lat_mem_rd bw_mem lat_pagefault lat_tcp bw_tcp lat_connect; do
	(cd "$src" && gcc -O2 -w -DHAVE_uint=1 -DHAVE_int64_t=1 -DHAVE_socklen_t -DHAVE_DRAND48 \
		-DHAVE_SCHED_SETAFFINITY=1 -I/usr/include/tirpc -o "$(realpath "$2")/$prog" "$prog.c" $lib -ltirpc -lm)
done
echo "built in $2: LMBENCH=$2 make bench"
