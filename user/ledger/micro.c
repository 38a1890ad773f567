/*
 * Microbenchmarks in the ledger: the kernel's figures per numbered step, and the workload's claims
 * about them checked one by one (report_micro.c prints them).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include "ledger/checks.h"
#include "ledger/micro.h"
#include "os/sysnames.h"

void micro_collect(struct micro *m, struct zctrace_bpf *obj)
{
	kfigures_read_steps(&m->steps, obj);
}

#define STEP_FIELD(f) static __u64 step_##f(const struct step_stats *st) { return st->f; }
STEP_FIELD(syscalls) STEP_FIELD(voluntary) STEP_FIELD(involuntary) STEP_FIELD(preempted)
STEP_FIELD(handoffs) STEP_FIELD(forks) STEP_FIELD(exits) STEP_FIELD(faults_user) STEP_FIELD(faults_kernel)
STEP_FIELD(pc_pages)

static __u64 step_switches(const struct step_stats *st)
{
	return st->voluntary + st->involuntary;
}

/* the switches the workload's own tasks caused: less those another task forced */
static __u64 step_undisturbed(const struct step_stats *st)
{
	return st->voluntary + st->involuntary - st->preempted;
}

const struct step_measure step_measures[] = {
	{ "syscalls", "SYSCALLS", NEED_SYSCALLS, step_syscalls },
	{ "switches", NULL, NEED_SCHED, step_switches },
	{ "voluntary_switches", "VOLUNTARY", NEED_SCHED, step_voluntary },
	{ "involuntary_switches", "INVOLUNT.", NEED_SCHED, step_involuntary },
	{ "preemptions", "PREEMPT.", NEED_SCHED, step_preempted },
	{ "switches_undisturbed", NULL, NEED_SCHED, step_undisturbed },
	/* a CPU passed between two target tasks: what a ping-pong on one CPU must do */
	{ "handoffs", "HANDOFFS", NEED_SCHED, step_handoffs },
	{ "forks", "FORKS", NEED_NONE, step_forks },
	{ "exits", "EXITS", NEED_NONE, step_exits },
	{ "page_faults", "FAULTS", NEED_FAULTS, step_faults_user },
	{ "page_faults_kernel", NULL, NEED_FAULTS, step_faults_kernel },
	{ "page_cache_pages", "PAGES IN", NEED_PAGE_CACHE, step_pc_pages },
};
const size_t nr_step_measures = sizeof(step_measures) / sizeof(step_measures[0]);

bool step_need_met(const struct ledger *l, enum step_need need, const char **probe)
{
	switch (need) {
	case NEED_SYSCALLS: *probe = probe_name(PROBE_SYSCALLS); return ledger_has(l, PROBE_SYSCALLS);
	case NEED_SCHED: *probe = probe_name(PROBE_SCHED); return ledger_has(l, PROBE_SCHED);
	case NEED_FAULTS: *probe = probe_name(PROBE_PAGE_FAULTS); return ledger_has(l, PROBE_PAGE_FAULTS);
	case NEED_PAGE_CACHE: *probe = probe_name(PROBE_PAGE_CACHE); return ledger_has(l, PROBE_PAGE_CACHE);
	default: *probe = NULL; return true;
	}
}

/* The kernel's count of @a's measure in its step; false (with why) when there is no such count. */
static bool measure_value(const struct micro *m, const struct ledger *l, struct assumption *a)
{
	const char *probe;
	char measure[sizeof(a->measure)], *why = a->why;
	size_t n = sizeof(a->why);
	int step = a->step;
	__u64 *v = &a->measured;

	memcpy(measure, a->measure, sizeof(measure));	/* the why is written beside it */

	if (!strncmp(measure, "syscall:", 8)) {
		int nr = syscall_nr(measure + 8);

		if (nr < 0 || nr >= MAX_SYSCALLS) {
			snprintf(why, n, "no syscall named '%s' on this architecture", measure + 8);
			return false;
		}
		if (!step_need_met(l, NEED_SYSCALLS, &probe)) {
			snprintf(why, n, "%s not supported on this kernel", probe);
			return false;
		}
		*v = m->steps.syscalls[step][nr];
		return true;
	}
	for (size_t i = 0; i < nr_step_measures; i++) {
		if (strcmp(step_measures[i].name, measure))
			continue;
		if (!step_need_met(l, step_measures[i].need, &probe)) {
			snprintf(why, n, "%s not supported on this kernel", probe);
			return false;
		}
		*v = step_measures[i].value(&m->steps.stats[step]);
		return true;
	}
	snprintf(why, n, "unknown measure '%s'", measure);
	return false;
}

/* "; the first that failed: step S, MEASURE: measured X, not MIN-MAX" (or why it has no figure); "" if none did */
static const char *first_failed(const struct micro *m, char *buf, size_t n)
{
	for (int i = 0; i < m->nassumptions; i++) {
		const struct assumption *a = &m->assumptions[i];

		if (a->holds)
			continue;
		if (a->known)
			snprintf(buf, n, "; the first that failed: step %d, %.48s: measured %llu, not %llu-%llu", a->step,
				 a->measure, (unsigned long long)a->measured, (unsigned long long)a->min,
				 (unsigned long long)a->max);
		else
			snprintf(buf, n, "; the first that failed: %.48s: %.96s", a->measure, a->why);
		return buf;
	}
	return "";
}

void micro_check(struct micro *m, struct ledger *l)
{
	char failed[224];
	const struct wl_report *rep = &l->rep;
	int held = 0, nsteps = rep->nsteps_listed;
	size_t n = rep->nassumptions_listed;

	m->nassumptions = 0;
	if (!rep->has_assumptions) {
		add_check(l, false, "assumptions", "the workload stated none");
		return;
	}
	/* every step begins and ends with a marker: without them no step figure means anything */
	add_check(l, l->k.misc.step_marks == 2ULL * nsteps, "step markers seen",
		  "%" PRIu64 " of %d", (uint64_t)l->k.misc.step_marks, 2 * nsteps);
	for (size_t i = 0; i < rep->nassumptions && m->nassumptions < MAX_ASSUMPTIONS; i++) {
		const struct wl_assumption *a = &rep->assumptions[i];
		struct assumption *as = &m->assumptions[m->nassumptions++];
		__u64 step = a->step;

		memset(as, 0, sizeof(*as));
		snprintf(as->claim, sizeof(as->claim), "%s", a->claim ?: "?");
		snprintf(as->measure, sizeof(as->measure), "%s", a->measure ?: "?");
		as->expected = a->expected;
		as->min = a->min;
		as->max = a->max;
		if (step < 1 || step >= MAX_STEPS || (int)step > nsteps) {
			snprintf(as->why, sizeof(as->why), "no step %" PRIu64, (uint64_t)step);
			continue;
		}
		as->step = step;
		as->known = measure_value(m, l, as);
		as->holds = as->known && as->measured >= as->min && as->measured <= as->max;
		held += as->holds;
	}
	add_check(l, held == (int)n && n > 0, "assumptions hold", "%d of %zu%s%s", held, n,
		  n > MAX_ASSUMPTIONS ? " (more than zctrace checks: the rest count as failed)" : "",
		  first_failed(m, failed, sizeof(failed)));
}
