// SPDX-License-Identifier: GPL-2.0
/*
 * zctrace's BPF object: copy sites, context switches, syscalls and page faults of the traced
 * processes, aggregated in maps. Each site's methods (fentry/fexit, kprobe, tp_btf, raw_tp) live
 * in that site's file, sharing settings, maps, the target filter and the counting through the
 * headers each file includes itself; user space autoloads one method per site. One compile
 * unit, so the skeleton stays one object.
 *
 * Every part compiles alone (make bpf-alone), so the order below is not needed to compile: it is
 * the order the object lays out its variables, maps and programs in (a header's definitions land
 * where it is first included).
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "sockcall.bpf.h"
#include "slots.bpf.h"

#include "targets.bpf.c"
#include "sched.bpf.c"
#include "boundary.bpf.h"
#include "pipe.bpf.c"
#include "sock.bpf.c"
#include "send.bpf.c"
#include "zerocopy.bpf.c"
#include "recv.bpf.c"
#include "usdt.bpf.c"
#include "census.bpf.c"
#include "tcpcount.bpf.c"
#include "cost.bpf.c"
/* the syscalls' programs, the largest, after the programs kernels are known to refuse at load:
 * see the end of file.bpf.c */
#include "file.bpf.c"
#include "io_syscalls.bpf.c"
#include "syscalls.bpf.c"

char LICENSE[] SEC("license") = "GPL";
