// SPDX-License-Identifier: GPL-2.0
/*
 * Receive sites: recv_copy (TCP) and unix_recv_copy, the payload copied to user space by
 * skb_copy_datagram_iter() (tp_btf skb_copy_datagram_iovec, which also carries the zerocopy
 * notices; fexit or kprobe skb_copy_datagram_iter). UDP copies a linear skb with
 * copy_linear_skb(), inlined, with no event: udp_recv_copy is counted at the receive call's return
 * (sock.bpf.c).
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone): each site keeps all
 * its methods here, for every kernel.
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "filter.bpf.h"
#include "slots.bpf.h"
#include "zerocopy.bpf.h"
#include "tcpflows.bpf.h"

/*
 * The receive site of an skb copied to user space, by its socket (a Unix skb's is its sender's), or
 * NR_SITES. @btf: the skb is typed (tp_btf, fentry), its socket read with plain loads.
 */
static __always_inline __u32 recv_site(bool btf, const struct sock *sk)
{
	__u16 family;

	if (!sk)
		return NR_SITES;
	family = READ_FIELD(btf, sk, __sk_common.skc_family);
	if (family == ZCT_AF_UNIX)
		return SITE_UNIX_RECV_COPY;
	if ((family == ZCT_AF_INET || family == ZCT_AF_INET6) && READ_FIELD(btf, sk, sk_protocol) == ZCT_IPPROTO_TCP)
		return SITE_RECV_COPY;
	return NR_SITES;
}

/* A target's (@tgid's) copy of @len bytes of @skb to user space. */
static __always_inline void on_datagram_copy(bool btf, const struct sk_buff *skb, int len, __u32 method,
					     __u32 tgid)
{
	__u32 site;

	if (len <= 0)
		return;
	site = recv_site(btf, READ_FIELD(btf, skb, sk));
	if (site < NR_SITES && site_uses(site, method))
		record_inline(NULL, tgid, site, len, method);
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(skb_copy_datagram_iovec_btf, const struct sk_buff *skb, int len)
{
	__u32 tgid = current_tgid();

	if (!is_target_memo(tgid))
		return 0;
	if (len == 0) {
		on_zc_notice(skb, tgid);
		return 0;
	}
	on_datagram_copy(true, skb, len, METHOD_TP_BTF, tgid);
	return 0;
}

SEC("fexit/skb_copy_datagram_iter")
int BPF_PROG(skb_copy_datagram_iter_fexit, const struct sk_buff *skb, int offset, void *to,
	     int len)
{
	__u32 tgid = current_tgid();

	if ((int)func_ret(ctx) == 0 && is_target_memo(tgid))
		on_datagram_copy(true, skb, len, METHOD_FENTRY, tgid);
	return 0;
}

SEC("kprobe/skb_copy_datagram_iter")
int BPF_KPROBE(skb_copy_datagram_iter_kprobe, const struct sk_buff *skb, int offset, void *to,
	       int len)
{
	__u32 tgid = current_tgid();

	if (is_target_memo(tgid))
		on_datagram_copy(false, skb, len, METHOD_KPROBE, tgid);
	return 0;
}

/*
 * A splice out of a TCP socket hands its bytes to a pipe by reference, and copied_seq counts them
 * as read: where the census takes TCP's receive copies from the sockets' counters, what the call
 * moves from entry to return is not copied (tcp_call_begins()).
 */
SEC("fentry/tcp_splice_read")
int BPF_PROG(tcp_splice_read_fentry, struct socket *sock)
{
	tcp_call_begins(sock->sk, TCP_DERIVED_RECV);
	return 0;
}

SEC("fexit/tcp_splice_read")
int BPF_PROG(tcp_splice_read_fexit, struct socket *sock)
{
	tcp_call_ends(sock->sk, TCP_DERIVED_RECV);
	return 0;
}

/*
 * Unix receives at the socket type's own functions, which fire for Unix sockets alone (a seqpacket
 * receive goes through unix_dgram_recvmsg()): the census's, with no program on a TCP receive. What
 * a receive returns is what it copied, but with MSG_TRUNC (a datagram's whole length), MSG_OOB or
 * from the error queue, as at sock_recv_length.
 */
static __always_inline void on_unix_recv(long ret, int flags)
{
	__u32 tgid;

	if (ret <= 0 || flags & (ZCT_MSG_TRUNC | ZCT_MSG_OOB | ZCT_MSG_ERRQUEUE) ||
	    !(standalone_sites & 1U << SITE_UNIX_RECV_COPY) || !site_uses(SITE_UNIX_RECV_COPY, METHOD_FENTRY))
		return;
	tgid = current_tgid();
	if (is_target_memo(tgid))
		record_inline(NULL, tgid, SITE_UNIX_RECV_COPY, ret, METHOD_FENTRY);
}

SEC("fexit/unix_stream_recvmsg")
int BPF_PROG(unix_stream_recvmsg_fexit, struct socket *sock, struct msghdr *msg, size_t size, int flags)
{
	on_unix_recv(func_ret_after(ctx, 4), flags);
	return 0;
}

SEC("fexit/unix_dgram_recvmsg")
int BPF_PROG(unix_dgram_recvmsg_fexit, struct socket *sock, struct msghdr *msg, size_t size, int flags)
{
	on_unix_recv(func_ret_after(ctx, 4), flags);
	return 0;
}

/*
 * File sites: the return of the page-cache copy loops, by fexit or kretprobe. (The per-folio copy
 * helpers are in lib/, where Debian's kernels refuse kprobes.)
 */
