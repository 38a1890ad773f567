// SPDX-License-Identifier: GPL-2.0
/*
 * UDP and Unix socket sites counted at the I/O call's return, udp_send_copy, udp_recv_copy and
 * unix_send_copy, through iocall.bpf.h's syscall tracking, which calls sock_syscall_exit()
 * (sock.bpf.h), or where the socket returns the call's length. unix_recv_copy is in recv.bpf.c; a
 * UDP MSG_ZEROCOPY send's pins are zc_pin's, in send.bpf.c and zerocopy.bpf.c.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone): each site keeps all
 * its methods here, for every kernel.
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "filter.bpf.h"
#include "slots.bpf.h"
#include "sock.bpf.h"

/*
 * The same where fentry is allowed, at the protocols' own functions, which fire for their sockets
 * alone (sock_send_length fires for every socket's, and is 6.3+). A Unix seqpacket send goes
 * through unix_dgram_sendmsg(); an IPv6 socket's send to an IPv4-mapped address through
 * udp_sendmsg() from udpv6_sendmsg(), counted there.
 */
static __always_inline void on_proto_call(__u32 site, __u32 method, long ret, bool skip)
{
	__u32 tgid;

	if (ret <= 0 || skip || !(standalone_sites & 1U << site) || !site_uses(site, method))
		return;
	tgid = current_tgid();
	if (is_target_memo(tgid))
		record_inline(NULL, tgid, site, ret, method);
}

SEC("fexit/unix_stream_sendmsg")
int BPF_PROG(unix_stream_sendmsg_fexit)
{
	on_proto_call(SITE_UNIX_SEND_COPY, METHOD_FENTRY, func_ret(ctx), false);
	return 0;
}

SEC("fexit/unix_dgram_sendmsg")
int BPF_PROG(unix_dgram_sendmsg_fexit)
{
	on_proto_call(SITE_UNIX_SEND_COPY, METHOD_FENTRY, func_ret(ctx), false);
	return 0;
}

SEC("fexit/udp_sendmsg")
int BPF_PROG(udp_sendmsg_fexit, struct sock *sk, struct msghdr *msg)
{
	on_proto_call(SITE_UDP_SEND_COPY, METHOD_FENTRY, func_ret(ctx),
		      sk->__sk_common.skc_family == ZCT_AF_INET6 || (msg->msg_flags & ZCT_MSG_ZEROCOPY));
	return 0;
}

SEC("fexit/udpv6_sendmsg")
int BPF_PROG(udpv6_sendmsg_fexit, struct sock *sk, struct msghdr *msg)
{
	on_proto_call(SITE_UDP_SEND_COPY, METHOD_FENTRY, func_ret(ctx), msg->msg_flags & ZCT_MSG_ZEROCOPY);
	return 0;
}

/* (5.19+: no noblock argument before the flags) */
SEC("fexit/udp_recvmsg")
int BPF_PROG(udp_recvmsg_fexit, struct sock *sk, struct msghdr *msg, size_t len, int flags)
{
	on_proto_call(SITE_UDP_RECV_COPY, METHOD_FENTRY, func_ret(ctx), flags & (ZCT_MSG_TRUNC | ZCT_MSG_ERRQUEUE));
	return 0;
}

SEC("fexit/udpv6_recvmsg")
int BPF_PROG(udpv6_recvmsg_fexit, struct sock *sk, struct msghdr *msg, size_t len, int flags)
{
	on_proto_call(SITE_UDP_RECV_COPY, METHOD_FENTRY, func_ret(ctx), flags & (ZCT_MSG_TRUNC | ZCT_MSG_ERRQUEUE));
	return 0;
}

/* Unix sends where kprobes are allowed and fentry is not (a UDP send's flags and family need its entry) */
SEC("kretprobe/unix_stream_sendmsg")
int BPF_KRETPROBE(unix_stream_sendmsg_kretprobe, long ret)
{
	on_proto_call(SITE_UNIX_SEND_COPY, METHOD_KPROBE, ret, false);
	return 0;
}

SEC("kretprobe/unix_dgram_sendmsg")
int BPF_KRETPROBE(unix_dgram_sendmsg_kretprobe, long ret)
{
	on_proto_call(SITE_UNIX_SEND_COPY, METHOD_KPROBE, ret, false);
	return 0;
}
