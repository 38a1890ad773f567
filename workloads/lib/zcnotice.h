/*
 * MSG_ZEROCOPY completion notices, reaped from a socket's MSG_ERRQUEUE as the kernel's
 * msg_zerocopy selftest does: the same for TCP and UDP senders.
 */
#ifndef ZCNOTICE_H
#define ZCNOTICE_H

#include <stdint.h>
#include <json-c/json.h>

struct zc_stats {
	uint64_t sends;			/* sendmsg(MSG_ZEROCOPY) calls that moved bytes */
	uint64_t notices;		/* completion notices read from MSG_ERRQUEUE */
	uint64_t notices_copied;	/* ... with SO_EE_CODE_ZEROCOPY_COPIED */
	uint64_t completed;		/* send calls the notices cover */
	uint64_t completed_copied;	/* ... covered by a COPIED notice */
	uint64_t gaps;			/* notices that did not start where the previous ended */
	uint64_t widest;		/* the most send calls one notice covered */
	uint64_t sends_read;		/* sends when the notices were last read (--notice-batch) */
	uint32_t next_id;
};

/* Reads the notices queued on @fd: 0, or -errno (-EPROTO: something else was queued). */
int zc_drain(int fd, struct zc_stats *zc);
/* Waits until every send on @fd is completed, at most @timeout_ms: 0, -ETIMEDOUT or -errno. */
int zc_wait_all(int fd, struct zc_stats *zc, int timeout_ms);
/* Adds @s's counts to @t. */
void zc_sum(struct zc_stats *t, const struct zc_stats *s);
/* The report's "zerocopy" object. */
json_object *zc_json(const struct zc_stats *zc);

#endif
