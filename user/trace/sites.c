/*
 * The probe table (sites.h): every copy site and every other figure, with its attach candidates
 * best first. A candidate names the BPF programs it autoloads with PROG(), which fails to compile
 * when the skeleton has no such program, and the attach points probes.c tries before load.
 */
#include <stddef.h>
#include "trace/sites.h"
#include "zctrace.skel.h"

/* A skeleton program's name; a name the skeleton lacks does not compile. */
#define PROG(name) (#name + 0 * sizeof(((struct zctrace_bpf *)0)->progs.name))

#define TP_SEND "tp_btf:tcp_sendmsg_locked", "tp_btf:sock_send_length"
/* the file sites follow each file syscall from entry to exit */
#define IO_PROGS PROG(sys_enter_btf), PROG(sys_exit_btf)
#define IO_NEEDS "tp_btf:sys_enter", "tp_btf:sys_exit"
/*
 * ... where tp_btf is refused: the exit by raw_tp, the entry by the syscalls probe's own sys_enter
 * (tp_btf or raw_tp; both would count every syscall twice), which raw_tp:sys_enter guarantees
 */
#define IO_RAW_PROGS PROG(sys_exit_raw)
#define IO_RAW_NEEDS "raw_tp:sys_enter", "raw_tp:sys_exit"
#define EXT4_PROGS PROG(ext4_da_write_end_btf), PROG(ext4_write_end_btf), PROG(ext4_journalled_write_end_btf)
#define EXT4_NEEDS "tp_btf:ext4_da_write_end", "tp_btf:ext4_write_end", "tp_btf:ext4_journalled_write_end"
/*
 * The file sites' io_uring requests, counted where they complete on every method (the probes
 * inside a copy see only the syscalls'): each method with them, then without (a kernel with no
 * io_uring). @with is the label's tail, @progs and @needs the program and its attach point, each
 * with its leading comma (URING_FILE_PROGS, URING_FILE_NEEDS), or all three empty.
 */
#define URING_FILE_PROGS , PROG(io_uring_complete_btf)
#define URING_FILE_NEEDS , "tp_btf:io_uring_complete"
#define URING_READS "io_uring read requests at tp_btf io_uring_complete"
#define URING_WRITES "io_uring write requests at tp_btf io_uring_complete"
#define WRITE_FENTRY(what, with, progs, needs)									\
		{ METHOD_FENTRY, "fexit generic_perform_write (inside " what ")" with,				\
		  { PROG(generic_perform_write_fexit), IO_PROGS progs },					\
		  { "fentry:generic_perform_write", IO_NEEDS needs } }
#define WRITE_KPROBE(what, with, progs, needs)									\
		{ METHOD_KPROBE, "kretprobe generic_perform_write (inside " what ")" with,			\
		  { PROG(generic_perform_write_kretprobe), IO_PROGS progs },					\
		  { "kprobe:generic_perform_write", IO_NEEDS needs } }
#define WRITE_EXT4(what, tail, with, progs, needs)								\
		{ METHOD_TP_BTF, "tp_btf ext4 write_end per folio (inside " what ")" tail with,			\
		  { EXT4_PROGS, IO_PROGS progs }, { EXT4_NEEDS, IO_NEEDS needs } }
#define TP_SEND_PROGS PROG(tcp_sendmsg_locked_btf), PROG(sock_send_length_btf)

/* a send call from its entry to its return: the bytes it moved, classified as the kernel chose */
#define SEND_FENTRY_PROGS PROG(tcp_sendmsg_locked_fentry), PROG(tcp_sendmsg_locked_fexit)
#define SEND_KPROBE_PROGS PROG(tcp_sendmsg_locked_kprobe), PROG(tcp_sendmsg_locked_kretprobe)
/* the pin, with the ubuf_info whose owner the copies on delivery are found by */
#define PIN_KPROBE_PROGS PROG(skb_zerocopy_iter_stream_kprobe), PROG(skb_zerocopy_iter_stream_kretprobe)
/* ... and UDP's, inside the send call (its ubuf_info noted there too) */
#define UDP_PIN_FENTRY_PROGS PROG(zerocopy_sg_from_iter_fexit)
#define UDP_PIN_KPROBE_PROGS PROG(zerocopy_sg_from_iter_kprobe), PROG(zerocopy_sg_from_iter_kretprobe)
/* io_uring's CQEs: the zerocopy notifications (SEND_ZC), and the bytes each request moved */
#define URING_CQES PROG(io_uring_complete_btf)
/* where the socket calls end (sock_sendmsg(), sock_recvmsg()) */
#define SOCK_LENGTH_PROGS PROG(sock_send_length_btf), PROG(sock_recv_length_btf)
#define SOCK_LENGTH_NEEDS "tp_btf:sock_send_length", "tp_btf:sock_recv_length"
/* zerocopy skbs handed to a device (their owners noted there) and arriving at one */
#define ZC_PATH_PROGS PROG(net_dev_start_xmit_btf), PROG(netif_receive_skb_btf)
#define ZC_PATH_NEEDS "tp_btf:net_dev_start_xmit", "tp_btf:netif_receive_skb"

/* the census's TCP counters (tcpcount.bpf.c) */
#define TCP_COUNTER_PROGS PROG(tcp_sweep_iter), PROG(tcp_state_btf), PROG(tcp_destroy_btf)
#define TCP_COUNTER_NEEDS "tp_btf:inet_sock_set_state", "tp_btf:tcp_destroy_sock"

/* the receive sites share skb_copy_datagram_iter's programs, each its own sockets' copies */
#define RECV_PER_SKB(what)											\
		{ METHOD_FENTRY, "fexit skb_copy_datagram_iter (" what " payload)",				\
		  { PROG(skb_copy_datagram_iter_fexit) }, { "fentry:skb_copy_datagram_iter" } },		\
		{ METHOD_KPROBE, "kprobe skb_copy_datagram_iter (" what " payload)",				\
		  { PROG(skb_copy_datagram_iter_kprobe) }, { "kprobe:skb_copy_datagram_iter" } },		\
		{ METHOD_TP_BTF, "tp_btf skb_copy_datagram_iovec (" what " payload)",				\
		  { PROG(skb_copy_datagram_iovec_btf) }, { "tp_btf:skb_copy_datagram_iovec" } }
/* the census's: once per call, where the socket returns what it copied (6.3+) */
#define RECV_SOCK_LENGTH(sockets)										\
		{ METHOD_TP_BTF, "tp_btf sock_recv_length of receive/read calls on " sockets " "		\
		  "(not with MSG_TRUNC or MSG_OOB, nor from the error queue)",					\
		  { PROG(sock_recv_length_btf) }, { "tp_btf:sock_recv_length" }, .standalone = true }
const struct probe_site probe_sites[NR_PROBES] = {
	[PROBE_TARGETS] = { "targets", .required = true, .cands = {
		{ METHOD_TP_BTF, "tp_btf sched_process_fork/exit", { PROG(fork_btf), PROG(exit_btf) },
		  { "tp_btf:sched_process_fork", "tp_btf:sched_process_exit" } },
		{ METHOD_RAW_TP, "raw_tp sched_process_fork/exit", { PROG(fork_raw), PROG(exit_raw) },
		  { "raw_tp:sched_process_fork", "raw_tp:sched_process_exit" } },
	} },
	[SITE_SEND_COPY] = { "send_copy", .cpu_copy = true,
		.cost_fns = { "tcp_sendmsg_locked" }, .cands = {
		{ METHOD_FENTRY, "fentry/fexit tcp_sendmsg_locked (bytes of each copying call)",
		  { SEND_FENTRY_PROGS }, { "fentry:tcp_sendmsg_locked" } },
		{ METHOD_KPROBE, "kprobe/kretprobe tcp_sendmsg_locked (bytes of each copying call)",
		  { SEND_KPROBE_PROGS }, { "kprobe:tcp_sendmsg_locked" } },
		{ METHOD_TP_BTF, "tp_btf sock_send_length (copying calls) + tcp_sendmsg_locked per-iteration (the others)",
		  { TP_SEND_PROGS }, { TP_SEND } },
		/* the census's: no program on a send (tracer.c holds zc_pin and splice_ref to theirs) */
		{ METHOD_ITER, "the sockets' own counters (write_seq), less the pins and page references "
		  "zc_pin and splice_ref count (fexit skb_zerocopy_iter_stream, splice_to_socket)",
		  { TCP_COUNTER_PROGS, PROG(splice_to_socket_fentry) }, { TCP_COUNTER_NEEDS,
		  "fentry:skb_zerocopy_iter_stream", "fentry:splice_to_socket" }, .standalone = true,
		  .from_counters = true },
		/* ... before 6.5 */
		{ METHOD_ITER, "the sockets' own counters (write_seq), less the pins and page references "
		  "zc_pin and splice_ref count (fexit skb_zerocopy_iter_stream, do_tcp_sendpages)",
		  { TCP_COUNTER_PROGS, PROG(do_tcp_sendpages_fentry) }, { TCP_COUNTER_NEEDS,
		  "fentry:skb_zerocopy_iter_stream", "fentry:do_tcp_sendpages" }, .standalone = true,
		  .from_counters = true },
	} },
	[SITE_ZC_PIN] = { "zc_pin", .cands = {
		{ METHOD_FENTRY, "fexit skb_zerocopy_iter_stream (TCP), __zerocopy_sg_from_iter (UDP)",
		  { PROG(skb_zerocopy_iter_stream_fexit), UDP_PIN_FENTRY_PROGS },
		  { "fentry:skb_zerocopy_iter_stream", "fentry:__zerocopy_sg_from_iter" } },
		{ METHOD_KPROBE, "kretprobe skb_zerocopy_iter_stream (TCP), __zerocopy_sg_from_iter (UDP)",
		  { PIN_KPROBE_PROGS, UDP_PIN_KPROBE_PROGS },
		  { "kprobe:skb_zerocopy_iter_stream", "kprobe:__zerocopy_sg_from_iter" } },
		{ METHOD_TP_BTF, "tp_btf tcp_sendmsg_locked (TCP MSG_ZEROCOPY iterations), net_dev_start_xmit "
		  "(UDP zerocopy skbs)", { TP_SEND_PROGS, ZC_PATH_PROGS }, { TP_SEND, ZC_PATH_NEEDS } },
	} },
	[SITE_SPLICE_REF] = { "splice_ref", .cands = {
		{ METHOD_FENTRY, "fexit skb_splice_from_iter (the socket noted at fentry tcp_sendmsg_locked)",
		  { PROG(skb_splice_from_iter_fexit), PROG(tcp_sendmsg_locked_fentry) },
		  { "fentry:skb_splice_from_iter", "fentry:tcp_sendmsg_locked" } },
		/* before 6.5 sendfile and splice reach TCP through ->sendpage */
		{ METHOD_FENTRY, "fexit do_tcp_sendpages", { PROG(do_tcp_sendpages_fexit) },
		  { "fentry:do_tcp_sendpages" } },
		{ METHOD_KPROBE, "kretprobe skb_splice_from_iter (the socket noted at kprobe tcp_sendmsg_locked)",
		  { PROG(skb_splice_from_iter_kretprobe), PROG(tcp_sendmsg_locked_kprobe) },
		  { "kprobe:skb_splice_from_iter", "kprobe:tcp_sendmsg_locked" } },
		{ METHOD_KPROBE, "kprobe/kretprobe do_tcp_sendpages",
		  { PROG(do_tcp_sendpages_kprobe), PROG(do_tcp_sendpages_kretprobe) },
		  { "kprobe:do_tcp_sendpages" } },
		{ METHOD_TP_BTF, "tp_btf tcp_sendmsg_locked (MSG_SPLICE_PAGES iterations)", { TP_SEND_PROGS },
		  { TP_SEND } },
		/* the census's: TCP's alone, with no program on a send (6.5+) */
		{ METHOD_FENTRY, "fexit splice_to_socket (TCP sockets whose route has scatter-gather)",
		  { PROG(splice_to_socket_fentry), PROG(splice_to_socket_fexit) }, { "fentry:splice_to_socket" },
		  .standalone = true },
	} },
	/* per skb copied, whichever API pinned it: the owner is the ubuf_info's, noted at the pin */
	[SITE_DEFERRED_COPY] = { "deferred_copy", .cpu_copy = true,
		.cost_fns = { "skb_copy_ubufs" }, .cands = {
		{ METHOD_FENTRY, "fentry skb_copy_ubufs (each zerocopy skb copied; owner noted at fexit "
		  "skb_zerocopy_iter_stream, __zerocopy_sg_from_iter)",
		  { PROG(skb_copy_ubufs_fentry), PROG(skb_zerocopy_iter_stream_fexit), UDP_PIN_FENTRY_PROGS },
		  { "fentry:skb_copy_ubufs", "fentry:skb_zerocopy_iter_stream", "fentry:__zerocopy_sg_from_iter" } },
		{ METHOD_KPROBE, "kprobe skb_copy_ubufs (each zerocopy skb copied; owner noted at kprobe "
		  "skb_zerocopy_iter_stream, __zerocopy_sg_from_iter)",
		  { PROG(skb_copy_ubufs_kprobe), PIN_KPROBE_PROGS, UDP_PIN_KPROBE_PROGS },
		  { "kprobe:skb_copy_ubufs", "kprobe:skb_zerocopy_iter_stream", "kprobe:__zerocopy_sg_from_iter" } },
		{ METHOD_TP_BTF, "tp_btf netif_receive_skb (zerocopy skbs delivered, each copied there by "
		  "skb_orphan_frags_rx; owner noted at net_dev_start_xmit)", { ZC_PATH_PROGS, TP_SEND_PROGS },
		  { ZC_PATH_NEEDS, TP_SEND } },
	} },
	[SITE_TX_COPY] = { "tx_copy", .cpu_copy = true,
		/* validate_xmit_skb(): the linearizing pull on transmit (a receive's header pulls are not) */
		.cost_fns = { "skb_segment", "validate_xmit_skb" }, .cands = {
		{ METHOD_FENTRY, "fexit skb_segment + fentry __pskb_pull_tail (zerocopy skbs cut or linearized "
		  "for a device without scatter-gather; owner noted at fexit skb_zerocopy_iter_stream, "
		  "__zerocopy_sg_from_iter)",
		  { PROG(skb_segment_fexit), PROG(pskb_pull_tail_fentry), PROG(skb_zerocopy_iter_stream_fexit),
		    UDP_PIN_FENTRY_PROGS },
		  { "fentry:skb_segment", "fentry:__pskb_pull_tail", "fentry:skb_zerocopy_iter_stream",
		    "fentry:__zerocopy_sg_from_iter" } },
		{ METHOD_KPROBE, "kprobe skb_segment + kprobe __pskb_pull_tail (zerocopy skbs cut or linearized "
		  "for a device without scatter-gather; owner noted at kprobe skb_zerocopy_iter_stream, "
		  "__zerocopy_sg_from_iter)",
		  { PROG(skb_segment_kprobe), PROG(pskb_pull_tail_kprobe), PIN_KPROBE_PROGS, UDP_PIN_KPROBE_PROGS },
		  { "kprobe:skb_segment", "kprobe:__pskb_pull_tail", "kprobe:skb_zerocopy_iter_stream",
		    "kprobe:__zerocopy_sg_from_iter" } },
	} },
	[SITE_RECV_COPY] = { "recv_copy", .cpu_copy = true,
		.cost_fns = { "tcp_recvmsg_locked", "tcp_recvmsg" }, .cands = {
		RECV_PER_SKB("TCP"), RECV_SOCK_LENGTH("TCP sockets"),
		/* the census's: no program on a receive (tracer.c takes it before the others) */
		{ METHOD_ITER, "the sockets' own counters (copied_seq), less fexit tcp_splice_read's bytes",
		  { TCP_COUNTER_PROGS, PROG(tcp_splice_read_fentry), PROG(tcp_splice_read_fexit) },
		  { TCP_COUNTER_NEEDS, "fentry:tcp_splice_read" }, .standalone = true, .from_counters = true } } },
	[SITE_UNIX_RECV_COPY] = { "unix_recv_copy", .cpu_copy = true,
		.cost_fns = { "unix_stream_read_generic", "unix_stream_read_actor", "unix_dgram_recvmsg" }, .cands = {
		RECV_PER_SKB("Unix socket"),
		/* the census's: at functions no TCP receive passes */
		{ METHOD_FENTRY, "fexit unix_stream_recvmsg, unix_dgram_recvmsg (not with MSG_TRUNC or MSG_OOB, "
		  "nor from the error queue)", { PROG(unix_stream_recvmsg_fexit), PROG(unix_dgram_recvmsg_fexit) },
		  { "fentry:unix_stream_recvmsg", "fentry:unix_dgram_recvmsg" }, .standalone = true },
		RECV_SOCK_LENGTH("Unix sockets") } },
	/*
	 * UDP copies a linear skb with copy_linear_skb(), an inline with no event, and every byte a UDP
	 * or Unix send returns was copied into its skbs (but pins): counted at the call's return, or,
	 * without the syscall tracepoints (the census), where the socket returns it (6.3+)
	 */
	[SITE_UDP_RECV_COPY] = { "udp_recv_copy", .cpu_copy = true,
		.cost_fns = { "udp_recvmsg", "udpv6_recvmsg" }, .cands = {
		{ METHOD_TP_BTF, "tp_btf sys_exit of receive/read calls on UDP sockets (not with MSG_TRUNC)",
		  { IO_PROGS }, { IO_NEEDS } },
		{ METHOD_RAW_TP, "raw_tp sys_exit of receive/read calls on UDP sockets (not with MSG_TRUNC)",
		  { IO_RAW_PROGS }, { IO_RAW_NEEDS } },
		{ METHOD_FENTRY, "fexit udp_recvmsg, udpv6_recvmsg (not with MSG_TRUNC)",
		  { PROG(udp_recvmsg_fexit), PROG(udpv6_recvmsg_fexit) }, { "fentry:udp_recvmsg", "fentry:udpv6_recvmsg" },
		  .standalone = true },
		{ METHOD_TP_BTF, "tp_btf sock_recv_length of receive/read calls on UDP sockets (not with MSG_TRUNC)",
		  { SOCK_LENGTH_PROGS }, { SOCK_LENGTH_NEEDS }, .standalone = true } } },
	[SITE_UDP_SEND_COPY] = { "udp_send_copy", .cpu_copy = true,
		.cost_fns = { "udp_sendmsg", "udpv6_sendmsg" }, .cands = {
		{ METHOD_TP_BTF, "tp_btf sys_exit of send/write calls on UDP sockets, less what MSG_ZEROCOPY "
		  "pinned (zc_pin)", { IO_PROGS }, { IO_NEEDS } },
		{ METHOD_RAW_TP, "raw_tp sys_exit of send/write calls on UDP sockets, less what MSG_ZEROCOPY "
		  "pinned (zc_pin)", { IO_RAW_PROGS }, { IO_RAW_NEEDS } },
		{ METHOD_FENTRY, "fexit udp_sendmsg, udpv6_sendmsg (not MSG_ZEROCOPY sends)",
		  { PROG(udp_sendmsg_fexit), PROG(udpv6_sendmsg_fexit) }, { "fentry:udp_sendmsg", "fentry:udpv6_sendmsg" },
		  .standalone = true },
		{ METHOD_TP_BTF, "tp_btf sock_send_length of send/write calls on UDP sockets (not MSG_ZEROCOPY sends)",
		  { SOCK_LENGTH_PROGS }, { SOCK_LENGTH_NEEDS }, .standalone = true } } },
	[SITE_UNIX_SEND_COPY] = { "unix_send_copy", .cpu_copy = true,
		.cost_fns = { "unix_stream_sendmsg", "unix_dgram_sendmsg", "unix_seqpacket_sendmsg" }, .cands = {
		{ METHOD_TP_BTF, "tp_btf sys_exit of send/write calls on Unix sockets", { IO_PROGS }, { IO_NEEDS } },
		{ METHOD_RAW_TP, "raw_tp sys_exit of send/write calls on Unix sockets", { IO_RAW_PROGS },
		  { IO_RAW_NEEDS } },
		{ METHOD_FENTRY, "fexit unix_stream_sendmsg, unix_dgram_sendmsg",
		  { PROG(unix_stream_sendmsg_fexit), PROG(unix_dgram_sendmsg_fexit) },
		  { "fentry:unix_stream_sendmsg", "fentry:unix_dgram_sendmsg" }, .standalone = true },
		{ METHOD_KPROBE, "kretprobe unix_stream_sendmsg, unix_dgram_sendmsg",
		  { PROG(unix_stream_sendmsg_kretprobe), PROG(unix_dgram_sendmsg_kretprobe) },
		  { "kprobe:unix_stream_sendmsg", "kprobe:unix_dgram_sendmsg" }, .standalone = true },
		{ METHOD_TP_BTF, "tp_btf sock_send_length of send/write calls on Unix sockets", { SOCK_LENGTH_PROGS },
		  { SOCK_LENGTH_NEEDS }, .standalone = true } } },
	[SITE_USER_COPY] = { "user_copy", .cpu_copy = true, .cands = {
		{ METHOD_USDT, "USDT zctrace:user_copy", { PROG(user_copy_usdt), PROG(phase_begin_usdt), PROG(phase_end_usdt), PROG(step_usdt) },
		  { "usdt" } },
	} },
	[SITE_DIRECT_IO] = { "direct_io", .cands = {
		{ METHOD_TP_BTF, "tp_btf sys_exit of read/write syscalls on O_DIRECT regular files; "
		  "their io_uring requests at tp_btf io_uring_complete",
		  { IO_PROGS URING_FILE_PROGS }, { IO_NEEDS URING_FILE_NEEDS } },
		{ METHOD_TP_BTF, "tp_btf sys_exit of read/write syscalls on O_DIRECT regular files",
		  { IO_PROGS }, { IO_NEEDS } },
		{ METHOD_RAW_TP, "raw_tp sys_exit of read/write syscalls on O_DIRECT regular files",
		  { IO_RAW_PROGS }, { IO_RAW_NEEDS } },
	} },
	[SITE_FILE_READ_COPY] = { "file_read_copy", .cpu_copy = true,
		.cost_fns = { "filemap_read", "generic_file_buffered_read" }, .cands = {
		{ METHOD_FENTRY, "fexit filemap_read (inside read syscalls on files); " URING_READS,
		  { PROG(filemap_read_fexit), IO_PROGS URING_FILE_PROGS },
		  { "fentry:filemap_read", IO_NEEDS URING_FILE_NEEDS } },
		{ METHOD_FENTRY, "fexit filemap_read (inside read syscalls on files)",
		  { PROG(filemap_read_fexit), IO_PROGS }, { "fentry:filemap_read", IO_NEEDS } },
		{ METHOD_KPROBE, "kretprobe filemap_read (inside read syscalls on files); " URING_READS,
		  { PROG(filemap_read_kretprobe), IO_PROGS URING_FILE_PROGS },
		  { "kprobe:filemap_read", IO_NEEDS URING_FILE_NEEDS } },
		{ METHOD_KPROBE, "kretprobe filemap_read (inside read syscalls on files)",
		  { PROG(filemap_read_kretprobe), IO_PROGS }, { "kprobe:filemap_read", IO_NEEDS } },
		{ METHOD_TP_BTF, "tp_btf sys_exit of read/pread64/readv on buffered regular files; " URING_READS,
		  { IO_PROGS URING_FILE_PROGS }, { IO_NEEDS URING_FILE_NEEDS } },
		{ METHOD_TP_BTF, "tp_btf sys_exit of read/pread64/readv on buffered regular files",
		  { IO_PROGS }, { IO_NEEDS } },
		/* the census, without the syscall tracepoints */
		{ METHOD_FENTRY, "fexit filemap_read into user memory (reads of files)",
		  { PROG(filemap_read_fexit) }, { "fentry:filemap_read" }, .standalone = true },
	} },
	[SITE_FILE_WRITE_COPY] = { "file_write_copy", .cpu_copy = true,
		/* kernel_copy where a splice frame is above it: costwalk.h */
		.cost_fns = { "generic_perform_write" }, .cands = {
		WRITE_FENTRY("write syscalls", "; " URING_WRITES, URING_FILE_PROGS, URING_FILE_NEEDS),
		WRITE_FENTRY("write syscalls", "", , ),
		WRITE_KPROBE("write syscalls", "; " URING_WRITES, URING_FILE_PROGS, URING_FILE_NEEDS),
		WRITE_KPROBE("write syscalls", "", , ),
		WRITE_EXT4("write syscalls", "; other filesystems: the syscall's return", "; " URING_WRITES,
			   URING_FILE_PROGS, URING_FILE_NEEDS),
		WRITE_EXT4("write syscalls", "; other filesystems: the syscall's return", "", , ),
		{ METHOD_TP_BTF, "tp_btf sys_exit of write/pwrite64/writev on buffered regular files; " URING_WRITES,
		  { IO_PROGS URING_FILE_PROGS }, { IO_NEEDS URING_FILE_NEEDS } },
		{ METHOD_TP_BTF, "tp_btf sys_exit of write/pwrite64/writev on buffered regular files",
		  { IO_PROGS }, { IO_NEEDS } },
		{ METHOD_FENTRY, "fexit generic_perform_write from user memory (writes of files)",
		  { PROG(generic_perform_write_fexit) }, { "fentry:generic_perform_write" }, .standalone = true },
	} },
	[SITE_PIPE_WRITE_COPY] = { "pipe_write_copy", .cpu_copy = true,
		.cost_fns = { "pipe_write", "anon_pipe_write" }, .cands = {
		{ METHOD_FENTRY, "fexit pipe_write (write/writev into pipes and FIFOs)",
		  { PROG(pipe_write_fexit) }, { "fentry:pipe_write" } },
		{ METHOD_KPROBE, "kretprobe pipe_write (write/writev into pipes and FIFOs)",
		  { PROG(pipe_write_kretprobe) }, { "kprobe:pipe_write" } },
		{ METHOD_TP_BTF, "tp_btf sys_exit of write/writev on pipes and FIFOs", { IO_PROGS }, { IO_NEEDS } },
		{ METHOD_RAW_TP, "raw_tp sys_exit of write/writev on pipes and FIFOs", { IO_RAW_PROGS }, { IO_RAW_NEEDS } },
	} },
	/* vmsplice, splice, tee and sendfile into a pipe: what the syscall returned, on every kernel */
	[SITE_PIPE_REF] = { "pipe_ref", .cands = {
		{ METHOD_TP_BTF, "tp_btf sys_exit of vmsplice/splice/tee/sendfile into a pipe",
		  { IO_PROGS }, { IO_NEEDS } },
		{ METHOD_RAW_TP, "raw_tp sys_exit of vmsplice/splice/tee/sendfile into a pipe",
		  { IO_RAW_PROGS }, { IO_RAW_NEEDS } },
	} },
	/* vmsplice() out of a pipe copies without pipe_read(): its return, on every method */
	[SITE_PIPE_READ_COPY] = { "pipe_read_copy", .cpu_copy = true,
		.cost_fns = { "pipe_read", "anon_pipe_read", "pipe_to_user", "vmsplice_to_user" }, .cands = {
		{ METHOD_FENTRY, "fexit pipe_read (read/readv); vmsplice out of a pipe: sys_exit",
		  { PROG(pipe_read_fexit), IO_PROGS }, { "fentry:pipe_read", IO_NEEDS } },
		{ METHOD_KPROBE, "kretprobe pipe_read (read/readv); vmsplice out of a pipe: sys_exit",
		  { PROG(pipe_read_kretprobe), IO_PROGS }, { "kprobe:pipe_read", IO_NEEDS } },
		{ METHOD_TP_BTF, "tp_btf sys_exit of read/readv/vmsplice out of pipes and FIFOs",
		  { IO_PROGS }, { IO_NEEDS } },
		{ METHOD_RAW_TP, "raw_tp sys_exit of read/readv/vmsplice out of pipes and FIFOs",
		  { IO_RAW_PROGS }, { IO_RAW_NEEDS } },
		{ METHOD_FENTRY, "fexit pipe_read (read/readv; not vmsplice out of a pipe)", { PROG(pipe_read_fexit) },
		  { "fentry:pipe_read" }, .standalone = true },
		{ METHOD_KPROBE, "kretprobe pipe_read (read/readv; not vmsplice out of a pipe)",
		  { PROG(pipe_read_kretprobe) }, { "kprobe:pipe_read" }, .standalone = true },
	} },
	[SITE_KERNEL_COPY] = { "kernel_copy", .cpu_copy = true, .cands = {
		WRITE_FENTRY("copy_file_range/sendfile/splice to a file", "", , ),
		WRITE_KPROBE("copy_file_range/sendfile/splice to a file", "", , ),
		WRITE_EXT4("copy_file_range/sendfile/splice to a file", "", "", , ),
		{ METHOD_FENTRY, "fexit generic_perform_write from kernel memory (splice, sendfile, copy_file_range, "
		  "kernel writes)", { PROG(generic_perform_write_fexit) }, { "fentry:generic_perform_write" },
		  .standalone = true },
	} },
	[PROBE_PAGE_CACHE] = { "page_cache", .cands = {
		{ METHOD_TP_BTF, "tp_btf mm_filemap_add_to_page_cache", { PROG(filemap_add_btf) },
		  { "tp_btf:mm_filemap_add_to_page_cache" } },
		{ METHOD_RAW_TP, "raw_tp mm_filemap_add_to_page_cache (before 5.16's folios, a page at a time)",
		  { PROG(filemap_add_raw) }, { "raw_tp:mm_filemap_add_to_page_cache" } },
	} },
	/* each method with io_uring's notifications, then without (a kernel with no io_uring) */
	[PROBE_ZC_NOTICES] = { "zc_notices", .cands = {
		{ METHOD_FENTRY, "tp_btf skb_copy_datagram_iovec (error queue) + io_uring_complete (SEND_ZC "
		  "notifications) + fentry/fexit tcp_sendmsg_locked",
		  { PROG(skb_copy_datagram_iovec_btf), URING_CQES, SEND_FENTRY_PROGS },
		  { "tp_btf:skb_copy_datagram_iovec", "tp_btf:io_uring_complete", "fentry:tcp_sendmsg_locked" } },
		{ METHOD_FENTRY, "tp_btf skb_copy_datagram_iovec (error queue) + fentry/fexit tcp_sendmsg_locked",
		  { PROG(skb_copy_datagram_iovec_btf), SEND_FENTRY_PROGS },
		  { "tp_btf:skb_copy_datagram_iovec", "fentry:tcp_sendmsg_locked" } },
		{ METHOD_KPROBE, "tp_btf skb_copy_datagram_iovec (error queue) + io_uring_complete (SEND_ZC "
		  "notifications) + kprobe/kretprobe tcp_sendmsg_locked",
		  { PROG(skb_copy_datagram_iovec_btf), URING_CQES, SEND_KPROBE_PROGS },
		  { "tp_btf:skb_copy_datagram_iovec", "tp_btf:io_uring_complete", "kprobe:tcp_sendmsg_locked" } },
		{ METHOD_KPROBE, "tp_btf skb_copy_datagram_iovec (error queue) + kprobe/kretprobe tcp_sendmsg_locked",
		  { PROG(skb_copy_datagram_iovec_btf), SEND_KPROBE_PROGS },
		  { "tp_btf:skb_copy_datagram_iovec", "kprobe:tcp_sendmsg_locked" } },
		{ METHOD_TP_BTF, "tp_btf skb_copy_datagram_iovec (error queue) + io_uring_complete (SEND_ZC "
		  "notifications) + tcp_sendmsg_locked",
		  { PROG(skb_copy_datagram_iovec_btf), URING_CQES, TP_SEND_PROGS },
		  { "tp_btf:skb_copy_datagram_iovec", "tp_btf:io_uring_complete", TP_SEND } },
		{ METHOD_TP_BTF, "tp_btf skb_copy_datagram_iovec (error queue) + tcp_sendmsg_locked",
		  { PROG(skb_copy_datagram_iovec_btf), TP_SEND_PROGS },
		  { "tp_btf:skb_copy_datagram_iovec", TP_SEND } },
	} },
	[PROBE_ZC_PATH] = { "zc_path", .cands = {
		{ METHOD_FENTRY, "tp_btf net_dev_start_xmit + netif_receive_skb, senders by fentry tcp_sendmsg_locked",
		  { ZC_PATH_PROGS, SEND_FENTRY_PROGS }, { ZC_PATH_NEEDS, "fentry:tcp_sendmsg_locked" } },
		{ METHOD_KPROBE, "tp_btf net_dev_start_xmit + netif_receive_skb, senders by kprobe tcp_sendmsg_locked",
		  { ZC_PATH_PROGS, SEND_KPROBE_PROGS }, { ZC_PATH_NEEDS, "kprobe:tcp_sendmsg_locked" } },
		{ METHOD_TP_BTF, "tp_btf net_dev_start_xmit + netif_receive_skb (zerocopy skbs by device)",
		  { ZC_PATH_PROGS, TP_SEND_PROGS }, { ZC_PATH_NEEDS, TP_SEND } },
	} },
	[PROBE_SCHED] = { "sched", .cands = {
		{ METHOD_TP_BTF, "tp_btf sched_switch + sched_process_exec", { PROG(switch_btf), PROG(exec_btf) },
		  { "tp_btf:sched_switch", "tp_btf:sched_process_exec" } },
		{ METHOD_RAW_TP, "raw_tp sched_switch + sched_process_exec", { PROG(switch_raw), PROG(exec_raw) },
		  { "raw_tp:sched_switch", "raw_tp:sched_process_exec" } },
	} },
	[PROBE_SYSCALLS] = { "syscalls", .cands = {
		{ METHOD_TP_BTF, "tp_btf sys_enter", { PROG(sys_enter_btf) }, { "tp_btf:sys_enter" } },
		{ METHOD_RAW_TP, "raw_tp sys_enter", { PROG(sys_enter_raw) }, { "raw_tp:sys_enter" } },
	} },
	[PROBE_PAGE_FAULTS] = { "page_faults", .cands = {
		{ METHOD_TP_BTF, "tp_btf page_fault_user/kernel", { PROG(fault_user_btf), PROG(fault_kernel_btf) },
		  { "tp_btf:page_fault_user", "tp_btf:page_fault_kernel" } },
		{ METHOD_RAW_TP, "raw_tp page_fault_user/kernel", { PROG(fault_user_raw), PROG(fault_kernel_raw) },
		  { "raw_tp:page_fault_user", "raw_tp:page_fault_kernel" } },
	} },
	[PROBE_BOUNDARY] = { "boundary", .cands = {
		/* 6.3+: a socket call's socket notes its type where it returns the length, for the exit */
		{ METHOD_TP_BTF, "tp_btf sys_enter/sys_exit of read, write, send and receive syscalls, "
		  "sock_send_length/sock_recv_length (socket calls) + io_uring_complete (their io_uring requests)",
		  { IO_PROGS, SOCK_LENGTH_PROGS, URING_CQES }, { IO_NEEDS, SOCK_LENGTH_NEEDS, "tp_btf:io_uring_complete" } },
		{ METHOD_TP_BTF, "tp_btf sys_enter/sys_exit of read, write, send and receive syscalls, "
		  "sock_send_length/sock_recv_length (socket calls)",
		  { IO_PROGS, SOCK_LENGTH_PROGS }, { IO_NEEDS, SOCK_LENGTH_NEEDS } },
		{ METHOD_TP_BTF, "tp_btf sys_enter/sys_exit of read, write, send and receive syscalls + "
		  "io_uring_complete (their io_uring requests)", { IO_PROGS, URING_CQES },
		  { IO_NEEDS, "tp_btf:io_uring_complete" } },
		/* a kernel with no io_uring */
		{ METHOD_TP_BTF, "tp_btf sys_enter/sys_exit of read, write, send and receive syscalls",
		  { IO_PROGS }, { IO_NEEDS } },
		{ METHOD_RAW_TP, "raw_tp sys_enter/sys_exit of read, write, send and receive syscalls",
		  { IO_RAW_PROGS }, { IO_RAW_NEEDS } },
	} },
	/* the census alone: each thread's counters in the thread, no hash update per copy */
	[PROBE_CENSUS] = { "census", .cands = {
		{ METHOD_ITER, "per-thread counters in task storage, read by a task iterator; last ones at exit",
		  { PROG(census_iter) } },
	} },
	/* what each copy costs: samples of the targets' stacks on every CPU (user/trace/cost.c) */
	[PROBE_COST] = { "cost", .cands = {
		{ METHOD_PERF_EVENT, "perf_event cpu-clock on every CPU, kernel stacks placed by copy site",
		  { PROG(cost_sample) }, { "perf:cpu-clock" } },
	} },
	/* each process's TCP bytes from its sockets' counters: no program on a send or a receive */
	[PROBE_TCP_COUNTERS] = { "tcp_counters", .cands = {
		{ METHOD_ITER, "tcp_sock byte counters in socket storage: a task_file iterator at each read, "
		  "tp_btf inet_sock_set_state and tcp_destroy_sock", { TCP_COUNTER_PROGS }, { TCP_COUNTER_NEEDS } },
	} },
	/* each call of the copy routines timed from entry to return, placed as the sampler places a sample */
	[PROBE_COPY_TIME] = { "copy_time", .cands = {
		{ METHOD_FENTRY, "fentry/fexit skb_copy_datagram_iter (receive copies) + skb_copy_ubufs (deferred "
		  "copies) + tp_btf sched_switch",
		  { PROG(skb_copy_datagram_iter_time_in), PROG(skb_copy_datagram_iter_time_out),
		    PROG(skb_copy_ubufs_time_in), PROG(skb_copy_ubufs_time_out), PROG(copy_time_switch) },
		  { "fentry:skb_copy_datagram_iter", "fentry:skb_copy_ubufs", "tp_btf:sched_switch" } },
	} },
};

_Static_assert(sizeof(probe_sites) / sizeof(probe_sites[0]) == NR_PROBES, "one row per probe site");

const char *probe_name(int id)
{
	return id >= 0 && id < NR_PROBES && probe_sites[id].name ? probe_sites[id].name : "?";
}
