/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What sock.bpf.c shares: the UDP and Unix socket sites counted at an I/O call's return
 * (iocall.bpf.h's syscall tracking closes a socket call through sock_syscall_exit()) or where a
 * socket returns a call's length (count_at_length(), sock_send_length and sock_recv_length).
 */
#ifndef ZCTRACE_SOCK_BPF_H
#define ZCTRACE_SOCK_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "slots.bpf.h"
#include "boundary.bpf.h"

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
	return site < NR_SITES && !(standalone_sites & 1U << site) &&
	       (site_uses(site, METHOD_TP_BTF) || site_uses(site, METHOD_RAW_TP));
}

/*
 * The site of what a socket of @type returns to a receive (@to_user) or a send, counted where it
 * returns it: sock_site()'s, and the TCP and Unix receives, which the census counts once per call
 * there rather than once per skb copied (skb_copy_datagram_iovec).
 */
static __always_inline __u32 length_site(__u8 type, bool to_user)
{
	if (to_user && type == FT_TCP)
		return SITE_RECV_COPY;
	if (to_user && (type == FT_UNIX_STREAM || type == FT_UNIX_DGRAM))
		return SITE_UNIX_RECV_COPY;
	return sock_site(type, to_user);
}

/*
 * A socket returns the bytes a call moved (tp_btf sock_send_length, sock_recv_length): where the
 * call's own return is not followed (the census, without the syscall tracepoints), a UDP or Unix
 * send's copies and a receive's are counted here. A receive with MSG_TRUNC returns what it
 * discarded or the datagram's length, not what it copied, one from the error queue or of TCP's
 * urgent byte (MSG_OOB) copies no payload of the stream, and a MSG_ZEROCOPY send pins part of what
 * it returns: none is counted (the census says so). @type: the socket's, or NR_FD_TYPES where no
 * one has read it yet.
 */
static __always_inline void count_at_length(struct task_struct *task, struct sock *sk, int ret, int flags,
					    bool to_user, __u8 type)
{
	__u32 site;

	if (!standalone_sites || ret <= 0)
		return;
	site = length_site(type < NR_FD_TYPES ? type : sock_fd_type(true, sk), to_user);
	if (site >= NR_SITES || !(standalone_sites & 1U << site) || !site_uses(site, METHOD_TP_BTF))
		return;
	if (flags & (to_user ? ZCT_MSG_TRUNC | ZCT_MSG_ERRQUEUE | ZCT_MSG_OOB : ZCT_MSG_ZEROCOPY))
		return;
	if (is_target_memo(TASK_READ(task, tgid)))
		record_inline(task, TASK_READ(task, tgid), site, ret, METHOD_TP_BTF);
}

/* Whether a call on a descriptor of @type feeds a socket site from its return. */
static __always_inline bool sock_type_sites(__u8 type)
{
	return by_return_of(sock_site(type, false)) || by_return_of(sock_site(type, true));
}

/*
 * A UDP send with MSG_ZEROCOPY is starting on open file @f: its skbs may carry a target's pinned
 * pages from here on, and their owner is found at the device by their socket. Each datagram (each
 * message of a sendmmsg) the kernel takes on a SO_ZEROCOPY socket gets the socket's next
 * notification id, whether it pins or copies: the ids from here to the call's return are its.
 */
static __always_inline void udp_zc_enter(struct file *f, struct io_call *call)
{
	struct socket *sock = BPF_CORE_READ(f, private_data);
	struct sock *sk = BPF_CORE_READ(sock, sk);

	saw_zc_send();
	if (!sk)
		return;
	note_sock(sk, current_tgid());
	call->sk = (__u64)sk;
	call->zc_id = BPF_CORE_READ(sk, sk_zckey.counter);
}

struct zc_ids {
	__u64 sk;
	__u32 first;
	__u32 life;		/* zc_sock_life() */
	struct zc_sum sum;	/* every id's: the call's bytes are all on its first */
};

static long keep_zc_id(__u32 i, struct zc_ids *ids)
{
	/* counted here, not in @ids: the verifier follows a counter in the loop's state round by round */
	if (zc_keep_sum(ids->sk, ids->life, ids->first + i, &ids->sum))
		__sync_fetch_and_add(&misc.zc_calls_dropped, 1);
	return 0;
}

/*
 * A UDP zerocopy send's notification ids, kept for their notice (on_zc_notice()) with the bytes
 * the call pinned, all on its first id: a COPIED notice then names the pinned bytes copied on
 * delivery, not those the kernel copied at the send (which its notice says COPIED too). A global
 * function, as sock_syscall_exit() is.
 */
ZCT_GLOBAL int keep_udp_zc_ids(const struct io_call *call)
{
	struct zc_ids ids = {};
	struct sock *sk;
	__u32 n;

	if (!call || !call->sk)
		return 0;
	ids.sk = call->sk;
	ids.first = call->zc_id;
	sk = (struct sock *)ids.sk;
	n = BPF_CORE_READ(sk, sk_zckey.counter) - ids.first;
	if (!n || n > ZCT_UIO_MAXIOV)
		return 0;
	ids.life = zc_sock_life(ids.sk);
	if (zc_sum_at(ids.sk, ids.life, ids.first, call->pinned, &ids.sum)) {
		__sync_fetch_and_add(&misc.zc_calls_dropped, n);
		return 0;
	}
	if (n > ZCT_TURNS(ZCT_UIO_MAXIOV))
		__sync_fetch_and_add(&misc.zc_calls_dropped, n - ZCT_TURNS(ZCT_UIO_MAXIOV));
	ZCT_LOOP(n, ZCT_TURNS(ZCT_UIO_MAXIOV), keep_zc_id, &ids);
	return 0;
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
ZCT_GLOBAL int sock_syscall_exit(struct io_call *call, const struct moved *m)
{
	bool to_user, from_user;
	__u32 site, tgid = current_tgid();
	__u64 copied;

	if (!call || !m)
		return 0;
	to_user = call->kind == IO_READ || call->kind == IO_RECV || call->kind == IO_RECVMMSG;
	from_user = call->kind == IO_WRITE || call->kind == IO_SEND || call->kind == IO_SENDMMSG;
	site = sock_site(call->type, to_user);
	if (site == SITE_UDP_SEND_COPY && m->bytes && zc_notices_on)
		keep_udp_zc_ids(call);
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

#endif /* ZCTRACE_SOCK_BPF_H */
