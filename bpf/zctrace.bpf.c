// SPDX-License-Identifier: GPL-2.0
/*
 * zctrace's BPF object: copy sites, context switches, syscalls and page faults of the traced
 * processes, aggregated in maps. Each site's flavours (fentry/fexit, kprobe, tp_btf, raw_tp) live
 * in that site's file, sharing maps and the target filter through common.bpf.h; user space
 * autoloads one flavour per site. One compile unit, so the skeleton stays one object.
 */
#include "common.bpf.h"

#include "targets.bpf.c"
#include "sched.bpf.c"
#include "boundary.bpf.c"
#include "pipe.bpf.c"
#include "sock.bpf.c"
#include "file.bpf.c"
#include "syscalls.bpf.c"
#include "io_syscalls.bpf.c"
#include "send.bpf.c"
#include "zerocopy.bpf.c"
#include "recv.bpf.c"
#include "usdt.bpf.c"
#include "census.bpf.c"

char LICENSE[] SEC("license") = "GPL";
