/*
 * The one histogram printer: rows "lo -> hi : count |****|" in the libbpf-tools layout, bars
 * scaled to the largest count. The copy-size and off-CPU histograms (log2 slots of the kernel's
 * maps), the live view (interval beside whole run) and the microbenchmarks' sample
 * distributions (the workload's own buckets) all print through it.
 */
#ifndef HIST_H
#define HIST_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

struct hist_bucket {
	__u64 lo, hi;		/* integer bounds (log2 slots) */
	double flo, fhi;	/* or real ones (a workload's buckets), with hist_look.real */
	__u64 count;		/* the bar's figure */
	__u64 total;		/* printed beside it with hist_look.total (the live view's whole run) */
	const char *note;	/* after the bar, or NULL */
};

struct hist_look {
	int width;		/* of the bar */
	bool real;		/* bounds are flo/fhi */
	bool total;		/* a second column: the total */
};

void hist_print(FILE *f, const struct hist_bucket *b, int n, const struct hist_look *look);

/* The largest value of log2 slot @slot: 2^(slot+1) - 1; the last slot ends at 2^64 - 1. */
__u64 log2_slot_hi(int slot);
/* A log2 histogram from its first to its last used slot, under a header naming @unit. */
void print_log2_hist(FILE *f, const __u64 *vals, int nslots, const char *unit);
/* The live view's: this interval's counts (the bars) beside the whole run's, over the run's slots. */
void print_log2_hist_pair(FILE *f, const __u64 *interval, const __u64 *total, int nslots);

#endif
