/* SPDX-License-Identifier: GPL-2.0 */
/* Types and constants shared by the zctrace BPF programs and the zctrace CLI. */
#ifndef ZCTRACE_H
#define ZCTRACE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define MAX_SLOTS 64		/* log2 slots of a 64-bit value: a mask keeps the index in range */
#define MAX_SYSCALLS 1024	/* syscall numbers counted per number */
#define MAX_TARGETS 8192	/* traced processes (tgids) */
#define MAX_ZC_CALLS 65536	/* MSG_ZEROCOPY sends kept for their notices (an LRU: the latest) */
#define MAX_STEPS 64		/* numbered steps of a microbenchmark (USDT zctrace:step), 0 = none */

/*
 * uapi constants the BPF side cannot include next to vmlinux.h; user space
 * checks them against <linux/errqueue.h> and <linux/socket.h> at compile time.
 */
#define ZCT_EE_ORIGIN_ZEROCOPY 5
#define ZCT_EE_CODE_ZEROCOPY_COPIED 1
#define ZCT_MSG_ZEROCOPY 0x4000000
#define ZCT_MSG_SPLICE_PAGES 0x8000000
#define ZCT_IPPROTO_TCP 6
#define ZCT_IPPROTO_UDP 17
#define ZCT_AF_UNIX 1
#define ZCT_AF_INET 2
#define ZCT_AF_INET6 10
#define ZCT_SOCK_STREAM 1
#define ZCT_NETIF_F_SG 1ULL	/* NETIF_F_SG: bit 0 of the features since they were made */
#define ZCT_MSG_OOB 0x1
#define ZCT_MSG_TRUNC 0x20
#define ZCT_MSG_ERRQUEUE 0x2000
/* ... and against <linux/io_uring.h> */
#define ZCT_IORING_CQE_F_NOTIF (1U << 3)
#define ZCT_IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)

/*
 * Logical copy sites of the ledger, in the order a byte meets them: file read, user, kernel, file
 * write, pipe, network. Reports print them in this order. Each one is a row of the probe table
 * (user/trace/sites.c): docs/ARCHITECTURE.md, "Add a site".
 */
enum site {
	SITE_DIRECT_IO,		/* read()/write() on an O_DIRECT file: the device's DMA to or from user pages */
	SITE_FILE_READ_COPY,	/* page cache->user copy of read()/pread()/readv() on a file */
	SITE_USER_COPY,		/* copies done by the program itself (USDT) */
	SITE_KERNEL_COPY,	/* page cache->page cache copy inside copy_file_range/sendfile/splice */
	SITE_FILE_WRITE_COPY,	/* user->page cache copy of write()/pwrite()/writev() to a file */
	SITE_PIPE_WRITE_COPY,	/* user->pipe buffer copy of write()/writev() into a pipe or FIFO */
	SITE_PIPE_REF,		/* vmsplice/splice/tee/sendfile into a pipe: page references, no copy */
	SITE_PIPE_READ_COPY,	/* pipe buffer->user copy of read()/readv(), and of vmsplice() out of a pipe */
	SITE_SEND_COPY,		/* user->kernel copy into a TCP socket's buffer */
	SITE_UDP_SEND_COPY,	/* user->skb copy of a UDP send (IPv4 and IPv6) */
	SITE_UNIX_SEND_COPY,	/* user->skb copy of a Unix socket send (stream and datagram) */
	SITE_ZC_PIN,		/* MSG_ZEROCOPY: user pages pinned instead of copied */
	SITE_SPLICE_REF,	/* sendfile/splice: page references added to the skb */
	SITE_DEFERRED_COPY,	/* pinned zerocopy data copied later, on delivery */
	SITE_TX_COPY,		/* pinned zerocopy data copied on transmit, for a device without scatter-gather */
	SITE_RECV_COPY,		/* kernel->user copy out of a TCP socket */
	SITE_UDP_RECV_COPY,	/* skb->user copy of a UDP receive */
	SITE_UNIX_RECV_COPY,	/* skb->user copy of a Unix socket receive */
	NR_SITES,
};

/* How a send call's bytes enter the socket, as tcp_sendmsg_locked() decides. */
enum send_mode {
	SEND_MODE_COPY,
	SEND_MODE_ZEROCOPY,
	SEND_MODE_SPLICE,
};

/* Syscalls whose file descriptors the file sites classify (user space fills the table by number). */
enum io_kind {
	IO_NONE,
	IO_READ,	/* read, pread64, readv, preadv, preadv2: fd in arg 0 */
	IO_WRITE,	/* write, pwrite64, writev, pwritev, pwritev2: fd in arg 0 */
	IO_SENDFILE,	/* sendfile(out, in, ...) */
	IO_SPLICE,	/* splice(in, off, out, ...) */
	IO_COPY_RANGE,	/* copy_file_range(in, off, out, ...) */
	IO_VMSPLICE,	/* vmsplice(fd, ...): into the pipe if fd is open for writing, else out of it */
	IO_TEE,		/* tee(in, out, ...): both pipes */
	IO_SEND,	/* sendto, sendmsg: fd in arg 0 */
	IO_RECV,	/* recvfrom (flags in arg 3), recvmsg (flags in arg 2): fd in arg 0 */
	IO_SENDMMSG,	/* sendmmsg(fd, vec, vlen, flags): returns messages; bytes in vec[i].msg_len */
	IO_RECVMMSG,	/* recvmmsg(fd, vec, vlen, flags, timeout): the same */
};

/*
 * The I/O syscalls zctrace follows from entry to return, by the name of their function (sendfile's
 * is sendfile64) and what each one is (enum io_kind). User space fills io_kind_of[] from it by this
 * architecture's numbers (iocalls.c); where the kernel allows it, each is followed at its own
 * function, by an fentry/fexit pair (io_syscalls.bpf.c) in place of the sys_enter/sys_exit
 * tracepoints. Such a pair reads its syscall's number from its slot (enum io_syscall) of
 * io_syscall_nr[], which user space fills, not from the task's registers: the verifier then knows
 * it as a constant and walks only that syscall's path through the shared handlers, which makes
 * the pairs several times cheaper to load (docs/ARCHITECTURE.md has the figures).
 */
#define ZCT_IO_SYSCALLS(X)											\
	X(read, IO_READ) X(pread64, IO_READ) X(readv, IO_READ) X(preadv, IO_READ) X(preadv2, IO_READ)		\
	X(write, IO_WRITE) X(pwrite64, IO_WRITE) X(writev, IO_WRITE) X(pwritev, IO_WRITE)			\
	X(pwritev2, IO_WRITE)											\
	X(sendfile64, IO_SENDFILE) X(splice, IO_SPLICE) X(copy_file_range, IO_COPY_RANGE)			\
	X(vmsplice, IO_VMSPLICE) X(tee, IO_TEE)									\
	X(sendto, IO_SEND) X(sendmsg, IO_SEND) X(sendmmsg, IO_SENDMMSG)						\
	X(recvfrom, IO_RECV) X(recvmsg, IO_RECV) X(recvmmsg, IO_RECVMMSG)

#define ZCT_IO_SYSCALL_SLOT(name, kind) IO_SYSCALL_##name,
enum io_syscall {
	ZCT_IO_SYSCALLS(ZCT_IO_SYSCALL_SLOT)
	NR_IO_SYSCALLS,
};

/*
 * What a descriptor is, for the boundary account: the bytes that crossed between user memory and
 * the kernel, by call and file type, counted at the call's return independently of the sites.
 */
enum fd_type {
	FT_OTHER,	/* character devices, eventfd, timerfd, anonymous inodes, ... */
	FT_REG,		/* regular file, through the page cache */
	FT_REG_DIRECT,	/* regular file opened with O_DIRECT */
	FT_PIPE,	/* pipe or FIFO */
	FT_TCP,
	FT_UDP,
	FT_UNIX_STREAM,
	FT_UNIX_DGRAM,	/* Unix datagram and seqpacket */
	FT_SOCK_OTHER,	/* netlink, packet, raw, SCTP, ... */
	NR_FD_TYPES,
};

/* Boundary account key: a syscall number, or IO_URING_CALL + an io_uring opcode, and a file type. */
#define IO_URING_CALL MAX_SYSCALLS
#define MAX_URING_OPS 64	/* io_uring opcodes zctrace classifies (enum io_kind by opcode) */
#define MAX_ACCOUNT_KEYS 1024

struct account_key {
	__u32 call;
	__u32 fd_type;	/* enum fd_type */
	__u32 tgid;	/* the census's process; 0 for a run's targets, summed */
};

/* The syscalls of a run by number, and of its measured phase (struct cpu_state's, per CPU). */
struct syscall_counts {
	__u64 all[MAX_SYSCALLS];
	__u64 phase[MAX_SYSCALLS];
};

/*
 * The last TCP send's mark on a CPU (boundary.bpf.h), for its syscall's exit: what it returned,
 * and whose it was.
 */
struct send_mark {
	__u32 tid;		/* 0: none */
	__u32 nr;		/* fentry and kprobe paths: the syscall it ran in + 1; 0: the tracepoint
				 * path's, which every socket send of the thread rewrites */
	__u64 switches;		/* the thread's nvcsw + nivcsw when it was left */
	__s64 ret;
	__s32 fd;		/* the syscall's descriptor (with nr) */
	__u32 pad;
};

/*
 * What each CPU keeps for the next event on it, in one entry (the cpu_states map): a program that
 * needs two of them looks it up once (on 6.1, where a per-CPU lookup is a helper call, each lookup
 * saved is one).
 * - memo: the target filter's last verdict, tgid << 32 | generation << 1 | verdict, one word so
 *   that a program preempted on the same CPU never reads half of another's. Most events come from
 *   the task that ran the last one, and this costs less than the targets hash's lookup.
 * - mark: the last TCP send's (boundary.bpf.h).
 * - counts: the targets' syscalls on this CPU, added by sys_enter alone (it does not nest on a
 *   CPU), summed by user space.
 */
struct cpu_state {
	__u64 memo;
	struct send_mark mark;
	struct syscall_counts counts;
};

struct account_stats {
	__u64 calls;	/* calls that moved bytes */
	__u64 bytes;
	__u64 unsized;	/* calls whose bytes the return does not give (recv with MSG_TRUNC) */
};

/*
 * Set in a CPU's slot's owner word (hot_site's tgid, hot_account's key) while a program adds to it
 * with plain loads and stores: a program that comes in between on the CPU counts elsewhere.
 */
#define HOT_BUSY (1ULL << 63)

/* A run's account row in a CPU's slot: its key as hot_account_word() packs it, 0 while free. */
struct hot_account {
	__u64 key;
	struct account_stats st;
};

static inline __u64 hot_account_word(__u32 call, __u32 fd_type)
{
	return ((__u64)call << 32 | fd_type) + 1;
}

/* ... and the row's key back from it. */
static inline struct account_key hot_account_key(__u64 word)
{
	struct account_key key;

	word = (word & ~HOT_BUSY) - 1;
	key.call = (__u32)(word >> 32);
	key.fd_type = (__u32)word;
	key.tgid = 0;

	return key;
}

/*
 * The census counts each thread's copies in the thread itself (task storage): no hash update per
 * event. User space reads the live threads' counters with a task iterator at each read, and each
 * thread's last counters arrive in a ring buffer record as it exits; a thread's serial tells its
 * counters apart from any other's, through tid reuse.
 */
struct census_counts {
	__u64 count;
	__u64 bytes;
};

#define CENSUS_ADDING 1		/* census_thread.state: a program adds to it now */
#define CENSUS_EXITED 2		/* ... the thread has exited: its last counters were sent */

struct census_thread {
	__u64 serial;		/* from 1, unique per thread counted; 0 until its first copy */
	__u32 tgid;
	__u32 state;		/* 0, CENSUS_ADDING or CENSUS_EXITED */
	struct census_counts site[NR_SITES];
};

/* The census's copy sizes by site over every process, per CPU: the size histograms. */
struct census_hists {
	__u64 hist[NR_SITES][MAX_SLOTS];
};

/* What a file descriptor refers to, as seen from its struct file. */
#define FD_REG		0x1	/* regular file */
#define FD_DIRECT	0x2	/* opened with O_DIRECT: DMA, not a page-cache copy */
#define FD_PIPE		0x4
#define FD_SOCK		0x8

struct pc_key {
	__u64 ino;
	__u32 dev;	/* the kernel's dev_t: major << 20 | minor */
	__u32 pad;
};

/* Attach method chosen for a site; the BPF side counts only through the chosen one. */
enum method {
	METHOD_NONE,
	METHOD_FENTRY,
	METHOD_KPROBE,
	METHOD_TP_BTF,
	METHOD_RAW_TP,
	METHOD_USDT,
	METHOD_ITER,	/* a BPF iterator, run by user space */
	METHOD_PERF_EVENT,	/* a perf_event program on a sampling event of each CPU */
};

struct site_key {
	__u32 tgid;
	__u32 site;
};

/* A census process: its leader's name and cgroup, noted with its first key. */
struct proc_ident {
	char comm[16];
	__u64 cgroup;		/* cgroup v2 id: the inode number of its directory (the census's) */
	__u32 netns;		/* its network namespace's inode number (a run's) */
	__u32 pad;
};

struct site_stats {
	__u64 count;
	__u64 bytes;
	__u64 hist[MAX_SLOTS];
};

/* A run's site counters in a CPU's slot (hot_sites): whose they are, 0 while free. */
struct hot_site {
	__u64 tgid;	/* a 64-bit word for the compare-and-swap that claims it */
	struct site_stats st;
};

/*
 * A MSG_ZEROCOPY skb of a traced sender seen on a device: leaving it (xmit) or arriving at it
 * (receive), by network namespace. Still zerocopy on arrival means nothing on the way copied it.
 */
enum zc_stage {
	ZC_STAGE_XMIT,		/* net_dev_start_xmit: handed to the device */
	ZC_STAGE_RECEIVE,	/* netif_receive_skb: delivery starts; the copy follows there */
	NR_ZC_STAGES,
};

struct zc_path_key {
	__u32 tgid;		/* the sending process */
	__u32 netns;		/* inode number of the device's network namespace */
	__u32 ifindex;
	__u32 stage;
};

struct zc_path_stats {
	__u64 skbs;
	__u64 bytes;		/* paged bytes (skb->data_len): the pinned user pages */
	__u64 dont_orphan;	/* skbs marked SKBFL_DONT_ORPHAN: forwarding keeps the pages */
	char dev[16];
};

/* The pinner of a ubuf_info's pages; for io_uring, the bytes its request's send calls moved. */
struct zc_owner {
	__u32 tgid;
	__u32 sends;		/* send calls that moved bytes under it (io_uring SEND_ZC) */
	__u64 bytes;		/* ... and their bytes, for its notification */
};

struct sched_stats {
	__u64 voluntary;
	__u64 involuntary;
	__u64 offcpu_ns;
	__u64 offcpu_hist[MAX_SLOTS];	/* microseconds, log2 */
};

/* Process-wide figures that are not copy sites. */
struct misc_stats {
	__u64 page_faults_user;
	__u64 page_faults_kernel;
	__u64 forks;			/* new processes and threads among the targets */
	__u64 exits;			/* exited threads among the targets */
	__u64 zc_notices;		/* MSG_ZEROCOPY completion notices read from the error queue,
					 * and io_uring SEND_ZC notification CQEs */
	__u64 zc_notices_copied;	/* ... of which carried SO_EE_CODE_ZEROCOPY_COPIED
					 * (IORING_NOTIF_USAGE_ZC_COPIED) */
	__u64 zc_calls_completed;	/* send calls (SEND_ZC requests) covered by those notices */
	__u64 zc_calls_unmatched;	/* ids in a notice (notifications) with no send seen by the tracer */
	__u64 zc_bytes_copied_notice;	/* bytes of send calls whose notice said COPIED, and was
					 * (io_uring: not a linked notification of uncopied data) */
	__u64 zc_notices_copied_linked;	/* io_uring notifications that said copied, linked to one
					 * whose skbs said used and not copied (what the linked ones'
					 * data shared): their bytes are not in bytes_copied_notice */
	__u64 zc_calls_dropped;		/* zerocopy sends that did not fit the pending map */
	__u64 udp_pins_late;		/* bytes of UDP zerocopy pins seen after their send call returned
					 * (a queueing device on the tracepoint path): udp_send_copy
					 * counted them as copies too */
	__u64 phase_begins;
	__u64 phase_ends;
	__u64 switches_before_exec;	/* the first target's switches before its exec (perf starts there) */
	__u64 exec_seen;
	__u64 switches_at_execve;	/* ... at its execve() entry: perf may start anywhere in between */
	__u64 switches_exiting;		/* switch-outs of target tasks already in do_exit() (PF_EXITING) */
	__u64 switches_compat;		/* the targets' switches, in the compat object (no per-CPU sum) */
	__u64 execve_seen;
	__u64 write_bytes_by_return;	/* file writes counted from the syscall's return: no copy event seen */
	__u64 file_bytes_unseen;	/* bytes copy_file_range/sendfile/splice put in a file with no copy seen */
	__u64 step_marks;		/* USDT zctrace:step markers seen */
	/*
	 * Map updates that failed (a hash map full): each is a figure lost, so the ledger prints them
	 * and fails a check. Counted only on the failure branch, off the hot path.
	 */
	__u64 targets_dropped;		/* forked processes not followed */
	__u64 sites_dropped;		/* copies of a (process, site) with no entry */
	__u64 sites_made;		/* (process, site) entries made: the census counts evictions by them */
	__u64 sched_dropped;		/* context switches of a process with no entry */
	__u64 offcpu_dropped;		/* switch-outs whose off-CPU time was not timed */
	__u64 io_calls_dropped;		/* file syscalls not followed to their exit */
	__u64 pc_adds_dropped;		/* page-cache insertions of a file with no entry */
	__u64 send_calls_dropped;	/* send calls not followed from entry (or loop) to return */
	__u64 zc_path_dropped;		/* zerocopy skbs on a (device, stage) with no entry */
	__u64 account_dropped;		/* boundary-account updates of a (call, file type) with no entry */
	__u64 census_exits_dropped;	/* census threads whose last counters found no room in the ring buffer */
	__u64 census_samples_dropped;	/* the census's copy samples (--cost) of a process with no entry */
};

/*
 * Kernel figures of one numbered step of a microbenchmark, the ground truth its assumptions are
 * checked against. Counted for the targets while the step is current; syscalls by number are in
 * a map of their own.
 */
struct step_stats {
	__u64 syscalls;
	__u64 voluntary;	/* context switches away from a target, the scheduler's own rule */
	__u64 involuntary;
	__u64 preempted;	/* ... of which involuntary, to a task that is not a target: a disturbance */
	__u64 forks;		/* new processes and threads of the targets */
	__u64 exits;
	__u64 faults_user;
	__u64 faults_kernel;
	__u64 pc_pages;		/* pages of regular files the targets brought into the page cache */
	__u64 handoffs;		/* a CPU passed from one target task to another, others in between or not */
};

/*
 * What the sampler (cost.bpf.c) places each sample of a traced task in: a copy site's copy routine
 * (the first NR_SITES, at their enum site numbers), or a kind of time that is not a site's copy.
 * bpf/costwalk.h decides which from the sample's kernel stack.
 */
enum cost_class {
	COST_COPY_OTHER = NR_SITES,	/* a copy routine under no copy site (syscall arguments, ...) */
	COST_ZEROCOPY,		/* pinning pages, zerocopy bookkeeping and completion notices */
	COST_PAGE_REF,		/* page references: sendfile, splice, vmsplice, their pipes */
	COST_SYSCALL,		/* syscall entry, exit and dispatch, descriptor lookup */
	COST_NET,		/* the protocol stack and devices, outside the copies */
	COST_FS,		/* VFS, page cache, file systems and pipes, outside the copies */
	COST_ALLOC,		/* memory allocation and freeing */
	COST_FAULT,		/* page faults */
	COST_SCHED,		/* the scheduler: switching, waking, sleeping */
	COST_TRACER,		/* BPF programs and their trampolines: the tracer's own time */
	COST_KERNEL_OTHER,	/* kernel code none of the above names */
	COST_USER,		/* the program's own code, in user mode */
	COST_DISPLACED,		/* taken where interrupts came back on: due while they were off */
	NR_COST_CLASSES,
};

/* One kernel function the sampler knows, by address: [start, start + len), its role (costwalk.h). */
struct cost_range {
	__u64 start;
	__u32 len;
	__u32 word;
};

/*
 * A user-space copy routine (libc's memcpy and kin, as this CPU resolves them): [start, end) in
 * its library's file, which the sampler knows by its ELF build ID (user_copy_lib). A user-mode
 * sample whose address falls in one is the program's own copy, user_copy.
 */
struct user_copy_fn {
	__u64 start;
	__u64 end;
};

#define USER_COPY_FNS 8
#define USER_COPY_BUILD_ID 20	/* bytes of a GNU build ID (SHA-1), as bpf_get_stack() gives it */

#define COST_MAX_RANGES 32768	/* the sampler's function table; a power of two (its search) */
#define COST_FRAMES 48		/* kernel frames a sample's walk reads, from the leaf */

/* The counts' slots, a power of two at least NR_COST_CLASSES: a mask keeps the index in range. */
#define COST_SLOTS 32

/*
 * The sampler's counts on a CPU: every sample of the targets from the exec of the process zctrace
 * started (where task-clock starts), and those in the measured phase.
 */
struct cost_cpu {
	__u64 all[COST_SLOTS];
	__u64 phase[COST_SLOTS];
	__u64 stack_errors;	/* samples whose kernel stack could not be read (placed in kernel_other) */
	__u64 exiting;		/* ... of all, those of tasks in do_exit() (PF_EXITING) */
	__u64 user_phase;	/* user-mode samples in the measured phase */
	__u64 user_unread;	/* ... whose file the kernel could not read (build ID), placed in user */
	__u64 user_lib;		/* ... in the copy routines' library (user_copy_lib) */
	__u64 ips[COST_FRAMES];	/* the walk's scratch: the sample's stack */
};

/*
 * Timed copies (run --time-copies): each call of a copy routine timed from its entry to its
 * return on its CPU, less the copies timed inside it (an interrupt's), and placed by the walk
 * over its caller's stack. Calls the CPU left for another task before they returned are not
 * timed, only counted.
 */
#define COPY_TIME_DEPTH 8	/* timed calls in progress on one CPU: a task's and interrupts' */

struct copy_time_frame {
	__u64 start;
	__u64 nested;		/* ns of the timed calls inside this one */
	__u32 tid;
	__u32 fn;		/* which routine: its return must find its own entry */
};

struct copy_time_cpu {
	__u64 ns[COST_SLOTS];	/* by class, as the sampler's: a site's copy or other copies */
	__u64 calls[COST_SLOTS];
	__u64 switched;		/* calls the CPU switched away from before they returned */
	__u64 unmatched;	/* returns whose entry was not the last one open on the CPU */
	__u64 too_deep;		/* entries beyond COPY_TIME_DEPTH */
	__u32 depth;
	__u32 pad;
	struct copy_time_frame f[COPY_TIME_DEPTH];
	__u64 ips[COST_FRAMES];	/* the walk's scratch */
};

/*
 * The census's copy samples (top and export --cost): per process, the sampler's samples that a
 * copy site's copy holds. CENSUS_CPU_PROCS processes, the least recently sampled evicted.
 */
struct census_cpu {
	__u64 samples[NR_SITES];
};

#define CENSUS_CPU_PROCS 8192

/*
 * One process's TCP bytes from its sockets' own counters (tcpcount.bpf.c): what it gave TCP to
 * send (copied, pinned or page-referenced) and what TCP gave it (read, spliced or mapped; not
 * MSG_PEEK), since the census started.
 */
/* tcp_derived: which census sites are the sockets' counters less what was not copied */
#define TCP_DERIVED_SEND 1	/* send_copy: write_seq's bytes less pins and page references */
#define TCP_DERIVED_RECV 2	/* recv_copy: copied_seq's bytes less splices out */

struct tcp_flow {
	__u64 sent;
	__u64 received;
	__u64 shared_sweep;	/* the last sweep that found one of its sockets held by another process too */
	/*
	 * Of those, taken from it with no copy (pinned, page-referenced) and given to it with no copy
	 * (spliced out to a pipe), added by its sockets' looks beside the bytes they are part of
	 * (a pin before them: it is counted before write_seq moves past it).
	 */
	__u64 sent_not_copied;
	__u64 received_not_copied;
};

#endif /* ZCTRACE_H */
