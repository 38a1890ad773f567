/*
 * What a ledger's figures mean, in plain words: what the kernel did with the payload (ledger.h).
 * The text report prints these sentences and the JSON ledger carries them ("findings").
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ledger/findings.h"
#include "os/units.h"

/* One sentence more; past FINDINGS_MAX, none (the list holds every kind of finding once). */
static void say(struct findings *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct findings *o, const char *fmt, ...)
{
	va_list ap;

	if (o->n >= FINDINGS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(o->line[o->n++], sizeof(o->line[0]), fmt, ap);
	va_end(ap);
}

void ledger_findings(const struct ledger *l, double payload, struct findings *o)
{
	o->n = 0;
	const struct site_stats *s = l->k.site;
	char b1[32], b2[32];

	if (s[SITE_ZC_PIN].bytes) {
		double share = (double)s[SITE_DEFERRED_COPY].bytes / s[SITE_ZC_PIN].bytes;

		say(o, "Zerocopy sends (MSG_ZEROCOPY, io_uring SEND_ZC) pinned %s of user pages instead of "
			"copying them at send time.", human_bytes(s[SITE_ZC_PIN].bytes, b1, sizeof(b1)));
		if (s[SITE_DEFERRED_COPY].bytes)
			say(o, "%.0f%% of the pinned bytes were copied later, on delivery (skb_copy_ubufs on "
				"the receive path, e.g. loopback or veth): zero-copy still copied, deferred.",
				share * 100);
		if (s[SITE_TX_COPY].bytes)
			say(o, "%s of the pinned bytes were copied on transmit, for a device without "
				"scatter-gather (skb_segment, __pskb_pull_tail): zero-copy still copied, at the "
				"sender.", human_bytes(s[SITE_TX_COPY].bytes, b2, sizeof(b2)));
		/* skb_segment()'s copies leave the ubuf_info's zerocopy flag set: only a linearizing pull clears it */
		if (s[SITE_TX_COPY].bytes && ledger_has(l, PROBE_ZC_NOTICES) && l->k.misc.zc_notices &&
		    l->k.misc.zc_bytes_copied_notice < s[SITE_TX_COPY].bytes)
			say(o, "The kernel's notices say COPIED for %s only: skb_segment() copies a GSO skb's "
				"pinned pages without marking its send's notice.",
				human_bytes(l->k.misc.zc_bytes_copied_notice, b1, sizeof(b1)));
		if (l->k.misc.zc_notices_copied &&
		    l->k.misc.zc_bytes_copied_notice > s[SITE_DEFERRED_COPY].bytes + s[SITE_TX_COPY].bytes)
			say(o, "The kernel's notices say COPIED for %s of the sends, more than any copy site "
				"counted: it copied pinned data where zctrace has no site (on transmit, for a device "
				"without scatter-gather or checksum offload).",
				human_bytes(l->k.misc.zc_bytes_copied_notice, b2, sizeof(b2)));
		else if (!s[SITE_DEFERRED_COPY].bytes && !s[SITE_TX_COPY].bytes &&
			 l->method[SITE_DEFERRED_COPY] != METHOD_NONE && ledger_has(l, PROBE_ZC_NOTICES) &&
			 l->k.misc.zc_notices_copied && l->k.misc.zc_notices_copied == l->k.misc.zc_notices_copied_linked)
			say(o, "No pinned byte was copied later: the zero-copy send held. The %" PRIu64 " "
				"notifications that say copied are linked ones (io_uring, 6.10+): their data left "
				"uncopied in the skbs of the request they were linked to.",
				(uint64_t)l->k.misc.zc_notices_copied_linked);
		else if (!s[SITE_DEFERRED_COPY].bytes && !s[SITE_TX_COPY].bytes &&
			 l->method[SITE_DEFERRED_COPY] != METHOD_NONE && ledger_has(l, PROBE_ZC_NOTICES) &&
			 !l->k.misc.zc_notices_copied)
			say(o, "No pinned byte was copied later, and no notice says COPIED: the zero-copy "
				"send held.");
		else if (!s[SITE_DEFERRED_COPY].bytes && !s[SITE_TX_COPY].bytes &&
			 l->method[SITE_DEFERRED_COPY] != METHOD_NONE)
			say(o, "No copy site counted a pinned byte again (the kernel's notices are not "
				"traced here to confirm it).");
	}
	if (s[SITE_SPLICE_REF].bytes)
		say(o, "%s went to the socket as page references (sendfile/splice): no CPU copy on "
			"the send path.", human_bytes(s[SITE_SPLICE_REF].bytes, b1, sizeof(b1)));
	if (s[SITE_USER_COPY].bytes && payload > 0)
		say(o, "The program itself copied %.2f bytes per payload byte before the kernel did "
			"(serialisation).", s[SITE_USER_COPY].bytes / payload);
	if (s[SITE_FILE_READ_COPY].bytes && s[SITE_FILE_WRITE_COPY].bytes)
		say(o, "The reads copied page cache->user and the writes user->page cache: the data "
			"crossed the user boundary twice.");
	if (s[SITE_PIPE_WRITE_COPY].bytes || s[SITE_PIPE_READ_COPY].bytes)
		say(o, "A pipe is two CPU copies: write() copied %s user->pipe buffer, read() %s pipe "
			"buffer->user.", human_bytes(s[SITE_PIPE_WRITE_COPY].bytes, b1, sizeof(b1)),
			human_bytes(s[SITE_PIPE_READ_COPY].bytes, b2, sizeof(b2)));
	if (s[SITE_PIPE_REF].bytes)
		say(o, "%s entered pipes as page references (vmsplice/splice/tee/sendfile): no copy "
			"into the pipe.", human_bytes(s[SITE_PIPE_REF].bytes, b1, sizeof(b1)));
	if (s[SITE_KERNEL_COPY].bytes)
		say(o, "%s were copied page cache->page cache inside the kernel: no user copy, but not "
			"zero-copy either (the source pages were passed by reference into a pipe, then copied "
			"into the new file's pages).", human_bytes(s[SITE_KERNEL_COPY].bytes, b1, sizeof(b1)));
	if (l->k.misc.file_bytes_unseen)
		say(o, "%s reached a file through copy_file_range/sendfile/splice with no copy seen: "
			"the filesystem (%s) %s.", human_bytes(l->k.misc.file_bytes_unseen, b1, sizeof(b1)),
			(l->rep.fs ?: "unknown"),
			l->rep.dest.shared_bytes.v >= l->k.misc.file_bytes_unseen
			? "cloned the blocks (reflink): the new file shares the source's extents, nothing was copied"
			: "copied where no probe of this path sees (its writes have no tracepoint)");
	if (l->k.misc.write_bytes_by_return)
		say(o, "%s of file writes were counted from write()'s return, one copy per call: this "
			"filesystem has no per-folio copy event on this kernel.",
			human_bytes(l->k.misc.write_bytes_by_return, b1, sizeof(b1)));
	if (s[SITE_SEND_COPY].bytes || s[SITE_RECV_COPY].bytes)
		say(o, "A NIC's DMA is not a CPU copy and is not counted; on loopback and veth there is none.");
	if (l->def && l->def->file && l->rep.cache && !strcmp(l->rep.cache, "cold"))
		say(o, "Reading the cold file in was disk DMA into the page cache: not a CPU copy, not "
			"counted.");
}
