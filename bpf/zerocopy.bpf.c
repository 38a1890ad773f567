// SPDX-License-Identifier: GPL-2.0
/*
 * Zerocopy sends (MSG_ZEROCOPY, io_uring SEND_ZC) after the send: completion notices (zc_notices:
 * the error queue's, io_uring's notification CQEs), the copy on delivery (deferred_copy: fentry or
 * kprobe skb_copy_ubufs, or the zerocopy skbs that reach delivery), and the zerocopy skbs' path
 * (zc_path).
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone): each site keeps all
 * its methods here, for every kernel.
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "slots.bpf.h"
#include "boundary.bpf.h"
#include "file.bpf.h"
#include "send.bpf.h"
#include "zerocopy.bpf.h"

/* Where the targets' zerocopy skbs went: device, namespace, stage. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct zc_path_key);
	__type(value, struct zc_path_stats);
} zc_path SEC(".maps");

/* ---- zerocopy completion notices and receive copies ---------------------------------------- */

/*
 * io_uring's notification CQEs: one per SEND_ZC (SENDMSG_ZC) request, posted once the kernel has
 * let go of every page it pinned, flagged IORING_NOTIF_USAGE_ZC_COPIED when the data was copied
 * (the application asks for that with IORING_SEND_ZC_REPORT_USAGE, 6.2+ and Debian's 6.1). The
 * notification request holds the ubuf_info its send calls were kept under (keep_zc_call()).
 * The CQE is posted by the submitter's task work (io-wq and SQPOLL threads are of its thread
 * group). A CQE the ring had no room for goes to the overflow list untraced: the workloads keep
 * their rings from overflowing, and say so.
 */
/*
 * Whether a notification that says copied is a linked one whose data was not: since 6.10 the
 * requests whose data goes into one skb share its ubuf_info, their notifications linked behind the
 * first one's (io_link_skb()). The skb's completion reaches that first one only, so the others never
 * learn their data was used, and say copied (!zc_used). Such a one was copied exactly when the
 * first was: used, and not copied, means its data left as it was.
 */
static __always_inline bool uring_linked_uncopied(struct io_notif_data *nd)
{
	struct io_notif_data *head;

	if (!bpf_core_field_exists(nd->head))
		return false;
	head = BPF_CORE_READ(nd, head);
	return head && head != nd && BPF_CORE_READ(head, zc_used) && !BPF_CORE_READ(head, zc_copied);
}

static __always_inline void on_uring_notice(struct io_kiocb *req)
{
	struct io_notif_data *nd = (void *)req + bpf_core_field_offset(struct io_kiocb, cmd);
	__u64 ubuf = (__u64)nd + bpf_core_field_offset(struct io_notif_data, uarg);
	struct zc_owner *owner = bpf_map_lookup_elem(&zc_owners, &ubuf);
	bool copied = BPF_CORE_READ(req, cqe.res) & ZCT_IORING_NOTIF_USAGE_ZC_COPIED, linked = false;

	if (counting()) {
		__sync_fetch_and_add(&misc.zc_notices, 1);
		if (copied) {
			__sync_fetch_and_add(&misc.zc_notices_copied, 1);
			linked = uring_linked_uncopied(nd);
			if (linked)
				__sync_fetch_and_add(&misc.zc_notices_copied_linked, 1);
		}
		if (owner && owner->sends) {
			__sync_fetch_and_add(&misc.zc_calls_completed, 1);
			if (copied && !linked)
				__sync_fetch_and_add(&misc.zc_bytes_copied_notice, owner->bytes);
		} else {
			__sync_fetch_and_add(&misc.zc_calls_unmatched, 1);
		}
	}
	/* the ubuf_info's life ends here; the request and its ubuf_info are recycled */
	if (owner)
		bpf_map_delete_elem(&zc_owners, &ubuf);
}

/* Set before load: which of io_uring_complete's jobs the chosen probes gave it. */
const volatile __u8 uring_notices = 0;	/* zc_notices: the SEND_ZC notifications */
const volatile __u8 uring_account = 0;	/* the boundary account: the bytes of each request */
/* ... and the file sites: uring_file_sites (file.bpf.h) */
const volatile __u8 uring_kind_of[MAX_URING_OPS] = {};	/* enum io_kind by opcode */

/*
 * A request's completion: what a read, write, send or receive request returned is the bytes it
 * moved, as a syscall's return is. Its row of the boundary account is its opcode's; a read or
 * write of a regular file is counted at the file sites too (file_uring_done()).
 */
static __always_inline void on_uring_request(struct io_kiocb *req)
{
	__u8 op = BPF_CORE_READ(req, opcode) & (MAX_URING_OPS - 1);
	int res = BPF_CORE_READ(req, cqe.res);
	struct file *f;
	__u8 type = FT_OTHER;

	if (res <= 0 || BPF_CORE_READ(req, opcode) >= MAX_URING_OPS || !uring_kind_of[op])
		return;
	f = BPF_CORE_READ(req, file);
	if (f)
		type = file_type(f, BPF_CORE_READ(f, f_inode, i_mode) & ZCT_S_IFMT, BPF_CORE_READ(f, f_flags));
	if (uring_account)
		account_add(IO_URING_CALL + op, type, res, false);
	if (uring_file_sites)
		file_uring_done(current_tgid(), uring_kind_of[op], type, res);
}

/*
 * Every CQE a request posts, in the task that posts it (the submitter's task work, an io-wq worker,
 * an SQPOLL thread: all of the submitter's thread group). 6.1 and 6.12 pass (ctx, req, user_data,
 * res, cflags, ...), 6.18 (ctx, req, cqe): req, a void * on all three, is an io_kiocb whose cqe
 * holds what the CQE says; NULL for a CQE no request posts.
 */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(io_uring_complete_btf, void *ring, void *req)
{
	struct io_kiocb *r = req;

	if (!r || !is_target_memo(current_tgid()))
		return 0;
	if (BPF_CORE_READ(r, cqe.flags) & ZCT_IORING_CQE_F_NOTIF) {
		if (uring_notices)
			on_uring_notice(r);
	} else if (uring_account || uring_file_sites) {
		on_uring_request(r);
	}
	return 0;
}

/* skb_shared_info before 5.13: the zerocopy bits among the tx_flags (SKBTX_DEV_ZEROCOPY, SKBTX_SHARED_FRAG) */
struct skb_shared_info___tx {
	__u8 tx_flags;
} __attribute__((preserve_access_index));

#define ZCT_SKBTX_DEV_ZEROCOPY (1 << 3)
#define ZCT_SKBTX_SHARED_FRAG (1 << 5)

/* An skb's SKBFL_* flags (5.13), from the tx_flags before them; non-zero if unread. */
static __always_inline long shinfo_flags(struct skb_shared_info *shinfo, __u8 *flags)
{
	__u8 tx = 0;
	long err;

	if (bpf_core_field_exists(shinfo->flags))
		return bpf_core_read(flags, sizeof(*flags), &shinfo->flags);
	err = bpf_core_read(&tx, sizeof(tx), &((struct skb_shared_info___tx *)shinfo)->tx_flags);
	*flags = (tx & ZCT_SKBTX_DEV_ZEROCOPY ? SKBFL_ZEROCOPY_ENABLE : 0) |
		 (tx & ZCT_SKBTX_SHARED_FRAG ? SKBFL_SHARED_FRAG : 0);
	return err;
}

/*
 * The traced process that pinned a zerocopy skb's pages, or NULL: its ubuf_info's owner, noted
 * where the pin was seen (zc_owners). Copies and deliveries run in softirq, on any task.
 */
static __always_inline __u32 *zc_sender(struct skb_shared_info *shinfo)
{
	__u64 uarg = (__u64)BPF_CORE_READ(shinfo, destructor_arg);
	struct zc_owner *owner;

	if (!uarg)
		return NULL;
	owner = bpf_map_lookup_elem(&zc_owners, &uarg);
	return owner ? &owner->tgid : NULL;
}

static __always_inline void on_copy_ubufs(struct sk_buff *skb)
{
	struct skb_shared_info *shinfo = (void *)(BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, end));
	__u32 *tgid = zc_sender(shinfo);
	__u32 len = BPF_CORE_READ(skb, data_len);

	/* skb_copy_ubufs() copies the frags; a linear skb has none */
	if (tgid && len)
		record(*tgid, SITE_DEFERRED_COPY, len);
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
 * The copy on transmit: a device without scatter-gather cannot take an skb's page frags, so
 * validate_xmit_skb() has the kernel copy them. skb_segment() cuts a GSO skb into segments of
 * linear memory, copying every paged byte (its !sg path: data_len of them), and
 * __skb_linearize() (__pskb_pull_tail() of data_len) pulls the frags of any other skb into its
 * head. A target's pinned zerocopy pages (its ubuf_info, SKBFL_ZEROCOPY_ENABLE) copied there are
 * counted for their owner (zc_sender()), and so are the page references its sendfile or splice
 * put in a TCP socket (SKBFL_SHARED_FRAG; the socket noted where the send spliced them); the
 * flags are read as the copy starts, since the pull clears them by its end. Only a pull for a device without scatter-gather is counted: a receive
 * path that pulls a header finds a device that has it (loopback, veth, real NICs' own skbs).
 * No tracepoint marks either copy: tracepoint-only kernels do not count it.
 */

static __always_inline void on_tx_copy(const struct sk_buff *skb, __u64 bytes, __u32 method)
{
	struct skb_shared_info *shinfo;
	__u32 *tgid = NULL;
	__u64 sk;
	__u8 flags;

	if (!(zc_sends_seen | splice_sends_seen) || !bytes || !site_uses(SITE_TX_COPY, method))
		return;
	shinfo = (void *)(BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, end));
	if (shinfo_flags(shinfo, &flags))
		return;
	if (flags & SKBFL_ZEROCOPY_ENABLE) {
		tgid = zc_sender(shinfo);
	} else if ((flags & SKBFL_SHARED_FRAG) && splice_sends_seen) {
		/* page references a send spliced in (sendfile, splice): the socket's owner */
		sk = (__u64)BPF_CORE_READ(skb, sk);
		tgid = sk ? bpf_map_lookup_elem(&target_socks, &sk) : NULL;
	}
	if (tgid)
		record(*tgid, SITE_TX_COPY, bytes);
}

/* Whether @skb's device lacks scatter-gather: the linearizing pull is then the transmit path's. */
static __always_inline bool dev_without_sg(const struct sk_buff *skb)
{
	struct net_device *dev = BPF_CORE_READ(skb, dev);

	return dev && !(BPF_CORE_READ(dev, features) & ZCT_NETIF_F_SG);
}

SEC("fexit/skb_segment")
int BPF_PROG(skb_segment_fexit, struct sk_buff *head_skb, netdev_features_t features)
{
	__u64 ret = (__u64)func_ret(ctx);

	/* ERR_PTR(-errno) or NULL: nothing was cut */
	if (!(features & ZCT_NETIF_F_SG) && ret && ret < (__u64)-4095)
		on_tx_copy(head_skb, BPF_CORE_READ(head_skb, data_len), METHOD_FENTRY);
	return 0;
}

SEC("fentry/__pskb_pull_tail")
int BPF_PROG(pskb_pull_tail_fentry, struct sk_buff *skb, int delta)
{
	if (delta > 0 && dev_without_sg(skb))
		on_tx_copy(skb, delta, METHOD_FENTRY);
	return 0;
}

SEC("kprobe/skb_segment")
int BPF_KPROBE(skb_segment_kprobe, struct sk_buff *head_skb, netdev_features_t features)
{
	if (!(features & ZCT_NETIF_F_SG))
		on_tx_copy(head_skb, BPF_CORE_READ(head_skb, data_len), METHOD_KPROBE);
	return 0;
}

SEC("kprobe/__pskb_pull_tail")
int BPF_KPROBE(pskb_pull_tail_kprobe, struct sk_buff *skb, int delta)
{
	if (delta > 0 && dev_without_sg(skb))
		on_tx_copy(skb, delta, METHOD_KPROBE);
	return 0;
}

/*
 * A zerocopy skb handed to a device: its socket is the sender's, so its ubuf_info is noted as
 * theirs (the tracepoint path sees no pin: MSG_ZEROCOPY makes its ubuf_info inside the send call),
 * or forgotten if another process's skb carries a ubuf_info a target once had.
 */
static __always_inline void note_xmit_owner(const struct sk_buff *skb, struct skb_shared_info *shinfo)
{
	__u64 sk = (__u64)skb->sk, uarg = (__u64)BPF_CORE_READ(shinfo, destructor_arg);
	__u32 *tgid = sk ? bpf_map_lookup_elem(&target_socks, &sk) : NULL;

	if (!uarg)
		return;
	if (tgid)
		note_ubuf(uarg, *tgid);
	else if (bpf_map_lookup_elem(&zc_owners, &uarg))
		bpf_map_delete_elem(&zc_owners, &uarg);
}

/*
 * The copy on delivery, on the tracepoint path: __netif_receive_skb_core() hands an skb to a
 * protocol (or a packet tap) only through skb_orphan_frags_rx(), which copies the frags of every
 * zerocopy skb (skb_copy_ubufs()), whether MSG_ZEROCOPY or io_uring pinned them. So the paged
 * bytes of each target's zerocopy skb that arrives here are exactly the bytes copied, per skb as
 * skb_copy_ubufs() counts them on fentry and kprobe kernels: a segment TCP sent again is copied
 * again. The completion notices cannot say as much: a COPIED notice (or notification CQE) covers
 * a whole send call however much of it was copied, and io_uring flags its CQEs only when the
 * application asks. A bridge or bond port (a device with an rx_handler) passes its skbs on
 * uncopied: they are counted at the device they are delivered from (not at all if a packet tap
 * on the port copied them first). Loopback and veth have no rx_handler.
 */
static __always_inline void on_delivery_copy(const struct sk_buff *skb, const struct net_device *dev,
					     __u32 tgid)
{
	/* a linear skb (an IP fragment of a datagram copied at the send) has nothing to copy */
	if (site_uses(SITE_DEFERRED_COPY, METHOD_TP_BTF) && skb->data_len && !BPF_CORE_READ(dev, rx_handler))
		record(tgid, SITE_DEFERRED_COPY, skb->data_len);
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

	/* until a target sends with zerocopy, no skb can be one of theirs: one load per packet */
	if (!zc_sends_seen || !dev)
		return;
	/*
	 * Every skb of the machine passes here: the skb is read directly (tp_btf), the shared info
	 * behind it with one probe read. The SKBFL_* enum is anonymous, so CO-RE cannot relocate
	 * it; its values have not moved.
	 */
	shinfo = (void *)(skb->head + skb->end);
	if (shinfo_flags(shinfo, &flags) || !(flags & SKBFL_ZEROCOPY_ENABLE))
		return;
	if (stage == ZC_STAGE_XMIT) {
		note_xmit_owner(skb, shinfo);
		on_udp_xmit(skb, shinfo);
	}
	if (!counting())
		return;
	tgid = zc_sender(shinfo);
	if (!tgid)
		return;
	if (stage == ZC_STAGE_RECEIVE)
		on_delivery_copy(skb, dev, *tgid);
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
