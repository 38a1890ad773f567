/* Built-in workloads: what each one does and what its copy ledger must show. */
#include <stdio.h>
#include <string.h>
#include "contract/mbdocs.h"
#include "contract/opts.h"
#include "trace/workloads.h"

/*
 * What each site must show: a site a workload leaves out must show no bytes (enum expect's 0), so
 * a new site is claimed for every workload at once. The TCP workloads make no claim on the file
 * sites.
 */
#define FILES_UNCLAIMED \
	[SITE_DIRECT_IO] = EXP_ANY, [SITE_FILE_READ_COPY] = EXP_ANY, [SITE_KERNEL_COPY] = EXP_ANY, [SITE_FILE_WRITE_COPY] = EXP_ANY

const struct workload_def workload_defs[] = {
	{ "tcp-twocopy",
	  "memcpy 8 fields into one buffer (USDT user_copy), then send() over TCP",
	  "user_copy = send_copy = recv_copy = payload; no pins, no page references",
	  .site = { FILES_UNCLAIMED, [SITE_USER_COPY] = EXP_SENT, [SITE_SEND_COPY] = EXP_SENT,
		    [SITE_RECV_COPY] = EXP_RECEIVED },
	  .net = true, .opt_groups = WL_OPT_TCP },
	{ "tcp-onecopy",
	  "sendmsg() with an 8-entry iovec over the fields, over TCP",
	  "send_copy = recv_copy = payload; user_copy = 0",
	  .site = { FILES_UNCLAIMED, [SITE_SEND_COPY] = EXP_SENT, [SITE_RECV_COPY] = EXP_RECEIVED },
	  .net = true, .opt_groups = WL_OPT_TCP },
	{ "tcp-zerocopy",
	  "SO_ZEROCOPY + sendmsg(MSG_ZEROCOPY), completions reaped from MSG_ERRQUEUE",
	  "zc_pin = payload, send_copy = 0; on loopback and veth deferred_copy = payload (copied on "
	  "delivery, notices say COPIED); recv_copy = payload",
	  .site = { FILES_UNCLAIMED, [SITE_ZC_PIN] = EXP_SENT, [SITE_DEFERRED_COPY] = EXP_SENT,
		    [SITE_RECV_COPY] = EXP_RECEIVED },
	  .zc_notices = true, .net = true, .opt_groups = WL_OPT_TCP | WL_OPT_NOTICES },
	{ "uring-send",
	  "each message's 8 fields sent as linked io_uring IORING_OP_SEND requests, over TCP",
	  "send_copy = recv_copy = payload (the kernel copies as for send()); no pins",
	  .site = { FILES_UNCLAIMED, [SITE_SEND_COPY] = EXP_SENT, [SITE_RECV_COPY] = EXP_RECEIVED },
	  .net = true, .opt_groups = WL_OPT_TCP | WL_OPT_URING },
	{ "uring-sendzc",
	  "each message's 8 fields sent as linked io_uring IORING_OP_SEND_ZC requests, notifications "
	  "reaped (IORING_SEND_ZC_REPORT_USAGE: those that say the data was copied)",
	  "zc_pin = payload, send_copy = 0; on loopback and veth deferred_copy = payload (copied on "
	  "delivery, notifications say copied); recv_copy = payload",
	  .site = { FILES_UNCLAIMED, [SITE_ZC_PIN] = EXP_SENT, [SITE_DEFERRED_COPY] = EXP_SENT,
		    [SITE_RECV_COPY] = EXP_RECEIVED },
	  .zc_notices = true, .net = true, .opt_groups = WL_OPT_TCP | WL_OPT_URING },
	{ "tcp-sendfile",
	  "sendfile() of a page-cached file to the socket",
	  "splice_ref = payload (page references), send_copy = user_copy = 0; recv_copy = payload",
	  .site = { FILES_UNCLAIMED, [SITE_SPLICE_REF] = EXP_SENT, [SITE_RECV_COPY] = EXP_RECEIVED },
	  .net = true, .opt_groups = WL_OPT_TCP },
	{ "udp-copy",
	  "send() of --size datagrams (default 1400, at most 65507) over connected UDP sockets, recv() "
	  "on the other end; --threads socket pairs, each sender at most a window of datagrams ahead of "
	  "its receiver (shared memory), so none is lost",
	  "udp_send_copy = bytes sent, udp_recv_copy = bytes received (user->skb->user: two CPU copies); "
	  "no datagram lost; no pins",
	  .site = { FILES_UNCLAIMED, [SITE_UDP_SEND_COPY] = EXP_SENT, [SITE_UDP_RECV_COPY] = EXP_RECEIVED },
	  .net = true, .opt_groups = WL_OPT_UDP_PAIRS, .max_size = WL_UDP_MAX_SIZE },
	{ "udp-zerocopy",
	  "SO_ZEROCOPY + sendmsg(MSG_ZEROCOPY) of the same datagrams, completions reaped from "
	  "MSG_ERRQUEUE; --gso SEGMENT: each send leaves as datagrams of SEGMENT bytes",
	  "zc_pin = payload, udp_send_copy = 0; on loopback and veth deferred_copy = payload (copied on "
	  "delivery, notices say COPIED); udp_recv_copy = payload (a datagram larger than one packet on "
	  "the link is refused: IP fragments it, and the kernel copies it at the send; use --gso)",
	  .site = { FILES_UNCLAIMED, [SITE_ZC_PIN] = EXP_SENT, [SITE_DEFERRED_COPY] = EXP_SENT,
		    [SITE_UDP_RECV_COPY] = EXP_RECEIVED },
	  .zc_notices = true, .net = true, .opt_groups = WL_OPT_UDP_PAIRS, .max_size = WL_UDP_MAX_SIZE },
	{ "pipe-copy",
	  "write() of --size messages (default 64K) into a pipe, read() on the other end by a thread or "
	  "a child process (--peer thread|process); --threads pipes at once",
	  "pipe_write_copy = bytes written, pipe_read_copy = bytes read (user->pipe->user: two CPU "
	  "copies); every other site 0",
	  .site = { [SITE_PIPE_WRITE_COPY] = EXP_SENT, [SITE_PIPE_READ_COPY] = EXP_RECEIVED },
	  .opt_groups = WL_OPT_PIPES | WL_OPT_AMOUNT },
	{ "unix-stream",
	  "write() of --size messages (default 64K) into a Unix stream socket pair (socketpair()), "
	  "read() on the other end by a thread or a child process (--peer thread|process); --threads "
	  "socket pairs at once",
	  "unix_send_copy = bytes written, unix_recv_copy = bytes read (user->skb->user: two CPU "
	  "copies); every other site 0",
	  .site = { FILES_UNCLAIMED, [SITE_UNIX_SEND_COPY] = EXP_SENT, [SITE_UNIX_RECV_COPY] = EXP_RECEIVED },
	  .opt_groups = WL_OPT_PIPES | WL_OPT_AMOUNT },
	{ "pipe-vmsplice",
	  "vmsplice() of the 8 fields into a pipe (page references, no SPLICE_F_GIFT), then splice() "
	  "from the pipe into the TCP socket",
	  "pipe_ref = splice_ref = payload (page references into the pipe, then into the skb), "
	  "recv_copy = payload; send_copy = pipe_write_copy = pipe_read_copy = 0",
	  .site = { FILES_UNCLAIMED, [SITE_PIPE_REF] = EXP_SENT, [SITE_SPLICE_REF] = EXP_SENT,
		    [SITE_RECV_COPY] = EXP_RECEIVED },
	  .net = true, .opt_groups = WL_OPT_TCP },
	{ "file-readwrite",
	  "duplicate a file with read() + write() through a --size buffer (default 64K)",
	  "file_read_copy = file_write_copy = file size (page cache->user->page cache); kernel_copy = 0",
	  .site = { [SITE_FILE_READ_COPY] = EXP_SENT, [SITE_FILE_WRITE_COPY] = EXP_SENT },
	  .file = true, .no_threads = true, .no_amount = true,
	  .opt_groups = WL_OPT_FILE },
	{ "uring-file",
	  "duplicate a file with io_uring READ + WRITE requests of --size bytes (default 64K), one at a "
	  "time; --fixed: READ_FIXED + WRITE_FIXED through a registered buffer; --vectored: READV + "
	  "WRITEV of two vectors; --direct: both files "
	  "O_DIRECT; --async, --sqpoll: issued by io-wq workers, or the SQPOLL thread",
	  "file_read_copy = bytes read, file_write_copy = bytes written (page cache->user->page cache, "
	  "counted as each request completes); with --direct direct_io = bytes read + written and no "
	  "copies; kernel_copy = 0",
	  .site = { [SITE_FILE_READ_COPY] = EXP_READ_BUFFERED, [SITE_FILE_WRITE_COPY] = EXP_WRITTEN_BUFFERED,
		    [SITE_DIRECT_IO] = EXP_DIRECT_RW },
	  .file = true, .no_threads = true, .no_amount = true,
	  .opt_groups = WL_OPT_FILE | WL_OPT_URING | WL_OPT_FILE_IO },
	{ "file-sendfile",
	  "duplicate a file with sendfile() from file to file",
	  "kernel_copy = file size (page cache->page cache), no user copies; 0 if the filesystem clones",
	  .site = { [SITE_KERNEL_COPY] = EXP_COPIED_OR_CLONED },
	  .file = true, .no_threads = true, .no_amount = true,
	  .opt_groups = WL_OPT_FILE },
	{ "file-splice",
	  "duplicate a file with splice() file->pipe (page references), pipe->file",
	  "pipe_ref = file size (page cache pages into the pipe by reference); kernel_copy = file size "
	  "(pipe pages->page cache); no user copies",
	  .site = { [SITE_PIPE_REF] = EXP_SENT, [SITE_KERNEL_COPY] = EXP_COPIED_OR_CLONED },
	  .file = true, .no_threads = true, .no_amount = true,
	  .opt_groups = WL_OPT_FILE },
	{ "file-copyrange",
	  "duplicate a file with copy_file_range()",
	  "kernel_copy = file size on ext4 (page cache->page cache); 0 where the filesystem clones (reflink)",
	  .site = { [SITE_KERNEL_COPY] = EXP_COPIED_OR_CLONED },
	  .file = true, .no_threads = true, .no_amount = true,
	  .opt_groups = WL_OPT_FILE },
	{ "serve-readsend",
	  "serve a file over TCP with read() + send() of --size bytes (default 64K)",
	  "file_read_copy = send_copy = recv_copy = file size x connections",
	  .site = { [SITE_FILE_READ_COPY] = EXP_SENT, [SITE_SEND_COPY] = EXP_SENT,
		    [SITE_RECV_COPY] = EXP_RECEIVED },
	  .file = true, .no_threads = true, .no_amount = true, .net = true,
	  .opt_groups = WL_OPT_CONN | WL_OPT_FILE | WL_OPT_PEER },
	{ "serve-sendfile",
	  "serve a file over TCP with sendfile() of --size bytes (default 64K)",
	  "splice_ref = recv_copy = file size x connections; file_read_copy = send_copy = 0",
	  .site = { [SITE_SPLICE_REF] = EXP_SENT, [SITE_RECV_COPY] = EXP_RECEIVED },
	  .file = true, .no_threads = true, .no_amount = true, .net = true,
	  .opt_groups = WL_OPT_CONN | WL_OPT_FILE | WL_OPT_PEER },
	{ "remote-fileread",
	  "read a file block by block (--size, default 64K; --pattern seq|random) from a TCP file server "
	  "that answers each request with pread() + send()",
	  "file_read_copy = bytes served; send_copy = recv_copy = bytes served + requests (the client's "
	  "16-byte requests go the other way); no pins, no page references",
	  .site = { [SITE_FILE_READ_COPY] = EXP_SENT, [SITE_SEND_COPY] = EXP_SENT_AND_REQUESTS,
		    [SITE_RECV_COPY] = EXP_RECEIVED_AND_REQUESTS },
	  .file = true, .no_threads = true, .no_amount = true, .net = true,
	  .opt_groups = WL_OPT_FILE | WL_OPT_PEER | WL_OPT_PATTERN },

	/* microbenchmarks: CPU and clock */
	{ "timer",
	  "clock read overhead: rdtsc, rdtscp, clock_gettime(CLOCK_MONOTONIC) read twice, median",
	  "no step made a syscall; clock_gettime count = 0 (the vDSO served every read)",
	  .micro = true, .no_threads = true, .no_amount = true },
	{ "loop",
	  "empty counted loop: the overhead of one iteration",
	  "the loop made no syscall and never switched out on its own (preemptions reported)",
	  .micro = true, .no_threads = true, .no_amount = true },
	{ "call",
	  "procedure call with 0..7 integer arguments, less the loop overhead",
	  "no timed loop made a syscall or switched out on its own (preemptions reported)",
	  .micro = true, .no_threads = true, .no_amount = true },

	/* microbenchmarks: kernel entry, tasks and scheduling */
	{ "syscall",
	  "null syscall: syscall(SYS_getpid), glibc getpid(), and time()/clock_gettime() (vDSO)",
	  "sys_enter getpid count = calls made, for both getpid ways; the vDSO calls made no syscall",
	  .micro = true, .no_threads = true, .no_amount = true },
	{ "proc-create",
	  "process creation: fork+_exit+waitpid, fork+execve(/bin/true)+waitpid, posix_spawn+waitpid",
	  "forks = exits = processes made, one clone (fork) or clone3 (posix_spawn), one wait4, one "
	  "exit_group and one execve (exec ways) per process; file reads: the exec'd loader's own",
	  /* the loader of /bin/true reads libc's ELF headers: real copies, not this workload's figure */
	  .site = { [SITE_FILE_READ_COPY] = EXP_ANY },
	  .micro = true, .no_threads = true, .no_amount = true },
	{ "thread-create",
	  "thread creation: pthread_create+pthread_join, and a bare clone(CLONE_VM|CLONE_THREAD) joined "
	  "on its CLONE_CHILD_CLEARTID futex",
	  "forks = exits = threads made; one clone3 (pthread) or clone (bare) and one exit per thread",
	  .micro = true, .no_threads = true, .no_amount = true },
	{ "ctxswitch",
	  "context switch: one-byte pipe ping-pong between two processes and two threads on one CPU, "
	  "less the pipe round trip alone",
	  "2 handoffs of the CPU between the pair per round trip (-0.1%..+0.5%); one read and one write "
	  "per side per round trip; the pipe alone made no switch; pipe_write_copy = pipe_read_copy = "
	  "the one-byte tokens passed (2 per round trip, 1 per pipe-alone pass)",
	  .site = { [SITE_PIPE_WRITE_COPY] = EXP_SENT, [SITE_PIPE_READ_COPY] = EXP_RECEIVED },
	  .micro = true, .no_threads = true, .no_amount = true },

	/* microbenchmarks: memory */
	{ "memlat",
	  "dependent-load latency over a random cyclic chain (Sattolo), working sets 4K..512M; plateaus",
	  "no chase took a page fault (the buffer was pre-faulted) or made a syscall",
	  .micro = true, .no_threads = true, .no_amount = true },
	{ "membw",
	  "memory bandwidth: memcpy, sequential read, sequential write over --size buffers (default 256M)",
	  "user_copy = the bytes memcpy'd (USDT, one per call); no timed pass faulted or made a syscall",
	  .site = { [SITE_USER_COPY] = EXP_SENT },
	  .micro = true, .no_threads = true, .no_amount = true },

	{ "pagefault",
	  "page fault service time on a file mapping: cold (page dropped, read from the disk, "
	  "MADV_RANDOM) and warm (page cached, new mapping)",
	  "cold: faults = pages touched = pages read in, no syscall; warm: one fault per fault-around "
	  "window, no page read in",
	  .micro = true, .no_threads = true, .no_amount = true },

	/* microbenchmarks: network */
	{ "tcp-rtt",
	  "round trip of a --size message (default 32 bytes) echoed over TCP, TCP_NODELAY, to a "
	  "server thread or process over loopback, or across veth (--peer netns: the remote case)",
	  "sendto = recvfrom = 2 x round trips (one send and one whole recv per side); "
	  "send_copy = recv_copy = bytes both sides moved",
	  .site = { [SITE_SEND_COPY] = EXP_SENT, [SITE_RECV_COPY] = EXP_RECEIVED },
	  .micro = true, .no_threads = true, .no_amount = true, .net = true },
	{ "tcp-bw",
	  "bulk transfer over TCP: a server (thread or process over loopback, or across veth with "
	  "--peer netns) writes --size (64K), the client reads and times --bytes (32M) per sample",
	  "sendto = writes made (each accepted whole); recvfrom = reads the client counted; "
	  "send_copy = recv_copy = bytes moved",
	  .site = { [SITE_SEND_COPY] = EXP_SENT, [SITE_RECV_COPY] = EXP_RECEIVED },
	  .micro = true, .no_threads = true, .no_amount = true, .net = true },
	{ "tcp-connect",
	  "connect() and close() of TCP connections timed apart; a server (thread or process over "
	  "loopback, or across veth with --peer netns) accepts each",
	  "socket = connect = accept4 = connections, recvfrom = connections (the client's close "
	  "reached the server), close = 2 x connections; no payload, no copies",
	  .micro = true, .no_threads = true, .no_amount = true, .net = true },

	/* microbenchmarks: files */
	{ "contention",
	  "N forked processes each read their own cold file at once, N = 1..--max-procs",
	  "forks = exits = N x rounds; page-cache pages added = N x rounds x the file's pages (every "
	  "file cold); file_read_copy = bytes read",
	  .site = { [SITE_FILE_READ_COPY] = EXP_SENT },
	  .micro = true, .no_threads = true, .no_amount = true },
	{ "filecache",
	  "re-read throughput of files of doubling size, to find the page cache's size",
	  "page-cache pages added by each size's re-reads = 0 (served from the cache); read count = "
	  "reads made; file_read_copy = bytes read",
	  .site = { [SITE_FILE_READ_COPY] = EXP_SENT, [SITE_FILE_WRITE_COPY] = EXP_ANY },
	  .micro = true, .no_threads = true, .no_amount = true },
	{ "fileread",
	  "sequential and random reads of a cold (pages dropped before every sample) or warm file, "
	  "or with O_DIRECT",
	  "page-cache pages added = the pages read (cold), 0 (warm, O_DIRECT); read/pread64 count = "
	  "reads made; file_read_copy = bytes read through the page cache; direct_io = bytes read with "
	  "O_DIRECT",
	  .site = { [SITE_FILE_READ_COPY] = EXP_SENT, [SITE_DIRECT_IO] = EXP_ANY },
	  .micro = true, .no_threads = true, .no_amount = true },
};
const int nr_workload_defs = sizeof(workload_defs) / sizeof(workload_defs[0]);

const struct workload_def *find_workload(const char *name)
{
	for (int i = 0; i < nr_workload_defs; i++)
		if (!strcmp(workload_defs[i].name, name))
			return &workload_defs[i];
	return NULL;
}

void workload_micro_options(const struct workload_def *d, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; d->micro && i < mb_nr_opt_docs && len < size; i++) {
		const struct mb_opt_doc *o = &mb_opt_docs[i];

		if (strcmp(o->workload, d->name))
			continue;
		len += snprintf(buf + len, size - len, "%s--%s%s%s", len ? ", " : "", o->name, *o->arg ? " " : "",
				o->arg);
	}
}
