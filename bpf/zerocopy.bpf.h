/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What zerocopy.bpf.c shares: a MSG_ZEROCOPY completion notice read from the error queue
 * (on_zc_notice()), which recv.bpf.c's skb_copy_datagram_iovec sees.
 */
#ifndef ZCTRACE_ZEROCOPY_BPF_H
#define ZCTRACE_ZEROCOPY_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"

struct zc_walk {
	__u64 sk;
	__u32 lo;
	__u32 tgid;
	__u32 copied;
	__u32 pad;
	__u64 calls;
	__u64 unmatched;
	__u64 bytes;
};

/* The most send calls one notice completes that its walk looks up (the rest: unmatched). */
#define ZCT_ZC_WALK_MAX ZCT_TURNS(MAX_ZC_CALLS)

static long zc_walk_one(__u32 i, struct zc_walk *w)
{
	struct zc_key key = { .sk = w->sk, .id = w->lo + i };
	__u64 *bytes = bpf_map_lookup_elem(&zc_calls, &key);

	if (!bytes) {
		w->unmatched++;
		return 0;
	}
	w->calls++;
	if (w->copied)
		w->bytes += *bytes;
	bpf_map_delete_elem(&zc_calls, &key);
	return 0;
}

/* A zerocopy notice read from the error queue names the send calls lo..hi it completes. */
static __always_inline void on_zc_notice(const struct sk_buff *skb, __u32 tgid)
{
	struct sock_exterr_skb *serr = (void *)skb + bpf_core_field_offset(struct sk_buff, cb);
	struct zc_walk walk = { .tgid = tgid };
	__u8 origin = BPF_CORE_READ(serr, ee.ee_origin);
	__u32 hi, n;

	if (origin != ZCT_EE_ORIGIN_ZEROCOPY)
		return;
	walk.sk = (__u64)BPF_CORE_READ(skb, sk);
	walk.lo = BPF_CORE_READ(serr, ee.ee_info);
	hi = BPF_CORE_READ(serr, ee.ee_data);
	walk.copied = BPF_CORE_READ(serr, ee.ee_code) & ZCT_EE_CODE_ZEROCOPY_COPIED;
	n = hi - walk.lo + 1;
	ZCT_LOOP(n, ZCT_ZC_WALK_MAX, zc_walk_one, &walk);
	if (n > ZCT_ZC_WALK_MAX)
		walk.unmatched += n - ZCT_ZC_WALK_MAX;

	if (!counting())
		return;
	__sync_fetch_and_add(&misc.zc_notices, 1);
	if (walk.copied)
		__sync_fetch_and_add(&misc.zc_notices_copied, 1);
	__sync_fetch_and_add(&misc.zc_calls_completed, walk.calls);
	__sync_fetch_and_add(&misc.zc_calls_unmatched, walk.unmatched);
	__sync_fetch_and_add(&misc.zc_bytes_copied_notice, walk.bytes);
}

#endif /* ZCTRACE_ZEROCOPY_BPF_H */
