// SPDX-License-Identifier: GPL-2.0
/*
 * recv_copy: TCP payload copied to user space (tp_btf skb_copy_datagram_iovec, which also
 * carries the zerocopy notices; fexit or kprobe skb_copy_datagram_iter).
 * One part of zctrace.bpf.c's object (it includes every part after common.bpf.h): each
 * site keeps all its flavours here, for every kernel.
 */

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
	if ((int)func_ret(ctx) == 0)
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
