/*
 * Microbenchmarks in the ledger: the kernel's figures per numbered step, the workload's claims
 * about them (assumptions) checked one by one. It builds on the ledger and its checks; they know
 * nothing of it. report_micro.h prints it.
 */
#ifndef MICRO_H
#define MICRO_H

#include <stdbool.h>
#include <stddef.h>
#include "trace/kfigures.h"
#include "ledger/ledger.h"

#define MAX_ASSUMPTIONS WL_MAX_ASSUMPTIONS

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

struct micro {
	struct step_figures steps;			/* the kernel's figures per step */
	struct assumption assumptions[MAX_ASSUMPTIONS];
	int nassumptions;
};

/* What a step's figure needs attached; forks and exits are followed on every run. */
enum step_need { NEED_NONE, NEED_SYSCALLS, NEED_SCHED, NEED_FAULTS, NEED_PAGE_CACHE };

/* The kernel's figures of a step: what assumptions can name, the step JSON and its table. */
struct step_measure {
	const char *name;
	const char *column;	/* in the per-step table; NULL: JSON and assumptions only */
	enum step_need need;
	__u64 (*value)(const struct step_stats *st);
};
extern const struct step_measure step_measures[];
extern const size_t nr_step_measures;
/* Whether the probe behind @need attached; if not, its name. */
bool step_need_met(const struct ledger *l, enum step_need need, const char **probe);

/* Reads the kernel's per-step figures. */
void micro_collect(struct micro *m, struct zctrace_bpf *obj);
/* Checks each assumption the workload stated in @l's report; adds the checks to @l. */
void micro_check(struct micro *m, struct ledger *l);

#endif
