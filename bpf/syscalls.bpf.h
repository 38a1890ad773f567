/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What syscalls.bpf.c shares: a syscall's entry (on_syscall()), for the sys_enter tracepoint and
 * io_syscalls.bpf.c's fentry programs alike.
 */
#ifndef ZCTRACE_SYSCALLS_BPF_H
#define ZCTRACE_SYSCALLS_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "sockcall.bpf.h"
#include "boundary.bpf.h"
#include "sched.bpf.h"
#include "fdclass.bpf.h"
#include "iocall.bpf.h"

/*
 * Syscalls of each microbenchmark step: key = step * MAX_SYSCALLS + number. Shared, not per
 * CPU: its 64 K counters would be copied per possible CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_STEPS * MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, __u64);
} step_syscalls SEC(".maps");

static __always_inline void on_syscall(bool btf, struct pt_regs *regs, long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 nr = id, step = step_now, key, tgid = pid_tgid >> 32;
	struct cpu_state *cs = cpu_state();
	__u64 *cnt;
	__u8 kind;

	if (id < 0 || id >= MAX_SYSCALLS || !is_target_at(cs, tgid))
		return;
	if (nr == execve_nr && tgid == root_tgid && !misc.execve_seen) {
		misc.switches_at_execve = switches_so_far(tgid);
		misc.execve_seen = 1;
	}
	/*
	 * This CPU's counts, in the state the filter just looked up: only this program writes them,
	 * and it does not nest on a CPU. Per CPU, not shared: the sending and receiving threads on
	 * two CPUs would otherwise bounce one cache line between them on every call (sendmsg's and
	 * recvmsg's counters sit side by side), with an atomic add each.
	 */
	if (cs) {
		cs->counts.all[nr & (MAX_SYSCALLS - 1)] += 1;
		if (phase_active)
			cs->counts.phase[nr & (MAX_SYSCALLS - 1)] += 1;
	}
	if (step) {
		struct step_stats *st = bpf_map_lookup_elem(&step_stats, &step);

		if (st)
			__sync_fetch_and_add(&st->syscalls, 1);
		key = step * MAX_SYSCALLS + nr;
		cnt = bpf_map_lookup_elem(&step_syscalls, &key);
		if (cnt)
			__sync_fetch_and_add(cnt, 1);
	}
	kind = io_kind_of[nr & (MAX_SYSCALLS - 1)];
	if (kind == IO_SEND && !socket_lengths)
		forget_send_mark(cs, (__u32)pid_tgid);
	/*
	 * A socket call but a zerocopy send waits for its exit: nothing to build on its way in, but
	 * the slot its socket notes its type in. Where sockets note it (socket_lengths), so does a
	 * read or write: a file's is kept by its first file event or its exit (file.bpf.c's rw_call()).
	 */
	if (track_io && socket_lengths && (kind == IO_READ || kind == IO_WRITE))
		open_sock_call((__u32)pid_tgid, nr, kind);
	else if (track_io && kind && (kind < IO_SEND || sock_call_zc(btf, regs, nr, kind)))
		enter_io(btf, regs, current_task(), (__u32)pid_tgid, nr, kind);
	else if (socket_lengths && (kind == IO_SEND || kind == IO_RECV))
		open_sock_call((__u32)pid_tgid, nr, kind);
}

#endif /* ZCTRACE_SYSCALLS_BPF_H */
