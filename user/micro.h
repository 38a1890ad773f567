/*
 * Microbenchmarks in the ledger: the kernel's figures per numbered step, the workload's claims
 * about them (assumptions) checked one by one, and the workload's own distributions. It builds on
 * the ledger and its checks; they know nothing of it.
 */
#ifndef MICRO_H
#define MICRO_H

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>
#include "kfigures.h"
#include "ledger.h"

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
	struct seg_figures seg;			/* the kernel's figures per step */
	struct assumption assumptions[MAX_ASSUMPTIONS];
	int nassumptions;
};

/* Reads the kernel's per-step figures. */
void micro_collect(struct micro *m, struct zctrace_bpf *obj);
/* Checks each assumption the workload stated in @l's report; adds the checks to @l. */
void micro_check(struct micro *m, struct ledger *l);
/* The workload's measurements and distributions, the figures per step, the assumptions. */
void micro_print(FILE *f, const struct micro *m, const struct ledger *l, bool histograms);
/* "assumptions" and "steps" of the JSON ledger @root. */
void micro_json(json_object *root, const struct micro *m, const struct ledger *l);

#endif
