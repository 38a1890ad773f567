/*
 * The machine-wide census: every process's copy sites at once, for `zctrace top` and `zctrace
 * export`. The BPF side counts in each thread (task storage), read by a task iterator and sent
 * as the thread exits, and what it counts outside the copying thread (a deferred copy, found by
 * its owner) by (process, site) in a bounded LRU map; each read turns both into per-process
 * deltas since the last read, so totals only grow even when the kernel evicts a key or a process
 * exits and its keys are removed.
 */
#ifndef CENSUS_H
#define CENSUS_H

#include <stdbool.h>
#include <stdint.h>
#include "trace/cost.h"
#include "trace/probes.h"
#include "zctrace.h"

#define CENSUS_COMM_LEN 16
#define CENSUS_CGROUP_LEN 256

struct census;

/* The census's options, alike in `top` and `export` (argp entries; KEY: the command's own key). */
#define CENSUS_COMPLETE_OPTION(key)								\
	{ "complete", key, NULL, 0,								\
	  "Also the bytes that need the raw syscall tracepoints where no cheaper hook exists: files, "	\
	  "pipes and the boundary account (unattributed bytes), at a cost to every syscall of the "	\
	  "machine", 0 }
#define CENSUS_PER_CALL_OPTION(key)								\
	{ "per-call", key, NULL, 0,								\
	  "TCP's copies counted at each send and receive call, with their number and sizes, not from "	\
	  "the sockets' own byte counters, at the cost of a program per call (MSG_PEEK's copies too)", 0 }
#define CENSUS_BPF_STATS_OPTION(key, what)							\
	{ "bpf-stats", key, NULL, 0,								\
	  "The census's own BPF cost " what ", from the kernel's BPF statistics (while on: two clock "	\
	  "reads per event of every BPF program on the machine)", 0 }

struct census_opts {
	enum method cap;	/* --method: nothing better than this; METHOD_NONE = the best there is */
	uint32_t max_keys;	/* (process, site) keys the kernel keeps; 0 = the default */
	bool complete;		/* --complete: the boundary account and the sites that need the raw
				 * syscall tracepoints too, at their cost to every syscall of the machine */
	unsigned cost_hz;	/* --cost: the sampler at this rate, each copy site's CPU time; 0: off */
	bool per_call;		/* --per-call: TCP's copies at each call, not from the sockets' counters */
};

/* --cost[=HZ], alike in `top` and `export` (KEY: the command's own key) */
#define CENSUS_COST_OPTION(key, what)								\
	{ "cost", key, "HZ", OPTION_ARG_OPTIONAL,						\
	  "What each process's copies cost in CPU time " what ": the kernel's stacks sampled HZ times a "	\
	  "second on each CPU (default " COST_DEFAULT_HZ_STR "), each sample in a copy placed at its site", 0 }

/* One process's figures: over one interval (deltas) or since it was first seen (totals). */
struct census_figs {
	struct site_stats site[NR_SITES];	/* copies, bytes (and log2 size histogram: the census's
						 * are machine-wide, census_snap.hist) per site */
	uint64_t from_user;	/* bytes its I/O calls moved out of user memory (write, send, ...); without
				 * the boundary account, what its sites took from user memory */
	uint64_t to_user;	/* ... and into user memory (read, recv, ...) */
	uint64_t unattributed;	/* boundary bytes no site explains (only with the boundary account) */
	uint64_t cpu_samples[NR_SITES];	/* the sampler's samples in each site's copies (--cost) */
	/* its TCP bytes from its sockets' own counters (census_has_tcp_counters()): given to TCP to
	 * send, copied or not, and given to it by TCP, however (not MSG_PEEK) */
	uint64_t tcp_sent, tcp_received;
};

struct census_proc {
	uint32_t tgid;
	bool exited;		/* gone: its last rows (the next read has what it did after this one's) */
	bool exited_now;	/* ... found gone at this read: its one row even with nothing new */
	char comm[CENSUS_COMM_LEN];
	uint64_t cgroup_id;	/* its cgroup v2 id (0 if unknown) */
	char cgroup[CENSUS_CGROUP_LEN];	/* its path under the cgroup v2 root, "/system.slice/x.service" */
	bool tcp_shared;	/* one of its TCP sockets was held by another process too at this read */
	struct census_figs delta;	/* since the previous read */
	struct census_figs total;	/* since the census first saw it */
};

/* What one read saw: the processes with any figure, and the census's own bookkeeping. */
struct census_snap {
	struct census_proc *procs;
	int nprocs;
	uint64_t evicted;	/* (process, site) keys the kernel evicted since the start: counts lost */
	uint64_t dropped;	/* updates the kernel could not store (no room), since the start */
	uint64_t skipped;	/* runs of the census's programs the kernel skipped, since the start */
	uint64_t unfollowed;	/* calls whose entry found no room to keep them for their return */
	char skipped_what[160];	/* ... by program, the most first ("name runs, ...") */
	const char *skips_uncounted;	/* which skips this kernel does not count, or "" */
	uint64_t keys;		/* keys held now */
	uint64_t max_keys;
	double interval_s;	/* time since the previous read */
	uint64_t sample_ns;	/* --cost: the CPU time one sample stands for; 0 without the sampler */
	/* TCP bytes of sockets that ended before any process was found to own them, since the start */
	uint64_t tcp_unowned_sent, tcp_unowned_received;
	uint64_t hist[NR_SITES][MAX_SLOTS];	/* copies by log2 size since the previous read, every process */
};

/* Opens, chooses the probes, loads and attaches for every process but this one. 0 or -errno. */
int census_open(struct census **cp, const struct census_opts *o);
/* Reads every map; @snap stays valid until the next read or census_close(). 0 or -errno. */
int census_read(struct census *c, struct census_snap *snap);
/* The probe choice, for the sites' methods (site_method_of()). */
const struct probe_choice *census_choice(const struct census *c);
/* Why --cost, asked for in @o, has no sampler (the kernel's refusal); NULL where it has one. */
const char *census_cost_refused(const struct census *c, const struct census_opts *o);
/* Whether the census keeps the boundary account (--complete, where the kernel allows it). */
bool census_has_account(const struct census *c);
/* Whether it counts TCP from the sockets' own counters (tcp_sent, tcp_received). */
bool census_has_tcp_counters(const struct census *c);
/*
 * Which of TCP's copy sites it takes from those counters, less what was not copied (TCP_DERIVED_SEND:
 * send_copy, TCP_DERIVED_RECV: recv_copy): their bytes, not their calls (counts stay 0).
 */
unsigned census_derived(const struct census *c);
/*
 * What the census does not measure on this kernel in this mode: the sites (and "unattributed",
 * the boundary account, and "tcp_counters", the sockets' own counters) and why, at most @n. How many.
 */
int census_unmeasured(const struct census *c, const char **names, const char **whys, int n);
/* ... of which there are at most: every site, the account, the counters, two sites' calls */
#define CENSUS_MAX_UNMEASURED (NR_SITES + 4)
/* The tracer the census starts with @o: for `zctrace floor --census`. */
struct tracer_opts;
void census_tracer_opts(const struct census_opts *o, struct tracer_opts *to);
/* The tracer's object, for its programs' costs (progstats). */
struct zctrace_bpf *census_object(struct census *c);
/* Frees the census; a child process detaches its programs (tracer_stop_background()). */
void census_close(struct census *c);

/* CPU copies per byte moved: CPU-copy bytes over the most bytes moved one way (boundary, page
 * references or kernel copies); negative when nothing moved. */
double census_copies_per_byte(const struct census_figs *f);
/* The bytes of the sites where the CPU copies (not pins or page references). */
uint64_t census_cpu_copied(const struct census_figs *f);
/* The most bytes the figures moved one way: the payload copies are held against. */
uint64_t census_payload(const struct census_figs *f);

#endif
