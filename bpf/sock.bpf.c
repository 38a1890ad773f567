// SPDX-License-Identifier: GPL-2.0
/*
 * UDP and Unix socket sites counted at the I/O call's return, udp_send_copy, udp_recv_copy and
 * unix_send_copy, through file.bpf.c's syscall tracking, which calls sock_syscall_exit() below
 * (this file is included before it). unix_recv_copy is in recv.bpf.c; a UDP MSG_ZEROCOPY send's
 * pins are zc_pin's, in send.bpf.c and zerocopy.bpf.c.
 * One part of zctrace.bpf.c's object (it includes every part after common.bpf.h): each
 * site keeps all its flavours here, for every kernel.
 */

/* The site of a call moving bytes to (@to_user) or from user memory on a socket of @type, or NR_SITES. */
static __always_inline __u32 sock_site(__u8 type, bool to_user)
{
	if (type == FT_UDP)
		return to_user ? SITE_UDP_RECV_COPY : SITE_UDP_SEND_COPY;
	if ((type == FT_UNIX_STREAM || type == FT_UNIX_DGRAM) && !to_user)
		return SITE_UNIX_SEND_COPY;
	return NR_SITES;
}

static __always_inline bool by_return_of(__u32 site)
{
	return site < NR_SITES && (site_uses(site, METHOD_TP_BTF) || site_uses(site, METHOD_RAW_TP));
}

/* Whether a call on a descriptor of @type feeds a socket site from its return. */
static __always_inline bool sock_type_sites(__u8 type)
{
	return by_return_of(sock_site(type, false)) || by_return_of(sock_site(type, true));
}

/*
 * A UDP send with MSG_ZEROCOPY is starting on open file @f: its skbs may carry a target's pinned
 * pages from here on, and their owner is found at the device by their socket.
 */
static __always_inline void udp_zc_enter(struct file *f)
{
	struct socket *sock = BPF_CORE_READ(f, private_data);
	struct sock *sk = BPF_CORE_READ(sock, sk);

	saw_zc_send();
	if (sk)
		note_sock(sk, current_tgid());
}

/*
 * An I/O call on a UDP or Unix socket returns. What a send moved from user memory was copied into
 * skbs (ip_generic_getfrag(), skb_copy_datagram_from_iter()), one copy per datagram or message,
 * except what a UDP MSG_ZEROCOPY send pinned during the call (zc_pin's programs add that to
 * call->pinned); where zc_pin is not measured, such a send's bytes are left to the boundary
 * account's unattributed row rather than guessed. What a UDP receive returns was copied out of
 * its datagrams; one with MSG_TRUNC returns the datagrams' length instead, and is left unattributed.
 * A global function, checked once by the verifier: inlined, the syscall exit's paths outgrow it.
 */
__noinline int sock_syscall_exit(struct io_call *call, const struct moved *m)
{
	bool to_user, from_user;
	__u32 site, tgid = current_tgid();
	__u64 copied;

	if (!call || !m)
		return 0;
	to_user = call->kind == IO_READ || call->kind == IO_RECV || call->kind == IO_RECVMMSG;
	from_user = call->kind == IO_WRITE || call->kind == IO_SEND || call->kind == IO_SENDMMSG;
	site = sock_site(call->type, to_user);
	if (!m->bytes || m->unsized || !(to_user || from_user) || !by_return_of(site))
		return 0;
	if (site == SITE_UDP_SEND_COPY && (call->flags & ZCT_MSG_ZEROCOPY) &&
	    site_method[SITE_ZC_PIN] == METHOD_NONE)
		return 0;
	if (call->pinned > m->bytes) {
		/* pins of an earlier call, seen late, landed in this one (a queueing device) */
		if (counting())
			__sync_fetch_and_add(&misc.udp_pins_late, call->pinned - m->bytes);
		return 0;
	}
	copied = m->bytes - call->pinned;
	if (copied)
		record_n(tgid, site, copied, m->msgs);
	return 0;
}
