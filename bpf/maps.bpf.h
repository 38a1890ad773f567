/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The maps more than one part of the object reads or writes, with the helpers that look them up.
 */
#ifndef ZCTRACE_MAPS_BPF_H
#define ZCTRACE_MAPS_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"

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
	__uint(max_entries, MAX_STEPS);
	__type(key, __u32);
	__type(value, struct step_stats);
} step_stats SEC(".maps");

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

/*
 * A socket's notification id. The socket is its address and, since a closed socket's address is
 * given to the next one, its life: the low half of its inode number (zc_sock_life()).
 */
struct zc_key {
	__u64 sk;
	__u32 id;
	__u32 life;
};

/*
 * A running sum over a socket's MSG_ZEROCOPY sends, at one notification id: the bytes of the
 * socket's sends up to and including this id, counted from the run's first (the base: an entry
 * of 0 bytes at the id before it). The sum runs over consecutive ids only: a send whose id's
 * predecessor has no entry (the socket's first in the run, an id the kernel gave a send that
 * copied, an entry evicted) starts a new run of sums, told apart by its epoch, and a notice whose
 * two ends are of different epochs is not matched.
 */
struct zc_sum {
	__u64 bytes;
	__u64 epoch;	/* its run of sums: a CPU's count of runs begun, and the CPU */
};

/*
 * MSG_ZEROCOPY sends waiting for their completion notice, by socket and notification id: a notice
 * for ids lo..hi covers sum[hi] - sum[lo - 1] bytes (zc_range_bytes()), two lookups however many
 * sends the kernel coalesced into it. Entries are not deleted: an id is the end of one notice's
 * range and the start of the next one's, in whatever order they come. The LRU evicts the entries
 * least recently used (roughly: long notified ones, and those of closed sockets); an end evicted
 * before its notice leaves that notice unmatched, never counted as dropped.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_ZC_CALLS);
	__type(key, struct zc_key);
	__type(value, struct zc_sum);
} zc_calls SEC(".maps");

/* Each CPU's count of the runs of sums it began: with the CPU's number, an epoch no other has. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} zc_epochs SEC(".maps");

/* Which life of the socket at @sk: the low half of its inode number (one per socket made). */
static __always_inline __u32 zc_sock_life(__u64 sk)
{
	return BPF_CORE_READ((struct sock *)sk, sk_socket, file, f_inode, i_ino);
}

/*
 * The running sum a zerocopy send of @bytes with notification @id on @sk is kept under (its
 * entry: zc_keep_sum()), from the one before it, or from a base it writes at the id before it.
 * A thread of the same process sending on the same socket at once may keep its id out of order
 * (UDP takes ids without the socket's lock; TCP lets go of it to wait for memory): the later id
 * then starts an epoch of its own, and the notices across it stay unmatched. Non-zero if the map
 * refused the base.
 */
static __always_inline long zc_sum_at(__u64 sk, __u32 life, __u32 id, __u64 bytes, struct zc_sum *sum)
{
	struct zc_key key = { .sk = sk, .id = id - 1, .life = life };
	struct zc_sum *prev = bpf_map_lookup_elem(&zc_calls, &key), base = {};
	__u32 zero = 0;
	__u64 *runs;

	sum->bytes = bytes;
	if (prev) {
		/* copied at once: an LRU entry is reused as soon as it is evicted */
		sum->bytes += prev->bytes;
		sum->epoch = prev->epoch;
		return 0;
	}
	runs = bpf_map_lookup_elem(&zc_epochs, &zero);
	if (!runs)
		return -1;
	*runs += 1;
	/* the base: the same epoch, no bytes */
	sum->epoch = base.epoch = *runs << 12 | (bpf_get_smp_processor_id() & 0xfff);
	return bpf_map_update_elem(&zc_calls, &key, &base, BPF_ANY);
}

/* Keeps @sum (zc_sum_at()) under notification @id on @sk: non-zero if the map refused it. */
static __always_inline long zc_keep_sum(__u64 sk, __u32 life, __u32 id, const struct zc_sum *sum)
{
	struct zc_key key = { .sk = sk, .id = id, .life = life };

	return bpf_map_update_elem(&zc_calls, &key, sum, BPF_ANY);
}

/*
 * The bytes kept for a notice's ids @lo..@hi on @sk (zc_keep_sum()): false if the two ends are not
 * both kept, in one epoch.
 */
static __always_inline bool zc_range_bytes(__u64 sk, __u32 lo, __u32 hi, __u64 *bytes)
{
	struct zc_key key = { .sk = sk, .id = lo - 1, .life = zc_sock_life(sk) };
	struct zc_sum *e = bpf_map_lookup_elem(&zc_calls, &key), before;

	if (!e)
		return false;
	before = *e;	/* copied before the next lookup: an LRU entry is reused once evicted */
	key.id = hi;
	e = bpf_map_lookup_elem(&zc_calls, &key);
	if (!e || e->epoch != before.epoch || e->bytes < before.bytes)
		return false;
	*bytes = e->bytes - before.bytes;
	return true;
}

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

/*
 * One I/O syscall in flight per thread (iocall.bpf.h follows it from entry to exit): what its
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
 * there (iocall.bpf.h's type_at_length()) for the call's exit, which then reads no descriptor, file
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

/* Sockets the targets sent on: deferred copies happen in softirq context, found by socket. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u32);	/* tgid */
} target_socks SEC(".maps");

/* The current microbenchmark step's figures, or NULL outside any step. */
static __always_inline struct step_stats *cur_step(void)
{
	__u32 id = step_now;

	return id ? bpf_map_lookup_elem(&step_stats, &id) : NULL;
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

#endif /* ZCTRACE_MAPS_BPF_H */
