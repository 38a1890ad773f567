/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What send.bpf.c shares with the zerocopy programs: the owner of a zerocopy send's ubuf_info
 * (note_ubuf()), and a UDP zerocopy skb's pins counted where it is handed to a device
 * (on_udp_xmit()).
 */
#ifndef ZCTRACE_SEND_BPF_H
#define ZCTRACE_SEND_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "slots.bpf.h"

/* @ubuf's pages are pinned by @tgid's send; a new owner starts its counts afresh. */
static __always_inline struct zc_owner *note_ubuf(__u64 ubuf, __u32 tgid)
{
	struct zc_owner *owner = bpf_map_lookup_elem(&zc_owners, &ubuf), fresh = { .tgid = tgid };

	saw_zc_send();
	if (owner && owner->tgid == tgid)
		return owner;
	bpf_map_update_elem(&zc_owners, &ubuf, &fresh, BPF_ANY);
	return bpf_map_lookup_elem(&zc_owners, &ubuf);
}

/*
 * The tracepoint path has no event inside a UDP send: its pins are counted where its zerocopy skb
 * is handed to a device, if the skb's ubuf_info says the pages are still the user's
 * (ubuf_info_msgzc.zerocopy, which __ip_append_data() clears where it copied instead). Loopback
 * and veth transmit inside the sender's call; a queueing device does it later, and those bytes are
 * counted in udp_pins_late, since udp_send_copy has counted them too.
 */
static __always_inline void on_udp_xmit(const struct sk_buff *skb, struct skb_shared_info *shinfo)
{
	struct sock *sk = skb->sk;
	struct ubuf_info_msgzc *zc;
	struct zc_owner *owner;
	struct io_call *call;
	__u64 uarg, bytes = skb->data_len;

	if (!sk || !bytes || sk->sk_protocol != ZCT_IPPROTO_UDP || !site_uses(SITE_ZC_PIN, METHOD_TP_BTF))
		return;
	uarg = (__u64)BPF_CORE_READ(shinfo, destructor_arg);
	owner = uarg ? bpf_map_lookup_elem(&zc_owners, &uarg) : NULL;
	zc = (void *)uarg;
	if (!owner || !BPF_CORE_READ_BITFIELD_PROBED(zc, zerocopy))
		return;
	record(owner->tgid, SITE_ZC_PIN, bytes);
	call = current_io();
	if (call && call->type == FT_UDP && current_tgid() == owner->tgid)
		call->pinned += bytes;
	else if (counting())
		__sync_fetch_and_add(&misc.udp_pins_late, bytes);
}

#endif /* ZCTRACE_SEND_BPF_H */
