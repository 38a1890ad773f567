/* The copy ledger: kernel figures collected from the maps, reconciled and reported. */
#ifndef LEDGER_H
#define LEDGER_H

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>
#include "zctrace.h"
#include "netns.h"
#include "perfcnt.h"
#include "probes.h"
#include "workloads.h"

struct zctrace_bpf;

#define MAX_CHECKS 32
#define MAX_PC_FILES 64
#define MAX_ASSUMPTIONS 256

/* A microbenchmark's claim about one of its steps, and what the kernel counted. */
struct assumption {
	char claim[160];
	char measure[48];	/* syscall:NAME, syscalls, switches, ... (micro.c) */
	int step;
	__u64 expected, min, max;
	__u64 measured;
	bool known;		/* the measure exists and its probe was attached */
	bool holds;
	char why[96];		/* when not known */
};

#define MAX_PROC_SITES 16	/* processes shown side by side */
#define MAX_ZC_PATHS 32

/* One traced process's sites: the sender's and the receiver's ledgers. */
struct proc_sites {
	__u32 tgid;
	__u64 count[NR_SITES];
	__u64 bytes[NR_SITES];
};

struct check {
	char name[80];
	bool ok;
	char detail[200];
};

struct ledger {
	const char *target;			/* workload name or command */
	struct site_stats site[NR_SITES];
	enum method method[NR_SITES];
	const char *method_label[NR_SITES];
	bool sched_attached, syscalls_attached, faults_attached, notices_attached, page_cache_attached;
	struct sched_stats sched;
	__u64 syscalls[MAX_SYSCALLS];
	__u64 phase_syscalls[MAX_SYSCALLS];	/* inside the measured phase */
	struct pc_key pc_key[MAX_PC_FILES];	/* files the targets brought pages of into the cache */
	__u64 pc_pages[MAX_PC_FILES];
	int npc;
	struct misc_stats misc;
	int nprocs;				/* traced processes (tgids) */
	struct proc_sites procs[MAX_PROC_SITES];	/* by process, those with any site counted */
	int nproc_sites;
	struct zc_path_key zp_key[MAX_ZC_PATHS];	/* where the zerocopy skbs went */
	struct zc_path_stats zp[MAX_ZC_PATHS];
	int nzp;
	const struct netns_pair *net;		/* the namespaces of a --netns run; host's inode always */
	bool phase_gated;			/* sites counted between the workload's phase markers */
	json_object *workload;			/* the workload's own figures, or NULL */
	int exit_status;			/* of the traced command, -1 if not ours */
	const struct workload_def *def;
	const struct perf_set *perf;
	const struct probe_choice *choice;
	struct check checks[MAX_CHECKS];
	int nchecks;
	/* microbenchmarks: the kernel's figures per numbered step, and the claims checked on them */
	bool segments_attached;
	struct seg_stats seg[MAX_SEGMENTS];
	__u64 seg_syscalls[MAX_SEGMENTS][MAX_SYSCALLS];
	struct assumption assumptions[MAX_ASSUMPTIONS];
	int nassumptions;
};

const char *site_name(int site);
/* The sites in the order a byte meets them: file read, user, kernel, file write, network. */
extern const int site_order[NR_SITES];
void ledger_collect(struct ledger *l, struct zctrace_bpf *obj);
void ledger_check(struct ledger *l);
bool ledger_ok(const struct ledger *l);
void add_check(struct ledger *l, bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void ledger_print(FILE *f, const struct ledger *l, bool histograms);
json_object *ledger_json(const struct ledger *l);

/* log2 histogram in the libbpf-tools layout: "lo -> hi : count |***|", first to last used slot. */
void print_log2_hist(FILE *f, const __u64 *vals, int nslots, const char *unit);
/* The largest value of log2 slot @slot: 2^(slot+1) - 1; the last slot ends at 2^64 - 1. */
__u64 log2_slot_hi(int slot);
/* Small helpers shared with the tests. */
const char *syscall_name(int nr);
int syscall_nr(const char *name);
__u64 json_u64(json_object *o, const char *path, bool *found);
const char *json_str(json_object *o, const char *key, const char *dflt);
/* The workload's JSON is read, not trusted: @key of @o if it is an array (else NULL), and the
 * length of an array (0 for anything else, where json-c would assert). */
json_object *json_array(json_object *o, const char *key);
size_t json_array_len(json_object *a);

#endif
