/*
 * The perf counters by role: a --peer process workload runs its sender and receiver as two
 * processes, which perfcnt.c counts apart (the workload's own process, and every other); threads
 * of one process are counted together, and the report says so rather than splitting them. Beside
 * them, the figures the reports derive: cycles per byte, IPC, cache misses per KiB.
 */
#include <stdio.h>
#include <string.h>
#include "ledger/ledger.h"
#include "ledger/perfroles.h"

const char *const perf_role_names[NR_PERF_ROLES] = { "whole", "sender", "receiver" };

const struct perf_derived_def perf_derived_defs[NR_PERF_DERIVED] = {
	{ "cycles_per_byte", "cycles/byte", "cycles", NULL, 1 },
	{ "ipc", "IPC (instructions/cycle)", "instructions", "cycles", 0 },
	{ "l1d_misses_per_kib", "L1-dcache-load-misses/KiB", "L1-dcache-load-misses", NULL, 1024 },
	{ "llc_misses_per_kib", "LLC-load-misses/KiB", "LLC-load-misses", NULL, 1024 },
	{ "llc_miss_rate", "LLC miss rate (misses/loads)", "LLC-load-misses", "LLC-loads", 0 },
	{ "cache_misses_per_kib", "cache-misses/KiB", "cache-misses", NULL, 1024 },
	{ "branch_misses_per_kib", "branch-misses/KiB", "branch-misses", NULL, 1024 },
	{ "task_clock_ns_per_byte", "task-clock ns/byte", "task-clock", NULL, 1 },
};

void perf_roles_of(const struct ledger *l, struct perf_roles *r)
{
	bool fs = l->rep.sender_pid.found, fr = l->rep.receiver_pid.found;
	__u64 snd = l->rep.sender_pid.v, rcv = l->rep.receiver_pid.v, main_pid;

	memset(r, 0, sizeof(*r));
	r->scope[ROLE_WHOLE] = PERF_WHOLE;
	if (!fs || !fr || !l->perf)
		return;		/* one side: the whole is all there is */
	main_pid = (__u64)l->perf->main_pid;
	if (snd == rcv)
		snprintf(r->why, sizeof(r->why), "sender and receiver are threads of one process (pid %llu): "
			 "not separated (--peer process runs them as two)", (unsigned long long)snd);
	else if (!l->perf->by_process)
		snprintf(r->why, sizeof(r->why), "%s", l->perf->by_process_why[0] ? l->perf->by_process_why
						       : "no counters on the workload's own process");
	else if (l->k.nprocs != 2)
		snprintf(r->why, sizeof(r->why), "%d processes traced: the one beside the workload's own is not "
			 "the other side alone", l->k.nprocs);
	else if (main_pid != snd && main_pid != rcv)
		snprintf(r->why, sizeof(r->why), "neither side is the workload's own process (pid %llu)",
			 (unsigned long long)main_pid);
	if (r->why[0])
		return;
	r->separated = true;
	r->scope[ROLE_SENDER] = main_pid == snd ? PERF_MAIN : PERF_REST;
	r->scope[ROLE_RECEIVER] = main_pid == snd ? PERF_REST : PERF_MAIN;
}

const struct perf_count *perf_role_count(const struct perf_counter *c, const struct perf_roles *r, int role)
{
	const struct perf_count *pc;

	if (role != ROLE_WHOLE && !r->separated)
		return NULL;
	pc = &c->scope[r->scope[role]];
	return c->supported && pc->counted ? pc : NULL;
}

static const struct perf_count *role_count(const struct ledger *l, const struct perf_roles *r, const char *name,
					   int role)
{
	const struct perf_counter *c = l->perf ? perf_find(l->perf, name) : NULL;

	return c ? perf_role_count(c, r, role) : NULL;
}

bool perf_derived(const struct ledger *l, const struct perf_roles *r, int d, int role, double payload, double *v)
{
	const struct perf_derived_def *def = &perf_derived_defs[d];
	const struct perf_count *num = role_count(l, r, def->num, role), *den;

	if (!num)
		return false;
	if (def->den) {
		den = role_count(l, r, def->den, role);
		if (!den || den->value <= 0)
			return false;
		*v = num->value / den->value;
		return true;
	}
	if (payload <= 0)
		return false;
	*v = num->value / (payload / def->unit);
	return true;
}

bool perf_cycles_missing(const struct ledger *l)
{
	const struct perf_counter *c = l->perf ? perf_find(l->perf, "cycles") : NULL;

	return !c || !c->counted;
}
