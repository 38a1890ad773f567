/*
 * The copy ledger: one run's context (what was traced, how, the workload's own report) beside the
 * kernel's figures, and the checks made on them. This file holds the model and the questions every
 * part asks of it (roles, namespaces, payload); checks.c checks it, report_text.c and
 * report_json.c report it. docs/ARCHITECTURE.md draws the flow.
 */
#ifndef LEDGER_H
#define LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>
#include "trace/boundary.h"
#include "trace/kfigures.h"
#include "trace/cost.h"
#include "os/netns.h"
#include "os/perfcnt.h"
#include "contract/report.h"
#include "trace/probes.h"
#include "trace/workloads.h"

struct zctrace_bpf;

#define MAX_CHECKS 32

struct check {
	char name[80];
	bool ok;
	char detail[320];
};

struct effect;

struct ledger {
	/* the run: what was traced, and how */
	const char *target;			/* workload name or command */
	const struct workload_def *def;		/* a built-in workload's, or NULL */
	json_object *workload;			/* the workload's own report, or NULL */
	struct wl_report rep;			/* ... read (ledger_set_report) */
	int exit_status;			/* of the traced command, -1 if not ours */
	const struct perf_set *perf;
	const struct probe_choice *choice;	/* [NR_PROBES] */
	const struct netns_pair *net;		/* the namespaces of a --netns run; host's inode always */
	bool phase_gated;			/* sites counted between the workload's phase markers */
	__u64 report_bytes;			/* what the workload wrote to zctrace's result pipe: its report */
	const struct effect *effect;		/* the untraced pass held against this one, or NULL */
	json_object *untraced;			/* ... and its report */
	enum method method[NR_SITES];		/* how each site counted, METHOD_NONE if it did not */
	const char *method_label[NR_SITES];
	/* what the kernel counted */
	struct kfigures k;
	struct cost_figures cost;		/* the sampler's: CPU time by site and kind (costs.h) */
	struct copy_time_figures timed;		/* timed copies (run --time-copies), where asked */
	double copy_bound[NR_SITES];		/* memcpy's bytes per ns at each timed site's mean copy size,
						 * 0 where not measured (costs.h) */
	struct boundary bnd;			/* the boundary account against the sites */
	/* what was checked (checks.c) */
	struct check checks[MAX_CHECKS];
	int nchecks;
};

/* The workload's report (NULL: none), kept in @l and read into l->rep. */
void ledger_set_report(struct ledger *l, json_object *report);
/* Reads the kernel's figures and each site's method; the run's fields are set before. */
void ledger_collect(struct ledger *l, struct zctrace_bpf *obj, const struct skip_mark *from,
		    const struct skip_mark *to);
/* Whether probe site @id (enum probe_id) attached for this run. */
bool ledger_has(const struct ledger *l, int id);
/* Why probe site @id attached nothing, for a "not supported" line. */
const char *refusal_of(const struct ledger *l, int id);

/* The role of a traced process, from the pids the workload reported: sender, receiver, ... */
const char *proc_role(const struct ledger *l, __u32 tgid);
/* Sender and receiver are separate processes: each has its own ledger. */
bool ledger_two_sides(const struct ledger *l);
/* The first process of @role with any site counted, or NULL. */
const struct proc_sites *ledger_proc_of(const struct ledger *l, const char *role);
/* The bytes ran over veth between namespaces zctrace made. */
bool ledger_on_veth(const struct ledger *l);
/* The namespace a role ran in: the sender's and receiver's with --netns, else the host's. */
const char *role_netns(const struct ledger *l, const char *role);
/* A network namespace inode by its role, or "net:[INODE]". */
const char *netns_label(const struct ledger *l, __u32 ino, char *buf, size_t n);
/* What the by-process table calls process @p: its role in the workload, else its name. */
const char *proc_label(const struct ledger *l, const struct proc_sites *p);
/* Its network namespace: the role's, else the one the kernel noted ("host", a namespace of the
 * run's, or net:[inode]), in @buf if need be. */
const char *proc_netns(const struct ledger *l, const struct proc_sites *p, char *buf, size_t n);
/* The workload's payload ("bytes"); @found says whether it reported one. */
double ledger_payload_of(const struct ledger *l, bool *found);
/* Pages the targets brought into the page cache for a file the workload named (source, dest). */
bool file_pages_added(const struct ledger *l, const struct wl_file_fig *file, __u64 *pages);
/* Zerocopy bytes that reached delivery, where the deferred probes (each per skb) see every delivery. */
bool zc_redelivered(const struct ledger *l, __u64 *delivered);

/* Kernel map updates that failed, by map: each one a figure lost. */
struct dropped_counter {
	const char *map;
	size_t off;		/* in struct misc_stats */
};
extern const struct dropped_counter dropped_counters[];
extern const int nr_dropped_counters;
__u64 dropped_of(const struct ledger *l, int i);
/* "sites 3, sched 1", or "none"; returns the total. */
__u64 dropped_summary(const struct ledger *l, char *buf, size_t n);

#endif
