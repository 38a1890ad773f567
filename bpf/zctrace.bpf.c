// SPDX-License-Identifier: GPL-2.0
/* Kernel side of zctrace: copy sites, context switches, syscalls and page faults of the traced
 * processes, aggregated in maps. Each site has several attach flavours; user space autoloads one. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "zctrace.h"

#define ZCT_PF_EXITING 0x00000004	/* include/linux/sched.h: set at the start of do_exit() */

/* Set before load. */
const volatile __u32 site_method[NR_SITES] = {};
const volatile __u8 gate_on_phase = 0;	/* count sites only between the USDT phase markers */
const volatile __u8 track_io = 0;	/* follow file syscalls for the file sites */
const volatile __u8 io_kind_of[MAX_SYSCALLS] = {};	/* enum io_kind by syscall number */
const volatile __u32 o_direct_flag = 0;	/* O_DIRECT of this architecture */
const volatile __u32 execve_nr = ~0U;	/* execve's number on this architecture */

/* Set by user space: the process zctrace started, whose exec starts the perf counters. */
__u32 root_tgid = 0;
/* Bumped by whoever adds a target (a fork here, user space there): older verdicts are stale. */
__u32 targets_gen = 0;

/* Written by the USDT phase markers. */
__u32 phase_active = 0;
struct misc_stats misc = {};
/* Written by the USDT segment marker: the microbenchmark step now running, 0 = none. */
__u32 segment = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGETS);
	__type(key, __u32);	/* tgid */
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGETS * NR_SITES);
	__type(key, struct site_key);
	__type(value, struct site_stats);
} sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGETS);
	__type(key, __u32);	/* tgid */
	__type(value, struct sched_stats);
} sched SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);	/* tid */
	__type(value, __u64);	/* ns when it left the CPU */
} offcpu_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, __u64);
} syscalls SEC(".maps");

/* Syscalls of the measured phase, by number: the per-chunk call counts of the workloads. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, __u64);
} phase_syscalls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SEGMENTS);
	__type(key, __u32);
	__type(value, struct seg_stats);
} seg_stats SEC(".maps");

/*
 * The target filter's last verdict on each CPU: tgid << 32 | generation << 1 | verdict, one word so
 * that a program preempted on the same CPU never reads half of another's. Most events come from
 * the task that ran the last one, and an array slot costs less than the targets hash's lookup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} target_memo SEC(".maps");

/* The target task (tid) that last ran on each CPU: a step's handoffs are counted against it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} last_target SEC(".maps");

/* Syscalls of each microbenchmark step: key = segment * MAX_SYSCALLS + number. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SEGMENTS * MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, __u64);
} seg_syscalls SEC(".maps");

/* One file syscall in flight per thread: what its descriptors are and what copies were seen. */
struct io_call {
	__u32 kind;		/* enum io_kind */
	__u8 in;		/* FD_* of the source descriptor */
	__u8 out;		/* FD_* of the destination descriptor */
	__u16 pad;
	__u64 seen_write;	/* bytes the write-copy probes saw during the call */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);	/* tid */
	__type(value, struct io_call);
} io_calls SEC(".maps");

/* Pages the targets brought into the page cache, by file. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct pc_key);
	__type(value, __u64);
} pc_adds SEC(".maps");

/* One in-flight tcp_sendmsg_locked() call per thread, followed through the tracepoint. */
struct send_call {
	__u64 sk;
	__u64 msg;
	__u64 start_left;	/* msg_data_left() at the first loop iteration */
	__u64 last_left;	/* ... at the latest iteration */
	__u32 mode;		/* enum send_mode */
	__u32 zc_id;		/* MSG_ZEROCOPY notification id of this call */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);	/* tid */
	__type(value, struct send_call);
} send_calls SEC(".maps");

struct zc_key {
	__u64 sk;
	__u32 id;
	__u32 pad;
};

/* MSG_ZEROCOPY sends waiting for their completion notice: bytes pinned by each. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ZC_CALLS);
	__type(key, struct zc_key);
	__type(value, __u64);
} zc_calls SEC(".maps");

/* Sockets the targets sent on: deferred copies happen in softirq context, found by socket. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u32);	/* tgid */
} target_socks SEC(".maps");

/* Where the targets' zerocopy skbs went: device, namespace, stage. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct zc_path_key);
	__type(value, struct zc_path_stats);
} zc_path SEC(".maps");


static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xFFFFFFFF) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	/*
	 * A mask, not a compare: the verifier must see the bound, and clang drops the compare. The
	 * asm keeps clang from moving the mask onto one operand of the ORs above, a bound that 6.1's
	 * verifier does not carry through them.
	 */
	asm volatile("%0 &= %1" : "+r"(r) : "i"(MAX_SLOTS - 1));
	return r;
}

static __always_inline __u32 current_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

static __always_inline bool is_target(__u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/* is_target() through this CPU's memo: the filter every hot program runs first. */
static __always_inline bool is_target_memo(__u32 tgid)
{
	__u32 zero = 0, gen = (targets_gen & 0x7fffffff) << 1;
	__u64 *memo = bpf_map_lookup_elem(&target_memo, &zero), m;
	bool verdict;

	if (memo) {
		m = *memo;
		if ((__u32)(m >> 32) == tgid && ((__u32)m & ~1U) == gen)
			return m & 1;
	}
	verdict = is_target(tgid);
	if (memo)
		*memo = (__u64)tgid << 32 | gen | verdict;
	return verdict;
}

/* The current microbenchmark step's figures, or NULL outside any step. */
static __always_inline struct seg_stats *cur_seg(void)
{
	__u32 seg = segment;

	return seg ? bpf_map_lookup_elem(&seg_stats, &seg) : NULL;
}

static __always_inline bool counting(void)
{
	return !gate_on_phase || phase_active;
}

/* Adds @ncopies copies of @bytes in all to a site; the histogram gets the mean copy size. */
static __always_inline void record_n(__u32 tgid, __u32 site, __u64 bytes, __u64 ncopies)
{
	static const struct site_stats zero;
	struct site_key key = { .tgid = tgid, .site = site };
	struct site_stats *st;
	__u32 slot;

	if (!counting() || ncopies == 0)
		return;
	st = bpf_map_lookup_elem(&sites, &key);
	if (!st) {
		bpf_map_update_elem(&sites, &key, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&sites, &key);
		if (!st) {
			__sync_fetch_and_add(&misc.sites_dropped, 1);
			return;
		}
	}
	slot = log2_slot(bytes / ncopies);
	__sync_fetch_and_add(&st->count, ncopies);
	__sync_fetch_and_add(&st->bytes, bytes);
	__sync_fetch_and_add(&st->hist[slot], ncopies);
}

static __always_inline void record(__u32 tgid, __u32 site, __u64 bytes)
{
	record_n(tgid, site, bytes, 1);
}

static __always_inline bool site_uses(__u32 site, __u32 method)
{
	return site_method[site] == method;
}

/* ---- target filter: follow forks ---------------------------------------------------------- */

static __always_inline void on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct seg_stats *seg;
	__u8 one = 1;

	if (!is_target(ptgid))
		return;

	if (bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY))
		__sync_fetch_and_add(&misc.targets_dropped, 1);
	__sync_fetch_and_add(&targets_gen, 1);
	__sync_fetch_and_add(&misc.forks, 1);
	seg = cur_seg();
	if (seg)
		__sync_fetch_and_add(&seg->forks, 1);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent, child);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(fork_raw, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent, child);
	return 0;
}

static __always_inline void on_exit(struct task_struct *task)
{
	struct seg_stats *seg;
	__u32 tid;

	if (!is_target(BPF_CORE_READ(task, tgid)))
		return;
	/* send call slots live as long as their thread */
	tid = BPF_CORE_READ(task, pid);
	bpf_map_delete_elem(&send_calls, &tid);
	__sync_fetch_and_add(&misc.exits, 1);
	seg = cur_seg();
	if (seg)
		__sync_fetch_and_add(&seg->exits, 1);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *task)
{
	on_exit(task);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(exit_raw, struct task_struct *task)
{
	on_exit(task);
	return 0;
}

/* ---- context switches and off-CPU time ----------------------------------------------------- */

/* The tgids come from the caller: tp_btf reads them directly, raw_tp through CO-RE reads. */
static __always_inline void on_switch(bool preempt, struct task_struct *prev,
				      struct task_struct *next, unsigned int prev_state,
				      __u32 prev_tgid, __u32 next_tgid)
{
	static const struct sched_stats zero;
	__u32 tgid = prev_tgid;
	__u32 tid, zero_key = 0, *last;
	__u64 now = 0, *start;

	if (is_target(tgid)) {
		now = bpf_ktime_get_ns();
		struct sched_stats *st = bpf_map_lookup_elem(&sched, &tgid);

		if (!st) {
			bpf_map_update_elem(&sched, &tgid, &zero, BPF_NOEXIST);
			st = bpf_map_lookup_elem(&sched, &tgid);
		}
		struct seg_stats *seg = cur_seg();
		/* the scheduler's own rule for nvcsw/nivcsw in __schedule() */
		bool voluntary = !preempt && prev_state;

		if (st) {
			if (voluntary)
				__sync_fetch_and_add(&st->voluntary, 1);
			else
				__sync_fetch_and_add(&st->involuntary, 1);
		} else {
			__sync_fetch_and_add(&misc.sched_dropped, 1);
		}
		if (seg) {
			if (voluntary) {
				__sync_fetch_and_add(&seg->voluntary, 1);
			} else {
				__sync_fetch_and_add(&seg->involuntary, 1);
				if (!is_target(next_tgid))
					__sync_fetch_and_add(&seg->preempted, 1);
			}
		}
		/* perf stops counting a task inside do_exit(): what follows is the tracer's alone */
		if (BPF_CORE_READ(prev, flags) & ZCT_PF_EXITING)
			__sync_fetch_and_add(&misc.switches_exiting, 1);
		tid = BPF_CORE_READ(prev, pid);
		if (bpf_map_update_elem(&offcpu_start, &tid, &now, BPF_ANY))
			__sync_fetch_and_add(&misc.offcpu_dropped, 1);
	}

	tgid = next_tgid;
	if (!is_target(tgid))
		return;
	tid = BPF_CORE_READ(next, pid);
	if (!now)
		now = bpf_ktime_get_ns();
	/*
	 * A handoff: this CPU now runs a target task other than the target that ran on it last.
	 * Unlike switches, a task outside the targets running in between (A -> X -> A, or
	 * A -> X -> B) neither adds nor hides one.
	 */
	last = bpf_map_lookup_elem(&last_target, &zero_key);
	if (last) {
		struct seg_stats *seg = cur_seg();

		if (seg && *last && *last != tid)
			__sync_fetch_and_add(&seg->handoffs, 1);
		*last = tid;
	}
	start = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!start)
		return;
	if (now > *start) {
		struct sched_stats *st = bpf_map_lookup_elem(&sched, &tgid);
		__u64 delta = now - *start;

		if (st) {
			__sync_fetch_and_add(&st->offcpu_ns, delta);
			__sync_fetch_and_add(&st->offcpu_hist[log2_slot(delta / 1000)], 1);
		}
	}
	bpf_map_delete_elem(&offcpu_start, &tid);
}

/* perf counts from the exec (enable_on_exec): note how many switches happened before it. */
static __always_inline void on_exec(struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct sched_stats *st;

	if (!root_tgid || tgid != root_tgid || misc.exec_seen)
		return;
	st = bpf_map_lookup_elem(&sched, &tgid);
	misc.switches_before_exec = st ? st->voluntary + st->involuntary : 0;
	misc.exec_seen = 1;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(exec_btf, struct task_struct *task)
{
	on_exec(task);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(exec_raw, struct task_struct *task)
{
	on_exec(task);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch(preempt, prev, next, prev_state, prev->tgid, next->tgid);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch(preempt, prev, next, prev_state, BPF_CORE_READ(prev, tgid), BPF_CORE_READ(next, tgid));
	return 0;
}

/* ---- syscalls and page faults -------------------------------------------------------------- */

#define ZCT_S_IFMT 0170000
#define ZCT_S_IFREG 0100000
#define ZCT_S_IFIFO 0010000
#define ZCT_S_IFSOCK 0140000

/* FD_* flags of the calling task's descriptor @fd. */
static __always_inline __u8 fd_class(long fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *f = NULL;
	__u32 mode, flags;
	__u8 cls = 0;

	if (fd < 0 || !fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_core_read(&f, sizeof(f), &fds[fd]) || !f)
		return 0;
	mode = BPF_CORE_READ(f, f_inode, i_mode) & ZCT_S_IFMT;
	flags = BPF_CORE_READ(f, f_flags);
	if (mode == ZCT_S_IFREG)
		cls |= FD_REG;
	else if (mode == ZCT_S_IFIFO)
		cls |= FD_PIPE;
	else if (mode == ZCT_S_IFSOCK)
		cls |= FD_SOCK;
	if (flags & o_direct_flag)
		cls |= FD_DIRECT;
	return cls;
}

/* Remembers a file syscall's descriptors until its exit, for the file sites. */
static __always_inline void enter_io(struct pt_regs *regs, __u32 kind)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct io_call call = { .kind = kind };
	long a0 = PT_REGS_PARM1_CORE_SYSCALL(regs);

	switch (kind) {
	case IO_READ:
		call.in = fd_class(a0);
		break;
	case IO_WRITE:
		call.out = fd_class(a0);
		break;
	case IO_SENDFILE:
		call.out = fd_class(a0);
		call.in = fd_class(PT_REGS_PARM2_CORE_SYSCALL(regs));
		break;
	default:	/* splice, copy_file_range: (in, off_in, out, ...) */
		call.in = fd_class(a0);
		call.out = fd_class(PT_REGS_PARM3_CORE_SYSCALL(regs));
		break;
	}
	if (bpf_map_update_elem(&io_calls, &tid, &call, BPF_ANY))
		__sync_fetch_and_add(&misc.io_calls_dropped, 1);
}

static __always_inline void on_syscall(struct pt_regs *regs, long id)
{
	__u32 nr = id, seg = segment, key, tgid = current_tgid();
	__u64 *cnt;

	if (id < 0 || id >= MAX_SYSCALLS || !is_target_memo(tgid))
		return;
	if (nr == execve_nr && tgid == root_tgid && !misc.execve_seen) {
		struct sched_stats *st = bpf_map_lookup_elem(&sched, &tgid);

		misc.switches_at_execve = st ? st->voluntary + st->involuntary : 0;
		misc.execve_seen = 1;
	}
	cnt = bpf_map_lookup_elem(&syscalls, &nr);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	if (seg) {
		struct seg_stats *st = bpf_map_lookup_elem(&seg_stats, &seg);

		if (st)
			__sync_fetch_and_add(&st->syscalls, 1);
		key = seg * MAX_SYSCALLS + nr;
		cnt = bpf_map_lookup_elem(&seg_syscalls, &key);
		if (cnt)
			__sync_fetch_and_add(cnt, 1);
	}
	if (phase_active) {
		cnt = bpf_map_lookup_elem(&phase_syscalls, &nr);
		if (cnt)
			__sync_fetch_and_add(cnt, 1);
	}
	if (track_io && io_kind_of[nr & (MAX_SYSCALLS - 1)])
		enter_io(regs, io_kind_of[nr & (MAX_SYSCALLS - 1)]);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter_btf, struct pt_regs *regs, long id)
{
	on_syscall(regs, id);
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(sys_enter_raw, struct pt_regs *regs, long id)
{
	on_syscall(regs, id);
	return 0;
}

static __always_inline struct io_call *current_io(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	return bpf_map_lookup_elem(&io_calls, &tid);
}

static __always_inline bool kernel_copy_kind(__u32 kind)
{
	return kind == IO_SENDFILE || kind == IO_SPLICE || kind == IO_COPY_RANGE;
}

/*
 * A copy into the page cache seen by one of the write probes: user->page cache inside write(),
 * page cache->page cache inside copy_file_range/sendfile/splice to a file.
 */
static __always_inline void on_write_copy(__u32 method, __u64 bytes)
{
	struct io_call *call = current_io();
	__u32 site;

	if (!call || !bytes || !(call->out & FD_REG))
		return;
	if (call->kind == IO_WRITE)
		site = SITE_FILE_WRITE_COPY;
	else if (kernel_copy_kind(call->kind))
		site = SITE_KERNEL_COPY;
	else
		return;
	call->seen_write += bytes;
	if (site_uses(site, method))
		record(current_tgid(), site, bytes);
}

/*
 * Closes a file syscall. read() on a file copies what it returns (the tracepoint path has no event
 * closer to the copy). A buffered write() whose copies no probe saw (a filesystem without the
 * write_end tracepoint) is counted from its return; bytes a copy_file_range/sendfile/splice put in
 * a file without any copy are the filesystem's clone (reflink) or unseen, and are reported as such.
 */
static __always_inline void exit_io(long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct io_call *call = bpf_map_lookup_elem(&io_calls, &tid);
	__u32 tgid = current_tgid();

	if (!call)
		return;
	if (ret > 0) {
		if (call->kind == IO_READ && (call->in & (FD_REG | FD_DIRECT)) == FD_REG &&
		    site_uses(SITE_FILE_READ_COPY, METHOD_TP_BTF))
			record(tgid, SITE_FILE_READ_COPY, ret);
		if (call->kind == IO_WRITE && (call->out & (FD_REG | FD_DIRECT)) == FD_REG &&
		    !call->seen_write && site_method[SITE_FILE_WRITE_COPY] != METHOD_NONE) {
			record(tgid, SITE_FILE_WRITE_COPY, ret);
			if (counting())
				__sync_fetch_and_add(&misc.write_bytes_by_return, ret);
		}
		if (kernel_copy_kind(call->kind) && (call->out & FD_REG) && !call->seen_write && counting())
			__sync_fetch_and_add(&misc.file_bytes_unseen, ret);
	}
	bpf_map_delete_elem(&io_calls, &tid);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit_btf, struct pt_regs *regs, long ret)
{
	/* only a tracked file syscall has an io_call to close: no lookup for the others */
#if defined(__TARGET_ARCH_x86)
	unsigned long nr = regs->orig_ax;
#elif defined(__TARGET_ARCH_arm64)
	unsigned long nr = regs->syscallno;
#else
	unsigned long nr = MAX_SYSCALLS;	/* unknown here: look every call up */
#endif

	if (!track_io || (nr < MAX_SYSCALLS && !io_kind_of[nr]))
		return 0;
	exit_io(ret);
	return 0;
}

/* ext4 reports every buffered write's copy per folio: len asked, copied done. */
SEC("tp_btf/ext4_da_write_end")
int BPF_PROG(ext4_da_write_end_btf, struct inode *inode, loff_t pos, unsigned int len, unsigned int copied)
{
	on_write_copy(METHOD_TP_BTF, copied);
	return 0;
}

SEC("tp_btf/ext4_write_end")
int BPF_PROG(ext4_write_end_btf, struct inode *inode, loff_t pos, unsigned int len, unsigned int copied)
{
	on_write_copy(METHOD_TP_BTF, copied);
	return 0;
}

SEC("tp_btf/ext4_journalled_write_end")
int BPF_PROG(ext4_journalled_write_end_btf, struct inode *inode, loff_t pos, unsigned int len,
	     unsigned int copied)
{
	on_write_copy(METHOD_TP_BTF, copied);
	return 0;
}

/* A folio entering the page cache on behalf of a target: a page read in (or a new page written). */
SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(filemap_add_btf, struct folio *folio)
{
	struct inode *host = BPF_CORE_READ(folio, mapping, host);
	struct pc_key key = {};
	struct seg_stats *seg;
	__u64 flags = 0, pages = 1, *cnt;

	if (!host || !counting() || !is_target_memo(current_tgid()))
		return 0;
	key.ino = BPF_CORE_READ(host, i_ino);
	key.dev = BPF_CORE_READ(host, i_sb, s_dev);
	/* folio_nr_pages(): one page unless PG_head marks a large folio */
	bpf_core_read(&flags, sizeof(flags), folio);
	if ((flags >> bpf_core_enum_value(enum pageflags, PG_head)) & 1) {
		if (bpf_core_field_exists(folio->_nr_pages))
			pages = BPF_CORE_READ(folio, _nr_pages);
		else
			pages = 1ULL << (BPF_CORE_READ(folio, _flags_1) & 0xff);
	}
	/* a step's pages are its files' own: filesystem metadata read through the block device
	 * (an evicted extent or bitmap block) is not what a "read in" claim is about */
	seg = cur_seg();
	if (seg && (BPF_CORE_READ(host, i_mode) & ZCT_S_IFMT) == ZCT_S_IFREG)
		__sync_fetch_and_add(&seg->pc_pages, pages);
	cnt = bpf_map_lookup_elem(&pc_adds, &key);
	if (cnt) {
		__sync_fetch_and_add(cnt, pages);
	} else {
		/* EEXIST: another CPU made the entry first; add to it */
		if (bpf_map_update_elem(&pc_adds, &key, &pages, BPF_NOEXIST)) {
			cnt = bpf_map_lookup_elem(&pc_adds, &key);
			if (cnt)
				__sync_fetch_and_add(cnt, pages);
			else
				__sync_fetch_and_add(&misc.pc_adds_dropped, 1);
		}
	}
	return 0;
}

static __always_inline void on_fault(bool user)
{
	struct seg_stats *seg;

	if (!is_target_memo(current_tgid()))
		return;
	__sync_fetch_and_add(user ? &misc.page_faults_user : &misc.page_faults_kernel, 1);
	seg = cur_seg();
	if (seg)
		__sync_fetch_and_add(user ? &seg->faults_user : &seg->faults_kernel, 1);
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(fault_user_btf) { on_fault(true); return 0; }

SEC("tp_btf/page_fault_kernel")
int BPF_PROG(fault_kernel_btf) { on_fault(false); return 0; }

SEC("raw_tp/page_fault_user")
int BPF_PROG(fault_user_raw) { on_fault(true); return 0; }

SEC("raw_tp/page_fault_kernel")
int BPF_PROG(fault_kernel_raw) { on_fault(false); return 0; }

/* ---- send side through tracepoints ---------------------------------------------------------- */

static __always_inline void note_sock(const struct sock *sk, __u32 tgid)
{
	__u64 key = (__u64)sk;
	__u32 *known = bpf_map_lookup_elem(&target_socks, &key);

	/* an LRU update on every send call costs more than the lookup that mostly finds it */
	if (!known || *known != tgid)
		bpf_map_update_elem(&target_socks, &key, &tgid, BPF_ANY);
}

/* The same decision tcp_sendmsg_locked() takes before its loop. */
static __always_inline __u32 send_mode(const struct sock *sk, const struct msghdr *msg)
{
	__u32 flags = BPF_CORE_READ(msg, msg_flags);
	__u64 route_sg = BPF_CORE_READ(sk, sk_route_caps) & 1;	/* NETIF_F_SG is bit 0 */

	if (flags & ZCT_MSG_ZEROCOPY) {
		unsigned long sk_flags = BPF_CORE_READ(sk, __sk_common.skc_flags);
		bool has_ubuf = false;

		if (bpf_core_field_exists(msg->msg_ubuf))
			has_ubuf = BPF_CORE_READ(msg, msg_ubuf) != NULL;
		if ((has_ubuf || (sk_flags >> bpf_core_enum_value(enum sock_flags, SOCK_ZEROCOPY)) & 1)
		    && route_sg)
			return SEND_MODE_ZEROCOPY;
		return SEND_MODE_COPY;
	}
	if ((flags & ZCT_MSG_SPLICE_PAGES) && route_sg)
		return SEND_MODE_SPLICE;
	return SEND_MODE_COPY;
}

static __always_inline __u32 mode_site(__u32 mode)
{
	if (mode == SEND_MODE_ZEROCOPY)
		return SITE_ZC_PIN;
	if (mode == SEND_MODE_SPLICE)
		return SITE_SPLICE_REF;
	return SITE_SEND_COPY;
}

static __always_inline void record_send_chunk(__u32 tgid, __u32 mode, __u64 bytes)
{
	__u32 site = mode_site(mode);

	if (bytes && site_uses(site, METHOD_TP_BTF))
		record(tgid, site, bytes);
}

/*
 * Fires at the head of every loop iteration of tcp_sendmsg_locked(); each iteration moves one
 * chunk (one copy, one pin or one set of page references), seen as the drop of msg_data_left().
 */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tcp_sendmsg_locked_btf, const struct sock *sk, const struct msghdr *msg,
	     const struct sk_buff *skb, int size_goal)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct send_call *call;
	__u64 left;

	if (!is_target_memo(tgid))
		return 0;
	left = msg->msg_iter.count;
	call = bpf_map_lookup_elem(&send_calls, &tid);
	if (!call || call->sk != (__u64)sk || call->msg != (__u64)msg) {
		struct send_call fresh = {
			.sk = (__u64)sk,
			.msg = (__u64)msg,
			.start_left = left,
			.last_left = left,
			.mode = send_mode(sk, msg),
		};

		if (fresh.mode == SEND_MODE_ZEROCOPY)
			fresh.zc_id = BPF_CORE_READ(sk, sk_zckey.counter) - 1;
		/* the thread's slot is reused in place: only this thread writes it */
		if (call)
			*call = fresh;
		else if (bpf_map_update_elem(&send_calls, &tid, &fresh, BPF_ANY))
			__sync_fetch_and_add(&misc.send_calls_dropped, 1);
		note_sock(sk, tgid);
		return 0;
	}
	if (left < call->last_left) {
		record_send_chunk(tgid, call->mode, call->last_left - left);
		call->last_left = left;
	}
	return 0;
}

/* Closes a send call: its last chunk is what it returned minus what earlier iterations moved. */
SEC("tp_btf/sock_send_length")
int BPF_PROG(sock_send_length_btf, struct sock *sk, int ret, int flags)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct send_call *call;

	if (!is_target_memo(tgid))
		return 0;
	call = bpf_map_lookup_elem(&send_calls, &tid);
	if (!call)
		return 0;
	if (call->sk == (__u64)sk && ret > 0) {
		__u64 earlier = call->start_left - call->last_left;

		if ((__u64)ret > earlier)
			record_send_chunk(tgid, call->mode, ret - earlier);
		if (call->mode == SEND_MODE_ZEROCOPY) {
			struct zc_key key = { .sk = call->sk, .id = call->zc_id };
			__u64 bytes = ret;

			if (bpf_map_update_elem(&zc_calls, &key, &bytes, BPF_ANY))
				__sync_fetch_and_add(&misc.zc_calls_dropped, 1);
		}
	}
	/* closed, not deleted: the thread's next call reuses the slot (a delete and an insert cost more) */
	call->sk = 0;
	return 0;
}

/* ---- zerocopy completion notices and receive copies ---------------------------------------- */

struct zc_walk {
	__u64 sk;
	__u32 lo;
	__u32 tgid;
	__u32 copied;
	__u32 pad;
	__u64 calls;
	__u64 unmatched;
	__u64 bytes;
};

static long zc_walk_one(__u32 i, struct zc_walk *w)
{
	struct zc_key key = { .sk = w->sk, .id = w->lo + i };
	__u64 *bytes = bpf_map_lookup_elem(&zc_calls, &key);

	if (!bytes) {
		w->unmatched++;
		return 0;
	}
	w->calls++;
	if (w->copied) {
		w->bytes += *bytes;
		if (site_uses(SITE_DEFERRED_COPY, METHOD_TP_BTF))
			record(w->tgid, SITE_DEFERRED_COPY, *bytes);
	}
	bpf_map_delete_elem(&zc_calls, &key);
	return 0;
}

/* A zerocopy notice read from the error queue names the send calls lo..hi it completes. */
static __always_inline void on_zc_notice(const struct sk_buff *skb, __u32 tgid)
{
	struct sock_exterr_skb *serr = (void *)skb + bpf_core_field_offset(struct sk_buff, cb);
	struct zc_walk walk = { .tgid = tgid };
	__u8 origin = BPF_CORE_READ(serr, ee.ee_origin);
	__u32 hi, n;

	if (origin != ZCT_EE_ORIGIN_ZEROCOPY)
		return;
	walk.sk = (__u64)BPF_CORE_READ(skb, sk);
	walk.lo = BPF_CORE_READ(serr, ee.ee_info);
	hi = BPF_CORE_READ(serr, ee.ee_data);
	walk.copied = BPF_CORE_READ(serr, ee.ee_code) & ZCT_EE_CODE_ZEROCOPY_COPIED;
	n = hi - walk.lo + 1;
	if (n > MAX_ZC_CALLS)
		n = MAX_ZC_CALLS;
	bpf_loop(n, zc_walk_one, &walk, 0);

	if (!counting())
		return;
	__sync_fetch_and_add(&misc.zc_notices, 1);
	if (walk.copied)
		__sync_fetch_and_add(&misc.zc_notices_copied, 1);
	__sync_fetch_and_add(&misc.zc_calls_completed, walk.calls);
	__sync_fetch_and_add(&misc.zc_calls_unmatched, walk.unmatched);
	__sync_fetch_and_add(&misc.zc_bytes_copied_notice, walk.bytes);
}

static __always_inline bool tcp_skb(const struct sk_buff *skb)
{
	struct sock *sk = BPF_CORE_READ(skb, sk);

	return sk && BPF_CORE_READ(sk, sk_protocol) == ZCT_IPPROTO_TCP;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(skb_copy_datagram_iovec_btf, const struct sk_buff *skb, int len)
{
	__u32 tgid = current_tgid();
	struct sock *sk;

	if (!is_target_memo(tgid))
		return 0;
	if (len == 0) {
		on_zc_notice(skb, tgid);
		return 0;
	}
	/* tp_btf reads the skb and its socket directly, with no probe read */
	sk = skb->sk;
	if (len > 0 && site_uses(SITE_RECV_COPY, METHOD_TP_BTF) && sk && sk->sk_protocol == ZCT_IPPROTO_TCP)
		record(tgid, SITE_RECV_COPY, len);
	return 0;
}

/* ---- fentry/fexit and kprobe flavours, for kernels that allow them --------------------------- */

/*
 * A send call seen at its entry and its return: what it returned is what it moved, and the mode the
 * kernel chose before its loop says how (the same choice the tracepoint path reads). Copied bytes
 * go to send_copy; a MSG_ZEROCOPY call is kept for its completion notice; pins and page references
 * are counted where the kernel makes them (skb_zerocopy_iter_stream, skb_splice_from_iter).
 */
static __always_inline void enter_send(struct sock *sk, struct msghdr *msg)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct send_call *call;

	if (!is_target_memo(tgid))
		return;
	call = bpf_map_lookup_elem(&send_calls, &tid);
	if (call) {
		call->sk = (__u64)sk;
		call->msg = (__u64)msg;
	} else {
		struct send_call fresh = { .sk = (__u64)sk, .msg = (__u64)msg };

		if (bpf_map_update_elem(&send_calls, &tid, &fresh, BPF_ANY))
			__sync_fetch_and_add(&misc.in_sendmsg_dropped, 1);
	}
	note_sock(sk, tgid);
}

static __always_inline void leave_send(__u32 method, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct send_call *call;
	struct sock *sk;
	struct msghdr *msg;
	__u32 mode;

	if (!is_target_memo(tgid))
		return;
	call = bpf_map_lookup_elem(&send_calls, &tid);
	if (!call || !call->sk)
		return;
	sk = (struct sock *)call->sk;
	msg = (struct msghdr *)call->msg;
	/* closed, not deleted: the thread's next call reuses the slot */
	call->sk = 0;
	if (ret <= 0)
		return;
	mode = send_mode(sk, msg);
	if (mode == SEND_MODE_COPY && site_uses(SITE_SEND_COPY, method))
		record(tgid, SITE_SEND_COPY, ret);
	if (mode == SEND_MODE_ZEROCOPY) {
		/* the socket's next notification id, less one: this call's (it runs under the socket lock) */
		struct zc_key key = { .sk = (__u64)sk, .id = BPF_CORE_READ(sk, sk_zckey.counter) - 1 };
		__u64 bytes = ret;

		if (bpf_map_update_elem(&zc_calls, &key, &bytes, BPF_ANY))
			__sync_fetch_and_add(&misc.zc_calls_dropped, 1);
	}
}

SEC("fentry/tcp_sendmsg_locked")
int BPF_PROG(tcp_sendmsg_locked_fentry, struct sock *sk, struct msghdr *msg)
{
	enter_send(sk, msg);
	return 0;
}

SEC("fexit/tcp_sendmsg_locked")
int BPF_PROG(tcp_sendmsg_locked_fexit, struct sock *sk, struct msghdr *msg, size_t size, int ret)
{
	leave_send(METHOD_FENTRY, ret);
	return 0;
}

SEC("kprobe/tcp_sendmsg_locked")
int BPF_KPROBE(tcp_sendmsg_locked_kprobe, struct sock *sk, struct msghdr *msg)
{
	enter_send(sk, msg);
	return 0;
}

SEC("kretprobe/tcp_sendmsg_locked")
int BPF_KRETPROBE(tcp_sendmsg_locked_kretprobe, int ret)
{
	leave_send(METHOD_KPROBE, ret);
	return 0;
}

static __always_inline void on_returned_bytes(__u32 site, long ret)
{
	__u32 tgid = current_tgid();

	if (ret > 0 && is_target(tgid))
		record(tgid, site, ret);
}

SEC("fexit/skb_zerocopy_iter_stream")
int BPF_PROG(skb_zerocopy_iter_stream_fexit)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	on_returned_bytes(SITE_ZC_PIN, (int)ret);
	return 0;
}

SEC("kretprobe/skb_zerocopy_iter_stream")
int BPF_KRETPROBE(skb_zerocopy_iter_stream_kretprobe, int ret)
{
	on_returned_bytes(SITE_ZC_PIN, ret);
	return 0;
}

SEC("fexit/skb_splice_from_iter")
int BPF_PROG(skb_splice_from_iter_fexit)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	on_returned_bytes(SITE_SPLICE_REF, (long)ret);
	return 0;
}

SEC("kretprobe/skb_splice_from_iter")
int BPF_KRETPROBE(skb_splice_from_iter_kretprobe, long ret)
{
	on_returned_bytes(SITE_SPLICE_REF, ret);
	return 0;
}

/* Before 6.5, sendfile and splice reach TCP through do_tcp_sendpages(): page references, no copy. */
SEC("fexit/do_tcp_sendpages")
int BPF_PROG(do_tcp_sendpages_fexit)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	on_returned_bytes(SITE_SPLICE_REF, (long)ret);
	return 0;
}

SEC("kretprobe/do_tcp_sendpages")
int BPF_KRETPROBE(do_tcp_sendpages_kretprobe, long ret)
{
	on_returned_bytes(SITE_SPLICE_REF, ret);
	return 0;
}

/*
 * skb_copy_ubufs() copies the pinned frags of a zerocopy skb into kernel pages. It runs on the
 * delivery path, often in softirq, so the owner is found through the notification skb that
 * holds the ubuf_info in its cb, and that skb's socket.
 */
static __always_inline void on_copy_ubufs(struct sk_buff *skb)
{
	struct skb_shared_info *shinfo;
	void *uarg, *notify_skb;
	__u64 sk;
	__u32 *tgid;

	shinfo = (void *)(BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, end));
	uarg = BPF_CORE_READ(shinfo, destructor_arg);
	if (!uarg)
		return;
	notify_skb = uarg - bpf_core_field_offset(struct sk_buff, cb);
	sk = (__u64)BPF_CORE_READ((struct sk_buff *)notify_skb, sk);
	tgid = bpf_map_lookup_elem(&target_socks, &sk);
	if (tgid)
		record(*tgid, SITE_DEFERRED_COPY, BPF_CORE_READ(skb, data_len));
}

SEC("fentry/skb_copy_ubufs")
int BPF_PROG(skb_copy_ubufs_fentry, struct sk_buff *skb)
{
	on_copy_ubufs(skb);
	return 0;
}

SEC("kprobe/skb_copy_ubufs")
int BPF_KPROBE(skb_copy_ubufs_kprobe, struct sk_buff *skb)
{
	on_copy_ubufs(skb);
	return 0;
}

/*
 * The path of a zerocopy skb. Delivery runs in softirq, often on another task, so the sender is
 * found as skb_copy_ubufs() finds it: through the notification skb holding the ubuf_info.
 */
static __always_inline void on_zc_path(const struct sk_buff *skb, const struct net_device *dev,
				       __u32 stage)
{
	static const struct zc_path_stats zero;
	struct skb_shared_info *shinfo;
	struct zc_path_stats *st;
	struct zc_path_key key = { .stage = stage };
	void *uarg, *notify_skb;
	__u64 sk;
	__u32 *tgid;
	__u8 flags;

	if (!counting() || !dev)
		return;
	/*
	 * Every skb of the machine passes here: the skb is read directly (tp_btf), the shared info
	 * behind it with one probe read. The SKBFL_* enum is anonymous, so CO-RE cannot relocate
	 * it; its values have not moved.
	 */
	shinfo = (void *)(skb->head + skb->end);
	if (bpf_core_read(&flags, sizeof(flags), &shinfo->flags) || !(flags & SKBFL_ZEROCOPY_ENABLE))
		return;
	uarg = BPF_CORE_READ(shinfo, destructor_arg);
	if (!uarg)
		return;
	notify_skb = uarg - bpf_core_field_offset(struct sk_buff, cb);
	sk = (__u64)BPF_CORE_READ((struct sk_buff *)notify_skb, sk);
	tgid = bpf_map_lookup_elem(&target_socks, &sk);
	if (!tgid)
		return;
	key.tgid = *tgid;
	key.netns = BPF_CORE_READ(dev, nd_net.net, ns.inum);
	key.ifindex = BPF_CORE_READ(dev, ifindex);
	st = bpf_map_lookup_elem(&zc_path, &key);
	if (!st) {
		bpf_map_update_elem(&zc_path, &key, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&zc_path, &key);
		if (!st) {
			__sync_fetch_and_add(&misc.zc_path_dropped, 1);
			return;
		}
		bpf_probe_read_kernel_str(st->dev, sizeof(st->dev), dev->name);
	}
	__sync_fetch_and_add(&st->skbs, 1);
	__sync_fetch_and_add(&st->bytes, BPF_CORE_READ(skb, data_len));
	if (flags & SKBFL_DONT_ORPHAN)
		__sync_fetch_and_add(&st->dont_orphan, 1);
}

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(net_dev_start_xmit_btf, const struct sk_buff *skb, const struct net_device *dev)
{
	on_zc_path(skb, dev, ZC_STAGE_XMIT);
	return 0;
}

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(netif_receive_skb_btf, struct sk_buff *skb)
{
	on_zc_path(skb, skb->dev, ZC_STAGE_RECEIVE);
	return 0;
}

static __always_inline void on_datagram_copy(const struct sk_buff *skb, int len)
{
	__u32 tgid = current_tgid();

	if (len > 0 && is_target(tgid) && tcp_skb(skb))
		record(tgid, SITE_RECV_COPY, len);
}

SEC("fexit/skb_copy_datagram_iter")
int BPF_PROG(skb_copy_datagram_iter_fexit, const struct sk_buff *skb, int offset, void *to,
	     int len)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	if ((int)ret == 0)
		on_datagram_copy(skb, len);
	return 0;
}

SEC("kprobe/skb_copy_datagram_iter")
int BPF_KPROBE(skb_copy_datagram_iter_kprobe, const struct sk_buff *skb, int offset, void *to,
	       int len)
{
	on_datagram_copy(skb, len);
	return 0;
}

/*
 * File sites: the return of the page-cache copy loops, by fexit or kretprobe. (The per-folio copy
 * helpers are in lib/, where Debian's kernels refuse kprobes.)
 */
static __always_inline void on_file_read(__u32 method, long ret)
{
	struct io_call *call = current_io();

	if (ret > 0 && call && call->kind == IO_READ && (call->in & FD_REG) &&
	    site_uses(SITE_FILE_READ_COPY, method))
		record(current_tgid(), SITE_FILE_READ_COPY, ret);
}

SEC("fexit/filemap_read")
int BPF_PROG(filemap_read_fexit)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	on_file_read(METHOD_FENTRY, (long)ret);
	return 0;
}

SEC("kretprobe/filemap_read")
int BPF_KRETPROBE(filemap_read_kretprobe, long ret)
{
	on_file_read(METHOD_KPROBE, ret);
	return 0;
}

SEC("fexit/generic_perform_write")
int BPF_PROG(generic_perform_write_fexit)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	if ((long)ret > 0)
		on_write_copy(METHOD_FENTRY, ret);
	return 0;
}

SEC("kretprobe/generic_perform_write")
int BPF_KRETPROBE(generic_perform_write_kretprobe, long ret)
{
	if (ret > 0)
		on_write_copy(METHOD_KPROBE, ret);
	return 0;
}

/* ---- USDT: the workloads' own copies and their measured phase -------------------------------- */

SEC("usdt")
int BPF_USDT(user_copy_usdt, __u64 bytes, __u64 ncopies)
{
	__u32 tgid = current_tgid();

	if (is_target(tgid))
		record_n(tgid, SITE_USER_COPY, bytes, ncopies);
	return 0;
}

SEC("usdt")
int BPF_USDT(phase_begin_usdt)
{
	if (is_target(current_tgid())) {
		phase_active = 1;
		__sync_fetch_and_add(&misc.phase_begins, 1);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(phase_end_usdt)
{
	if (is_target(current_tgid())) {
		phase_active = 0;
		__sync_fetch_and_add(&misc.phase_ends, 1);
	}
	return 0;
}

/* A microbenchmark's numbered step begins (id > 0) or ends (0). */
SEC("usdt")
int BPF_USDT(segment_usdt, __u32 id)
{
	if (is_target(current_tgid())) {
		segment = id < MAX_SEGMENTS ? id : 0;
		__sync_fetch_and_add(&misc.segment_marks, 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
