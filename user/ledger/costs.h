/*
 * What each copy cost: the sampler's counts (trace/cost.h) read against the ledger's bytes and
 * calls. CPU time by site and kind, ns per byte, the share of the traced CPU time spent copying,
 * and the zerocopy and page-reference paths' fixed cost per call against the copy it replaces.
 * Every figure carries its 95% interval from the sample count; the reports only print them.
 */
#ifndef COSTS_H
#define COSTS_H

#include <stdbool.h>
#include "ledger/ledger.h"

/* A span of CPU time with its 95% interval, in ns. */
struct cost_span {
	__u64 samples;
	double ns, lo, hi;
};

/* The time of class @cls (a site, or an enum cost_class kind) in the measured phase. */
struct cost_span cost_span_of(const struct ledger *l, int cls);
/* Every sample of the measured phase, and the whole run's. */
__u64 cost_phase_samples(const struct ledger *l);
__u64 cost_run_samples(const struct ledger *l);
/*
 * The class whose time is site @s's: a CPU copy site's own; for a site that does not copy, the
 * time of its path (zc_pin: pinning and notices; splice_ref or pipe_ref: page references, where
 * the run has bytes at one of them only); -1 where none is (direct_io; user_copy where the
 * sampler knew no user-space copy routine: cost.user_why says why).
 */
int cost_class_of_site(const struct ledger *l, int s);
/* Site @s's ns per byte and its interval; false if it moved no byte or was not sampled. */
bool cost_ns_per_byte(const struct ledger *l, int s, double *v, double *lo, double *hi);
/* The share (0-1) of the phase's samples in the CPU copies' routines, with its interval. */
bool cost_copy_share(const struct ledger *l, double *v, double *lo, double *hi);

/*
 * The fixed cost of a path that avoids a copy, per call, against the copy of a call's bytes at a
 * rate this run measured: zerocopy (pinning and notices, per send its notices covered) or page
 * references (sendfile, splice: per such syscall).
 */
struct cost_trade {
	bool measured;
	const char *path;		/* "zerocopy", "page references" */
	int avoided_at;			/* the site whose rate prices the copy (recv_copy, deferred_copy, ...) */
	__u64 calls;
	double bytes_per_call;
	double ns_per_call, lo, hi;	/* the path's own time per call */
	double copy_ns_per_call;	/* the copy of those bytes at avoided_at's ns per byte */
};
void cost_trades(const struct ledger *l, struct cost_trade *zc, struct cost_trade *ref);

/*
 * The memory-copy bound of each site copied in its caller's own context (its syscall's: not the
 * deferred and transmit copies, which softirqs and devices make, for the target or not) at its mean
 * copy size, measured now, into l->copy_bound; none on an emulated CPU or without the sampler.
 */
void cost_bounds(struct ledger *l);
/*
 * Whether site @s's copies were no faster than memcpy at their size: false (and why in @detail)
 * where even the slowest rate its interval allows beats the bound by more than half. A site whose
 * copy routine the sampler does not know shows here, as bytes copied in no time.
 */
bool cost_bound_ok(const struct ledger *l, int s, char *detail, size_t n);

/*
 * The check: the sampled CPU time of the whole run held against the traced tasks' task-clock.
 * Returns false where there is nothing to hold it against, with why in @detail where that is
 * worth saying (an emulated CPU, whose timer does not keep the sampling rate).
 */
bool cost_total_check(const struct ledger *l, bool *ok, char *detail, size_t n);

#endif
