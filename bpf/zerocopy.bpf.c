// SPDX-License-Identifier: GPL-2.0
/*
 * MSG_ZEROCOPY after the send: completion notices (deferred_copy by tracepoint, zc_notices),
 * skb_copy_ubufs (deferred_copy by fentry/kprobe), and the zerocopy skbs' path (zc_path).
 * One part of zctrace.bpf.c's object (it includes every part after common.bpf.h): each
 * site keeps all its flavours here, for every kernel.
 */

/* Where the targets' zerocopy skbs went: device, namespace, stage. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct zc_path_key);
	__type(value, struct zc_path_stats);
} zc_path SEC(".maps");

/* ---- zerocopy completion notices and receive copies ---------------------------------------- */

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

static long zc_walk_one(__u32 i, struct zc_walk *w)
{
	struct zc_key key = { .sk = w->sk, .id = w->lo + i };
	__u64 *bytes = bpf_map_lookup_elem(&zc_calls, &key);

	if (!bytes) {
		w->unmatched++;
		return 0;
	}
	w->calls++;
	if (w->copied) {
		w->bytes += *bytes;
		if (site_uses(SITE_DEFERRED_COPY, METHOD_TP_BTF))
			record(w->tgid, SITE_DEFERRED_COPY, *bytes);
	}
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
	if (n > MAX_ZC_CALLS)
		n = MAX_ZC_CALLS;
	bpf_loop(n, zc_walk_one, &walk, 0);

	if (!counting())
		return;
	__sync_fetch_and_add(&misc.zc_notices, 1);
	if (walk.copied)
		__sync_fetch_and_add(&misc.zc_notices_copied, 1);
	__sync_fetch_and_add(&misc.zc_calls_completed, walk.calls);
	__sync_fetch_and_add(&misc.zc_calls_unmatched, walk.unmatched);
	__sync_fetch_and_add(&misc.zc_bytes_copied_notice, walk.bytes);
}

/*
 * The traced process that pinned a zerocopy skb's pages, or NULL: the skb's ubuf_info sits in the
 * cb of its notification skb, whose socket the sender used.
 */
static __always_inline __u32 *zc_sender(struct skb_shared_info *shinfo)
{
	void *uarg = BPF_CORE_READ(shinfo, destructor_arg), *notify_skb;
	__u64 sk;

	if (!uarg)
		return NULL;
	notify_skb = uarg - bpf_core_field_offset(struct sk_buff, cb);
	sk = (__u64)BPF_CORE_READ((struct sk_buff *)notify_skb, sk);
	return bpf_map_lookup_elem(&target_socks, &sk);
}

static __always_inline void on_copy_ubufs(struct sk_buff *skb)
{
	struct skb_shared_info *shinfo = (void *)(BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, end));
	__u32 *tgid = zc_sender(shinfo);

	if (tgid)
		record(*tgid, SITE_DEFERRED_COPY, BPF_CORE_READ(skb, data_len));
}

SEC("fentry/skb_copy_ubufs")
int BPF_PROG(skb_copy_ubufs_fentry, struct sk_buff *skb)
{
	on_copy_ubufs(skb);
	return 0;
}

SEC("kprobe/skb_copy_ubufs")
int BPF_KPROBE(skb_copy_ubufs_kprobe, struct sk_buff *skb)
{
	on_copy_ubufs(skb);
	return 0;
}

/*
 * The path of a zerocopy skb. Delivery runs in softirq, often on another task, so the sender is
 * found as skb_copy_ubufs()'s is: zc_sender().
 */
static __always_inline void on_zc_path(const struct sk_buff *skb, const struct net_device *dev,
				       __u32 stage)
{
	static const struct zc_path_stats zero;
	struct skb_shared_info *shinfo;
	struct zc_path_stats *st;
	struct zc_path_key key = { .stage = stage };
	__u32 *tgid;
	__u8 flags;

	if (!counting() || !dev)
		return;
	/*
	 * Every skb of the machine passes here: the skb is read directly (tp_btf), the shared info
	 * behind it with one probe read. The SKBFL_* enum is anonymous, so CO-RE cannot relocate
	 * it; its values have not moved.
	 */
	shinfo = (void *)(skb->head + skb->end);
	if (bpf_core_read(&flags, sizeof(flags), &shinfo->flags) || !(flags & SKBFL_ZEROCOPY_ENABLE))
		return;
	tgid = zc_sender(shinfo);
	if (!tgid)
		return;
	key.tgid = *tgid;
	key.netns = BPF_CORE_READ(dev, nd_net.net, ns.inum);
	key.ifindex = BPF_CORE_READ(dev, ifindex);
	st = bpf_map_lookup_elem(&zc_path, &key);
	if (!st) {
		bpf_map_update_elem(&zc_path, &key, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&zc_path, &key);
		if (!st) {
			__sync_fetch_and_add(&misc.zc_path_dropped, 1);
			return;
		}
		bpf_probe_read_kernel_str(st->dev, sizeof(st->dev), dev->name);
	}
	__sync_fetch_and_add(&st->skbs, 1);
	__sync_fetch_and_add(&st->bytes, BPF_CORE_READ(skb, data_len));
	if (flags & SKBFL_DONT_ORPHAN)
		__sync_fetch_and_add(&st->dont_orphan, 1);
}

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(net_dev_start_xmit_btf, const struct sk_buff *skb, const struct net_device *dev)
{
	on_zc_path(skb, dev, ZC_STAGE_XMIT);
	return 0;
}

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(netif_receive_skb_btf, struct sk_buff *skb)
{
	on_zc_path(skb, skb->dev, ZC_STAGE_RECEIVE);
	return 0;
}
