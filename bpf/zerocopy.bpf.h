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

/*
 * A zerocopy notice read from the error queue names the send calls lo..hi it completes: however
 * many the kernel coalesced, their bytes are two lookups of the socket's running sum
 * (zc_range_bytes()). A range whose ends were not both kept is counted unmatched, whole.
 */
static __always_inline void on_zc_notice(const struct sk_buff *skb, __u32 tgid)
{
	struct sock_exterr_skb *serr = (void *)skb + bpf_core_field_offset(struct sk_buff, cb);
	__u8 origin = BPF_CORE_READ(serr, ee.ee_origin);
	__u32 lo, hi, n;
	__u64 bytes = 0;
	bool copied, kept;

	if (origin != ZCT_EE_ORIGIN_ZEROCOPY)
		return;
	lo = BPF_CORE_READ(serr, ee.ee_info);
	hi = BPF_CORE_READ(serr, ee.ee_data);
	copied = BPF_CORE_READ(serr, ee.ee_code) & ZCT_EE_CODE_ZEROCOPY_COPIED;
	n = hi - lo + 1;
	kept = zc_range_bytes((__u64)BPF_CORE_READ(skb, sk), lo, hi, &bytes);

	if (!counting())
		return;
	__sync_fetch_and_add(&misc.zc_notices, 1);
	if (copied)
		__sync_fetch_and_add(&misc.zc_notices_copied, 1);
	if (kept) {
		__sync_fetch_and_add(&misc.zc_calls_completed, n);
		if (copied)
			__sync_fetch_and_add(&misc.zc_bytes_copied_notice, bytes);
	} else {
		__sync_fetch_and_add(&misc.zc_calls_unmatched, n);
	}
}

#endif /* ZCTRACE_ZEROCOPY_BPF_H */
