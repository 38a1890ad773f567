/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The settings user space writes before load (rodata), and the global variables the programs and
 * user space share.
 */
#ifndef ZCTRACE_SETTINGS_BPF_H
#define ZCTRACE_SETTINGS_BPF_H
#include "common.bpf.h"

/* Set before load. */
const volatile __u32 site_method[NR_SITES] = {};
const volatile __u8 gate_on_phase = 0;	/* count sites only between the USDT phase markers */
const volatile __u8 track_io = 0;	/* follow file syscalls for the file sites */
const volatile __u8 io_kind_of[MAX_SYSCALLS] = {};	/* enum io_kind by syscall number */
/* the number of each enum io_syscall, which set_io_table() writes on every load; ~0 (no number) before */
const volatile __u32 io_syscall_nr[NR_IO_SYSCALLS] = { [0 ... NR_IO_SYSCALLS - 1] = ~0U };
const volatile __u32 o_direct_flag = 0;	/* O_DIRECT of this architecture */
const volatile __u32 execve_nr = ~0U;	/* execve's number on this architecture */
const volatile __u32 recvfrom_nr = ~0U;	/* recvfrom's: its flags are its fourth argument */
const volatile __u32 sendto_nr = ~0U;	/* sendto's: the same */
const volatile __u8 trace_all = 0;	/* the machine-wide census: every process but self_tgid */
const volatile __u32 self_tgid = 0;	/* ... zctrace itself */
const volatile __u32 nr_cpus = 1;	/* possible CPUs: the copies of a per-CPU value */
/* the sites counted without following the I/O call from its entry (the census), by bit */
const volatile __u32 standalone_sites = 0;
/* the zerocopy notices are followed (zc_notices): a zerocopy send is kept for its notice */
const volatile __u8 zc_notices_on = 0;
/* the census counts TCP from each socket's own counters (tcpcount.bpf.c) */
const volatile __u8 tcp_counters = 0;
/* the census sites that are the sockets' counters less what was not copied (TCP_DERIVED_*) */
const volatile __u8 tcp_derived = 0;
/* ... and socket_lengths, beside the slots it turns on (maps.bpf.h) */
/* ZCTRACE_REFUSE=storage:offcpu_task: a switch-out's time is refused by the task's storage, as
 * one is where a program preempted on the CPU holds its lock (sched.bpf.c's offcpu_begin()) */
const volatile __u8 offcpu_storage_refused = 0;

/* Set by user space: the process zctrace started, whose exec starts the perf counters. */
__u32 root_tgid = 0;
/* Bumped by whoever adds a target (a fork here, user space there): older verdicts are stale. */
__u32 targets_gen = 0;

/* Written by the USDT phase markers. */
__u32 phase_active = 0;
struct misc_stats misc = {};
/* Written by the USDT step marker: the microbenchmark step now running, 0 = none. */
__u32 step_now = 0;
/* Set once a target makes a zerocopy send: until then no skb can be one of theirs. */
__u32 zc_sends_seen = 0;
/* Set once a target splices pages into a TCP socket (sendfile, splice): tx_copy looks for them. */
__u32 splice_sends_seen = 0;

static __always_inline bool site_uses(__u32 site, __u32 method)
{
	return site_method[site] == method;
}

static __always_inline bool counting(void)
{
	return !gate_on_phase || phase_active;
}

#endif /* ZCTRACE_SETTINGS_BPF_H */
