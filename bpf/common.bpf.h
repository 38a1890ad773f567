/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every part of zctrace's BPF object shares: the settings user space writes before load, the
 * maps more than one site reads or writes, the target filter, and the per-site counters with their
 * log2 histograms.
 */
#ifndef ZCTRACE_COMMON_BPF_H
#define ZCTRACE_COMMON_BPF_H
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "zctrace.h"

#define ZCT_PF_EXITING 0x00000004	/* include/linux/sched.h: set at the start of do_exit() */

/*
 * What the kernel's BPF offers. Linux 5.11 gave tracing programs task storage and the running task
 * as a typed pointer, 5.15 a task's user registers, 5.17 bpf_loop() and fexit's return value by
 * helper. The compat object (below) asks the kernel's BTF at load (CO-RE: the verifier drops the
 * branch not taken); below 5.11 a thread's state lives in an LRU hash keyed by its id (user space
 * makes each task-storage map one: tracer.c), and the running task is an untyped pointer read
 * with BPF_CORE_READ.
 */
#ifdef ZCT_COMPAT
#define HAVE_TASK_STORAGE bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_storage_get)
#define HAVE_TASK_BTF bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf)
#define HAVE_TASK_PT_REGS bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)
#else
/* the main object loads from 5.17 on only (user/tracer.c), where all of them are */
#define HAVE_TASK_STORAGE 1
#define HAVE_TASK_BTF 1
#define HAVE_TASK_PT_REGS 1
#endif

/*
 * The compat object (ZCT_COMPAT: the same source, built for kernels before bpf_loop(), 5.17)
 * leaves out what such a verifier refuses even on a branch it would drop: bpf_loop()'s callbacks
 * (5.13), atomics that return a value (5.12). Its loops are bounded ones, of at most @max turns.
 */
#ifdef ZCT_COMPAT
#define ZCT_LOOP(nr, max, fn, ctx)						\
	do {									\
		__u32 loop_nr = (nr);						\
									\
		for (__u32 loop_i = 0; loop_i < (max) && loop_i < loop_nr; loop_i++) \
			fn(loop_i, ctx);					\
	} while (0)
#define ZCT_TURNS(max) ((max) < 64 ? (max) : 64)	/* what such a verifier follows in one program */
/* a function checked alone (global) takes no pointer argument before 5.12: checked in place */
#define ZCT_GLOBAL static __always_inline
#else
#define ZCT_LOOP(nr, max, fn, ctx) bpf_loop((nr) < (max) ? (nr) : (max), fn, ctx, 0)
#define ZCT_TURNS(max) (max)
#define ZCT_GLOBAL __noinline
#endif

/* The running thread. */
static __always_inline struct task_struct *current_task(void)
{
	if (HAVE_TASK_BTF)
		return bpf_get_current_task_btf();
	return (struct task_struct *)bpf_get_current_task();
}

/* Field @field of a task current_task() gave (typed: a load; untyped: a read). */
#define TASK_READ(task, field) (HAVE_TASK_BTF ? (task)->field : BPF_CORE_READ(task, field))

/* Zeros: a thread's first state where the state lives in a hash (the largest is the census's). */
__u8 task_state_zeroes[sizeof(struct census_thread)] = {};

static __always_inline void *task_state_in_hash(void *map, __u32 tid, __u64 flags)
{
	void *v = bpf_map_lookup_elem(map, &tid);

	if (v || !(flags & BPF_LOCAL_STORAGE_GET_F_CREATE))
		return v;
	bpf_map_update_elem(map, &tid, task_state_zeroes, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, &tid);
}

/*
 * Thread @task's state in task-storage map @map, made if @flags say so (BPF_LOCAL_STORAGE_GET_F_CREATE),
 * or NULL: in the task itself, or in the hash keyed by its id that stands for the map below 5.11.
 */
#define TASK_STATE(map, task, flags)									\
	({												\
		_Static_assert(sizeof(*(map).value) <= sizeof(task_state_zeroes), "task_state_zeroes"); \
		(__typeof__((map).value))(HAVE_TASK_STORAGE ?						\
			bpf_task_storage_get(&(map), task, 0, flags) :					\
			task_state_in_hash(&(map), TASK_READ(task, pid), flags));			\
	})

/* Drops thread @tid's state where it lives in a hash (below 5.11): the task's own goes with it. */
#define TASK_STATE_GONE(map, tid)									\
	do {												\
		__u32 gone_tid = (tid);									\
													\
		if (!HAVE_TASK_STORAGE)									\
			bpf_map_delete_elem(&(map), &gone_tid);						\
	} while (0)

/*
 * Thread @task's user registers, as it entered the kernel (typed from 5.15; before, where the
 * kernel keeps them, at the top of its stack: read them with SYSCALL_ARG(HAVE_TASK_PT_REGS, ...)).
 */
static __always_inline struct pt_regs *task_user_regs(struct task_struct *task)
{
	if (HAVE_TASK_PT_REGS)
		return (struct pt_regs *)bpf_task_pt_regs(task);
#if defined(__TARGET_ARCH_x86) || defined(__TARGET_ARCH_arm64)
	/* task_pt_regs(): x86-64 and arm64 keep no padding above them, with 16 KiB stacks */
	return (struct pt_regs *)((__u64)BPF_CORE_READ(task, stack) + 16384) - 1;
#else
	return NULL;
#endif
}

/* Set before load. */
const volatile __u32 site_method[NR_SITES] = {};
const volatile __u8 gate_on_phase = 0;	/* count sites only between the USDT phase markers */
const volatile __u8 track_io = 0;	/* follow file syscalls for the file sites */
const volatile __u8 io_kind_of[MAX_SYSCALLS] = {};	/* enum io_kind by syscall number */
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
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MAX_TARGETS * NR_SITES);
	__type(key, struct site_key);
	__type(value, struct site_stats);
} sites SEC(".maps");

/*
 * A run's counters, first per CPU: each site's slot on a CPU belongs to the first target that
 * counts there, and adds to it need no hash lookup and touch no line another CPU writes. Another
 * target on that CPU, and every process of the census, count in sites. User space adds the two.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NR_SITES);
	__type(key, __u32);
	__type(value, struct hot_site);
} hot_sites SEC(".maps");

/*
 * Who each process is: the census's, noted when its first key is made; a run's, noted as a target
 * forks, execs and exits, so that one gone by the end keeps its name (user space sizes it).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);		/* the census sizes it */
	__type(key, __u32);	/* tgid */
	__type(value, struct proc_ident);
} idents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SEGMENTS);
	__type(key, __u32);
	__type(value, struct seg_stats);
} seg_stats SEC(".maps");

/* Each CPU's state (zctrace.h's struct cpu_state): the next event on the CPU looks it up once. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} cpu_states SEC(".maps");

static __always_inline struct cpu_state *cpu_state(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_states, &zero);
}

/* One in-flight send call per thread, from entry to return (freed with the thread). */
struct send_call {
	__u64 sk;
	__u64 msg;
	__u64 start_left;	/* msg_data_left() at the first loop iteration */
	__u64 last_left;	/* ... at the latest iteration */
	__u32 mode;		/* enum send_mode */
	__u32 zc_id;		/* MSG_ZEROCOPY notification id of this call */
	__u64 ubuf;		/* the caller's ubuf_info (io_uring SEND_ZC's notification), 0 if none */
	__u64 kp_sk;		/* kprobe path: the call's socket from entry to return, 0 between calls */
	__u64 kp_msg;		/* ... and its message */
};

/*
 * Each thread's send call, in the thread itself: no hash lookup per event, and freed with the
 * thread.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct send_call);
} send_call_task SEC(".maps");

struct zc_key {
	__u64 sk;
	__u32 id;
	__u32 pad;
};

/* MSG_ZEROCOPY sends waiting for their completion notice: bytes pinned by each. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MAX_ZC_CALLS);
	__type(key, struct zc_key);
	__type(value, __u64);
} zc_calls SEC(".maps");

/*
 * Who pinned the pages behind a ubuf_info (struct zc_owner), for the copies and the path that come
 * later in softirq, on another task: MSG_ZEROCOPY's ubuf_info sits in a notification skb, io_uring
 * SEND_ZC's in its notification request, so neither is found through the other's layout. Noted
 * where the pin is seen (the send call, skb_zerocopy_iter_stream, the skb's xmit); an io_uring
 * entry is freed with its notification. LRU: MSG_ZEROCOPY's ubuf_infos end with no event here.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);	/* struct ubuf_info * */
	__type(value, struct zc_owner);
} zc_owners SEC(".maps");

/* Set once a target makes a zerocopy send: until then no skb can be one of theirs. */
__u32 zc_sends_seen = 0;
/* Set once a target splices pages into a TCP socket (sendfile, splice): tx_copy looks for them. */
__u32 splice_sends_seen = 0;

/*
 * One I/O syscall in flight per thread (file.bpf.c follows it from entry to exit): what its
 * descriptors are and what the sites saw during it.
 */
struct io_call {
	__u32 kind;		/* enum io_kind */
	__u8 in;		/* FD_* of the source descriptor */
	__u8 out;		/* FD_* of the destination descriptor */
	__u8 type;		/* enum fd_type of the descriptor whose bytes cross to or from user memory */
	__u8 pad;
	__u32 nr;		/* syscall number */
	__u32 flags;		/* a send's or receive's flags (MSG_ZEROCOPY, MSG_TRUNC) */
	__u64 vec;		/* sendmmsg/recvmmsg: the user's mmsghdr array */
	__u64 seen_write;	/* bytes the write-copy probes saw during the call */
	__u64 pinned;		/* bytes of user pages a UDP send pinned during the call */
	__u64 sk;		/* a UDP MSG_ZEROCOPY send's socket ... */
	__u32 zc_id;		/* ... and its next notification id when the call began */
	__u32 pad2;
};

/*
 * In the thread itself (task storage): no hash update, allocation or delete per call, and freed
 * with the thread. A call's exit empties it (kind IO_NONE) for the next.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct io_call);
} io_calls SEC(".maps");

/*
 * Where the socket returns a socket call's length (socket_lengths), the socket's type is noted
 * there (file.bpf.c's type_at_length()) for the call's exit, which then reads no descriptor, file
 * or socket. A call that may end so, a read or write (and their vector forms: on any descriptor,
 * which a file's first event or the exit classifies, file.bpf.c's rw_call()), a sendto or sendmsg
 * (not a zerocopy one), a recvfrom or recvmsg, opens this CPU's slot at its entry, and its exit
 * clears it. A switch on the CPU (sched.bpf.c) keeps the slot of the thread
 * that leaves in that thread (the task storage its off-CPU time is in: no other lookup) and puts
 * back the one the thread that comes in had kept, or 0: a call that waits for data, or sleeps
 * anywhere before its exit, still finds its slot. So, while these programs are attached together
 * (sched_switch is attached before and detached with the others), a slot that is not 0 is the
 * running thread's, inside the call that opened it; task work after the exit (an io_uring
 * request's) finds none, and the exits that find none read the descriptor. One word, written whole.
 */
#define SOCK_SLOT(tid, nr, kind) ((__u64)(tid) << 32 | (__u64)((nr) & 0xffff) << 16 | (__u64)(kind) << 8)
#define SOCK_SLOT_TID(w) ((__u32)((w) >> 32))
#define SOCK_SLOT_NR(w) ((__u32)((w) >> 16) & 0xffff)
#define SOCK_SLOT_KIND(w) ((__u8)((w) >> 8))
#define SOCK_SLOT_TYPE(w) ((__u8)(w))	/* enum fd_type + 1; 0: not yet returned */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);	/* SOCK_SLOT() */
} sock_call_slots SEC(".maps");

/* user space: sock_send_length and sock_recv_length note the socket calls, sched_switch attached */
const volatile __u8 socket_lengths = 0;

static __always_inline __u64 *sock_call_slot(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&sock_call_slots, &zero);
}

/*
 * How many times @task has been switched out: __schedule() counts a switch before its tracepoint,
 * and nothing counts while the task is off the CPU.
 */
static __always_inline __u64 task_switches(struct task_struct *task)
{
	return TASK_READ(task, nvcsw) + TASK_READ(task, nivcsw);
}

/* Thread @tid enters socket call @nr (@kind): this CPU's slot is its. */
static __always_inline void open_sock_call(__u32 tid, __u32 nr, __u8 kind)
{
	__u64 *slot = sock_call_slot();

	if (slot)
		*slot = SOCK_SLOT(tid, nr, kind);
}

/*
 * Socket call @nr returns: the type of the socket that returned its length (enum fd_type + 1),
 * file.bpf.c's RW_FILE_MARK where a file event kept a read's or write's call, or 0 where neither
 * happened while its thread stayed on the CPU. The slot is cleared.
 */
static __always_inline __u8 sock_call_type(__u32 nr)
{
	__u64 *slot, w;

	if (!socket_lengths)
		return 0;	/* before the lookup: on 6.1 every lookup is a helper call */
	slot = sock_call_slot();
	if (!slot)
		return 0;
	w = *slot;
	*slot = 0;
	return SOCK_SLOT_NR(w) == (nr & 0xffff) ? SOCK_SLOT_TYPE(w) : 0;
}

/* Sockets the targets sent on: deferred copies happen in softirq context, found by socket. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u32);	/* tgid */
} target_socks SEC(".maps");

/*
 * A field of kernel object @p: a plain load where the verifier types the pointer (tp_btf, fentry:
 * @btf, a constant, so that each flavour keeps only its own branch), else a probe read (raw_tp,
 * kprobe, and pointers the programs keep as numbers).
 */
#define READ_FIELD(btf, p, field) ((btf) ? (p)->field : BPF_CORE_READ(p, field))

/*
 * Syscall argument @n from the syscall's registers: a plain load where the verifier types them
 * (tp_btf, @btf, a constant: each flavour keeps only its own branch), else a read.
 */
#define SYSCALL_ARG(btf, regs, n) \
	((btf) ? PT_REGS_PARM##n##_SYSCALL(regs) : PT_REGS_PARM##n##_CORE_SYSCALL(regs))

#if defined(__TARGET_ARCH_x86)
#define SYSCALL_NR(btf, regs) READ_FIELD(btf, regs, orig_ax)
#elif defined(__TARGET_ARCH_arm64)
#define SYSCALL_NR(btf, regs) READ_FIELD(btf, regs, syscallno)
#else
#define SYSCALL_NR(btf, regs) MAX_SYSCALLS	/* unknown here: look every call up */
#endif

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
	if (trace_all)
		return tgid && tgid != self_tgid;
	/* the idle tasks (tgid 0) are no one's: no lookup for the switches to and from them */
	return tgid && bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/* is_target() through the memo of this CPU's state @cs: the filter every hot program runs first. */
static __always_inline bool is_target_at(struct cpu_state *cs, __u32 tgid)
{
	__u32 gen = (targets_gen & 0x7fffffff) << 1;
	__u64 *memo = cs ? &cs->memo : NULL, m;
	bool verdict;

	if (trace_all)
		return tgid && tgid != self_tgid;
	if (!tgid)
		return false;	/* the idle tasks: no lookup, and the memo keeps the verdict it has */
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

/* The same, looking the CPU's state up. */
static __always_inline bool is_target_memo(__u32 tgid)
{
	/* the census's filter needs no state: no lookup */
	return trace_all ? is_target(tgid) : is_target_at(cpu_state(), tgid);
}

/* Thread @task's I/O syscall in flight, or NULL. */
static __always_inline struct io_call *task_io(struct task_struct *task)
{
	struct io_call *call = TASK_STATE(io_calls, task, 0);

	return call && call->kind != IO_NONE ? call : NULL;
}

/* The running thread's. */
static __always_inline struct io_call *current_io(void)
{
	return task_io(current_task());
}

/* A target sends with zerocopy: the per-packet zerocopy programs have work from now on. */
static __always_inline void saw_zc_send(void)
{
	if (!zc_sends_seen)
		zc_sends_seen = 1;
}

/*
 * @sk is @tgid's: its zerocopy skbs' owner is found by it where they leave (net_dev_start_xmit),
 * and so is its spliced skbs' where a device without scatter-gather has them copied (tx_copy).
 */
static __always_inline void note_sock(const struct sock *sk, __u32 tgid)
{
	__u64 key = (__u64)sk;
	__u32 *known = bpf_map_lookup_elem(&target_socks, &key);

	/* an LRU update on every send call costs more than the lookup that mostly finds it */
	if (!known || *known != tgid)
		bpf_map_update_elem(&target_socks, &key, &tgid, BPF_ANY);
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

/*
 * The census notes who a process is when it makes its first key, if it is the one running (not a
 * softirq's), and again as it exits (@flags BPF_EXIST): what a short process last called itself.
 */
static __always_inline void note_ident(__u32 tgid, __u64 flags)
{
	struct proc_ident id = {};
	struct task_struct *task;

	if (!trace_all || current_tgid() != tgid)
		return;
	task = current_task();
	BPF_CORE_READ_STR_INTO(&id.comm, task, group_leader, comm);
	id.cgroup = bpf_get_current_cgroup_id();
	bpf_map_update_elem(&idents, &tgid, &id, flags);
}

/* A run's target process @tgid, as thread @task of it shows it now: its name and network namespace. */
static __always_inline void note_target_ident(struct task_struct *task, __u32 tgid)
{
	struct proc_ident id = {};

	if (trace_all)
		return;
	BPF_CORE_READ_STR_INTO(&id.comm, task, group_leader, comm);
	id.netns = BPF_CORE_READ(task, nsproxy, net_ns, ns.inum);
	if (!id.netns) {
		/* an exiting task may have let its namespaces go: it keeps the one noted before */
		struct proc_ident *was = bpf_map_lookup_elem(&idents, &tgid);

		if (was)
			id.netns = was->netns;
	}
	bpf_map_update_elem(&idents, &tgid, &id, BPF_ANY);
}

#include "census.bpf.h"

/*
 * Whether a CPU's slot whose owner word is *@owner is @word's: already, or claimed now while free
 * (0). A compare-and-swap, since a program on the same CPU may claim it in between.
 */
static __always_inline bool claim_slot(__u64 *owner, __u64 word)
{
#ifdef ZCT_COMPAT
	/* no compare-and-swap: no slot is claimed, every count goes to the shared map */
	return *owner == word;
#else
	return *owner == word || (!*owner && !__sync_val_compare_and_swap(owner, 0, word));
#endif
}

/*
 * A claimed slot, added to with plain loads and stores, each about 5 ns cheaper than an atomic add
 * here. Only a program that cannot be preempted does so (tracepoints and kprobes run with
 * preemption off): on its CPU only an interrupt can come between its loads and stores, and a
 * program the interrupt runs finds the owner word busy (HOT_BUSY), claims nothing and counts in
 * the shared map. A program that may be preempted (fentry/fexit, uprobes: they only keep to their
 * CPU) adds atomically, and it too leaves a busy slot alone.
 */
static __always_inline void hold_slot(__u64 *owner, __u64 word)
{
	*owner = word | HOT_BUSY;
	asm volatile("" ::: "memory");
}

static __always_inline void let_go_slot(__u64 *owner, __u64 word)
{
	asm volatile("" ::: "memory");
	*owner = word;
}

/* Whether a program of @method may be preempted while it runs (see hold_slot()). */
static __always_inline bool method_preemptible(__u32 method)
{
	return method == METHOD_FENTRY || method == METHOD_USDT;
}

/*
 * Adds @ncopies copies of @bytes in all to a site; the histogram gets the mean copy size. The
 * programs that count once per message or skb take it inlined (record_inline()): here a call and
 * its return cost them as much as the counting. The others call record_n(), a global function the
 * verifier checks once, not again on every path of every program that counts. A caller that may
 * be preempted (@preemptible) adds to its CPU's slot atomically (hold_slot()); record_n() always
 * does, since the rare sites it counts include fexit's and uprobes'.
 */
static __always_inline int count_copies(struct task_struct *task, __u32 tgid, __u32 site, __u64 bytes,
					__u64 ncopies, bool preemptible)
{
	static const struct site_stats zero;
	struct site_key key = { .tgid = tgid, .site = site };
	struct site_stats *st;
	__u32 slot;

	if (!counting() || ncopies == 0)
		return 0;
	slot = log2_slot(ncopies == 1 ? bytes : bytes / ncopies);	/* no division for the one copy most calls count */
	if (trace_all && census_count(task, tgid, site, bytes, ncopies, slot))
		return 0;
	if (!trace_all) {
		struct hot_site *h = bpf_map_lookup_elem(&hot_sites, &site);

		if (h && claim_slot(&h->tgid, tgid)) {
			st = &h->st;
			if (preemptible)
				goto add;
			hold_slot(&h->tgid, tgid);
			st->count += ncopies;
			st->bytes += bytes;
			st->hist[slot] += ncopies;
			let_go_slot(&h->tgid, tgid);
			return 0;
		}
	}
	st = bpf_map_lookup_elem(&sites, &key);
	if (!st) {
		if (!bpf_map_update_elem(&sites, &key, &zero, BPF_NOEXIST)) {
			__sync_fetch_and_add(&misc.sites_made, 1);
			note_ident(tgid, BPF_ANY);
		}
		st = bpf_map_lookup_elem(&sites, &key);
		if (!st) {
			__sync_fetch_and_add(&misc.sites_dropped, 1);
			return 0;
		}
	}
add:
	__sync_fetch_and_add(&st->count, ncopies);
	__sync_fetch_and_add(&st->bytes, bytes);
	/* the census's sizes are in census_hists, over every process */
	if (!trace_all)
		__sync_fetch_and_add(&st->hist[slot], ncopies);
	return 0;
}

__noinline int record_n(__u32 tgid, __u32 site, __u64 bytes, __u64 ncopies)
{
	return count_copies(NULL, tgid, site, bytes, ncopies, true);
}

static __always_inline void record(__u32 tgid, __u32 site, __u64 bytes)
{
	record_n(tgid, site, bytes, 1);
}

/* One copy, counted inline by a program of @method: for the programs that count once per message
 * or skb. @task is the running thread's, where the program has it at hand; NULL otherwise. */
static __always_inline void record_inline(struct task_struct *task, __u32 tgid, __u32 site, __u64 bytes,
					  __u32 method)
{
	count_copies(task, tgid, site, bytes, 1, method_preemptible(method));
}

/* What the traced function returned, in an fexit program (bpf_get_func_ret: the return value's
 * place among the arguments moves when a kernel adds one). */
static __always_inline long func_ret(void *ctx)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	return (long)ret;
}

/*
 * The same for a function whose @nargs arguments have not changed in any kernel zctrace runs on:
 * the compat object, without bpf_get_func_ret() (5.17), reads it where fexit puts it, after them.
 */
static __always_inline long func_ret_after(void *ctx, int nargs)
{
#ifdef ZCT_COMPAT
	return (long)((__u64 *)ctx)[nargs];
#else
	return func_ret(ctx);
#endif
}

static __always_inline bool site_uses(__u32 site, __u32 method)
{
	return site_method[site] == method;
}

#endif /* ZCTRACE_COMMON_BPF_H */
