/*
 * The probe table: one row per copy site (enum site, same numbers) and per figure that is not a
 * copy, with its name, whether the CPU really copies there, and its attach candidates, best first.
 * Every other part reads it: the method chooser (probes.c), the tracer, the ledger, its reports,
 * and the workloads' expectations (sized by enum site). docs/ARCHITECTURE.md: "Add a site".
 */
#ifndef SITES_H
#define SITES_H

#include <stdbool.h>
#include "zctrace.h"

/* The probe sites: the copy sites first, at their enum site numbers, then the other figures. */
enum probe_id {
	PROBE_TARGETS = NR_SITES,	/* the traced processes: forks and exits */
	PROBE_PAGE_CACHE,		/* pages the targets bring into the page cache */
	PROBE_ZC_NOTICES,		/* MSG_ZEROCOPY completion notices */
	PROBE_ZC_PATH,			/* zerocopy skbs by device and stage */
	PROBE_SCHED,			/* context switches, off-CPU time */
	PROBE_SYSCALLS,			/* syscalls by number */
	PROBE_PAGE_FAULTS,
	PROBE_BOUNDARY,			/* bytes that crossed to or from user memory, by call and file type */
	PROBE_CENSUS,			/* the census's counters in each thread, read by a task iterator */
	PROBE_COST,			/* the sampler: CPU time by copy site and kind (cost.c) */
	PROBE_COPY_TIME,		/* timed copies: each copy routine's calls timed (run --time-copies) */
	PROBE_TCP_COUNTERS,		/* the census's TCP bytes from each socket's own counters */
	NR_PROBES,
};

#define MAX_CANDIDATES 10
#define MAX_PROGS 6
#define MAX_NEEDS 6
#define MAX_COST_FNS 6

struct candidate {
	enum method method;
	const char *label;			/* what is attached, for reports */
	const char *progs[MAX_PROGS];		/* skeleton programs to autoload (PROG(): checked at compile time) */
	const char *needs[MAX_NEEDS];		/* attach points: "fentry:F", "kprobe:F", "tp_btf:T", "raw_tp:T", "usdt" */
	bool standalone;			/* counts without following the I/O call from its entry (for the
						 * census, without the syscall tracepoints) */
	bool from_counters;			/* the census's, standalone: the site's bytes are the TCP sockets'
						 * own counters less what was not copied (TCP_DERIVED_*), and its
						 * calls are not counted */
};

struct probe_site {
	const char *name;			/* in reports, JSON keys and sweep columns */
	bool cpu_copy;				/* a copy site where the CPU copies payload (not a pin or a reference) */
	bool required;				/* without it a run means nothing */
	/*
	 * the kernel functions that make a copy routine's sample under them this site's copy
	 * (the sampler: bpf/costwalk.h); names a kernel lacks are passed over
	 */
	const char *cost_fns[MAX_COST_FNS];
	struct candidate cands[MAX_CANDIDATES];
};

extern const struct probe_site probe_sites[NR_PROBES];

/* The name of probe site @id (a copy site or another figure), "?" if out of range. */
const char *probe_name(int id);
static inline const char *site_name(int site)
{
	return site >= 0 && site < NR_SITES ? probe_name(site) : "?";
}
static inline bool is_cpu_copy(int site)
{
	return site >= 0 && site < NR_SITES && probe_sites[site].cpu_copy;
}

#endif
