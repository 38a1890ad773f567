/*
 * Microbenchmarks in the ledger: the kernel's figures per numbered step, the workload's claims
 * about them checked one by one, and the workload's own distributions.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <bpf/bpf.h>
#include "micro.h"
#include "zctrace.skel.h"

void micro_collect(struct ledger *l, struct zctrace_bpf *obj)
{
	__u32 keys[MAX_SEGMENTS], in = 0, out, count;
	int fd = bpf_map__fd(obj->maps.seg_stats);

	for (__u32 s = 0; s < MAX_SEGMENTS; s++) {
		keys[s] = s;
		bpf_map_lookup_elem(fd, &keys[s], &l->seg[s]);
	}
	/* 64K counters: in batches, not one syscall each */
	fd = bpf_map__fd(obj->maps.seg_syscalls);
	for (__u32 done = 0; done < MAX_SEGMENTS * MAX_SYSCALLS; done += count) {
		static __u32 batch_keys[MAX_SYSCALLS];

		count = MAX_SYSCALLS;
		if (bpf_map_lookup_batch(fd, done ? &in : NULL, &out, batch_keys,
					 (__u64 *)l->seg_syscalls + done, &count, NULL) && errno != ENOENT)
			break;
		in = out;
		if (!count)
			break;
	}
}

/* The kernel's count of @measure in @step; false (with why) when there is no such count. */
static bool measure_value(const struct ledger *l, const char *measure, int step, __u64 *v, char *why,
			  size_t n)
{
	const struct seg_stats *st = &l->seg[step];
	struct {
		const char *name;
		__u64 value;
		bool attached;
		const char *probe;
	} m[] = {
		{ "syscalls", st->syscalls, l->syscalls_attached, "syscalls" },
		{ "switches", st->voluntary + st->involuntary, l->sched_attached, "sched" },
		{ "voluntary_switches", st->voluntary, l->sched_attached, "sched" },
		{ "involuntary_switches", st->involuntary, l->sched_attached, "sched" },
		{ "preemptions", st->preempted, l->sched_attached, "sched" },
		/* the switches the workload's own tasks caused: less those another task forced */
		{ "switches_undisturbed", st->voluntary + st->involuntary - st->preempted, l->sched_attached,
		  "sched" },
		/* a CPU passed between two target tasks: what a ping-pong on one CPU must do */
		{ "handoffs", st->handoffs, l->sched_attached, "sched" },
		{ "forks", st->forks, true, NULL },
		{ "exits", st->exits, true, NULL },
		{ "page_faults", st->faults_user, l->faults_attached, "page_faults" },
		{ "page_faults_kernel", st->faults_kernel, l->faults_attached, "page_faults" },
		{ "page_cache_pages", st->pc_pages, l->page_cache_attached, "page_cache" },
	};

	if (!strncmp(measure, "syscall:", 8)) {
		int nr = syscall_nr(measure + 8);

		if (nr < 0 || nr >= MAX_SYSCALLS) {
			snprintf(why, n, "no syscall named '%s' on this architecture", measure + 8);
			return false;
		}
		if (!l->syscalls_attached) {
			snprintf(why, n, "syscalls not supported on this kernel");
			return false;
		}
		*v = l->seg_syscalls[step][nr];
		return true;
	}
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		if (strcmp(m[i].name, measure))
			continue;
		if (!m[i].attached) {
			snprintf(why, n, "%s not supported on this kernel", m[i].probe);
			return false;
		}
		*v = m[i].value;
		return true;
	}
	snprintf(why, n, "unknown measure '%s'", measure);
	return false;
}

void micro_check(struct ledger *l)
{
	json_object *list = json_array(l->workload, "assumptions");
	int held = 0, nsteps = json_array_len(json_array(l->workload, "steps"));
	size_t n;

	l->nassumptions = 0;
	if (!list) {
		add_check(l, false, "assumptions", "the workload stated none");
		return;
	}
	/* every step begins and ends with a marker: without them no step figure means anything */
	add_check(l, l->misc.segment_marks == 2ULL * nsteps, "step markers seen",
		  "%" PRIu64 " of %d", (uint64_t)l->misc.segment_marks, 2 * nsteps);
	for (size_t i = 0; i < json_object_array_length(list) && l->nassumptions < MAX_ASSUMPTIONS; i++) {
		json_object *a = json_object_array_get_idx(list, i);
		struct assumption *as = &l->assumptions[l->nassumptions++];
		__u64 step = json_u64(a, "step", NULL);

		memset(as, 0, sizeof(*as));
		snprintf(as->claim, sizeof(as->claim), "%s", json_str(a, "claim", "?"));
		snprintf(as->measure, sizeof(as->measure), "%s", json_str(a, "measure", "?"));
		as->expected = json_u64(a, "expected", NULL);
		as->min = json_u64(a, "min", NULL);
		as->max = json_u64(a, "max", NULL);
		if (step < 1 || step >= MAX_SEGMENTS || (int)step > nsteps) {
			snprintf(as->why, sizeof(as->why), "no step %" PRIu64, (uint64_t)step);
			continue;
		}
		as->step = step;
		as->known = measure_value(l, as->measure, as->step, &as->measured, as->why, sizeof(as->why));
		as->holds = as->known && as->measured >= as->min && as->measured <= as->max;
		held += as->holds;
	}
	n = json_object_array_length(list);
	add_check(l, held == (int)n && n > 0, "assumptions hold", "%d of %zu%s", held, n,
		  n > MAX_ASSUMPTIONS ? " (more than zctrace checks: the rest count as failed)" : "");
}

static void print_value(FILE *f, double v)
{
	if (isnan(v))
		fprintf(f, " %10s", "-");
	else if (fabs(v) >= 1e6)
		fprintf(f, " %10.4g", v);
	else
		fprintf(f, " %10.*f", fabs(v) >= 100 ? 1 : fabs(v) >= 10 ? 2 : 3, v);
}

static double num(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : NAN;
}

static void print_sample_hist(FILE *f, json_object *r)
{
	json_object *hist = json_array(r, "hist");
	uint64_t max = 0;
	size_t n = json_array_len(hist);

	if (!hist)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t c = json_u64(json_object_array_get_idx(hist, i), "count", NULL);

		if (c > max)
			max = c;
	}
	fprintf(f, "\n%s: %s per iteration, %" PRIu64 " samples\n", json_str(r, "name", "?"),
		json_str(r, "unit", "?"), (uint64_t)json_u64(r, "samples", NULL));
	for (size_t i = 0; i < n; i++) {
		json_object *b = json_object_array_get_idx(hist, i);
		uint64_t c = json_u64(b, "count", NULL);
		int stars = max ? (int)((double)c * 40 / max + 0.5) : 0;

		if (c && !stars)
			stars = 1;
		fprintf(f, "  %12.4g -> %-12.4g : %-8" PRIu64 " |%-40.*s|%s\n", num(b, "lo"), num(b, "hi"), c,
			stars, "****************************************", i == n - 1 && n > 12 ? " (above p99)" : "");
	}
}

void micro_print(FILE *f, const struct ledger *l, bool histograms)
{
	json_object *results = json_array(l->workload, "results"), *notes = json_array(l->workload, "notes");
	json_object *steps = json_array(l->workload, "steps");
	int cpu = json_object_get_int(json_object_object_get(l->workload, "cpu"));

	fprintf(f, "workload: %s microbenchmark, ", json_str(l->workload, "workload", "?"));
	if (cpu >= 0)
		fprintf(f, "pinned to CPU %d\n", cpu);
	else
		fprintf(f, "not pinned\n");
	if (json_array_len(results)) {
		fprintf(f, "  %-40s %-6s %14s %10s %10s %10s %10s %10s\n", "MEASUREMENT", "UNIT",
			"SAMPLES x ITER", "MIN", "MEDIAN", "MEAN", "P99", "MAX");
		for (size_t i = 0; i < json_array_len(results); i++) {
			json_object *r = json_object_array_get_idx(results, i);
			char n[32];

			snprintf(n, sizeof(n), "%" PRIu64 " x %" PRIu64, (uint64_t)json_u64(r, "samples", NULL),
				 (uint64_t)json_u64(r, "iters_per_sample", NULL));
			fprintf(f, "  %-40.40s %-6s %14s", json_str(r, "name", "?"), json_str(r, "unit", "?"), n);
			print_value(f, num(r, "min"));
			print_value(f, num(r, "median"));
			print_value(f, num(r, "mean"));
			print_value(f, num(r, "p99"));
			print_value(f, num(r, "max"));
			fprintf(f, "\n");
		}
		fprintf(f, "  warm-up: %" PRIu64 " samples run first and dropped; values are per iteration\n",
			(uint64_t)json_u64(json_object_array_get_idx(results, 0), "warmup", NULL));
	}
	for (size_t i = 0; i < json_array_len(notes); i++) {
		const char *note = json_object_get_string(json_object_array_get_idx(notes, i));

		fprintf(f, "  %s\n", note ? note : "null");
	}
	if (histograms)
		for (size_t i = 0; i < json_array_len(results); i++)
			print_sample_hist(f, json_object_array_get_idx(results, i));

	if (json_array_len(steps)) {
		fprintf(f, "\nkernel figures per step (targets only)\n");
		fprintf(f, "  %-4s %-40s %10s %10s %10s %8s %7s %7s %8s %8s\n", "STEP", "NAME", "SYSCALLS",
			"VOLUNTARY", "INVOLUNT.", "PREEMPT.", "FORKS", "EXITS", "FAULTS", "PAGES IN");
		for (size_t i = 0; i < json_array_len(steps); i++) {
			json_object *s = json_object_array_get_idx(steps, i);
			__u64 id = json_u64(s, "step", NULL);
			const struct seg_stats *st;

			if (id < 1 || id >= MAX_SEGMENTS)
				continue;
			st = &l->seg[id];
			fprintf(f, "  %-4" PRIu64 " %-40.40s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64
				" %7" PRIu64 " %7" PRIu64 " %8" PRIu64 " %8" PRIu64 "\n", (uint64_t)id,
				json_str(s, "name", "?"), (uint64_t)st->syscalls, (uint64_t)st->voluntary,
				(uint64_t)st->involuntary, (uint64_t)st->preempted, (uint64_t)st->forks,
				(uint64_t)st->exits, (uint64_t)st->faults_user, (uint64_t)st->pc_pages);
		}
	}
	fprintf(f, "\nassumptions, each checked against the kernel's count\n");
	if (!l->nassumptions)
		fprintf(f, "  (none stated)\n");
	for (int i = 0; i < l->nassumptions; i++) {
		const struct assumption *a = &l->assumptions[i];

		fprintf(f, "  assumption: %s — ", a->claim);
		if (!a->known)
			fprintf(f, "NOT CHECKED (%s)\n", a->why);
		else if (a->expected == 0 && a->min == a->max)
			fprintf(f, "%s (%" PRIu64 " seen, %s)\n", a->holds ? "holds" : "FAILS",
				(uint64_t)a->measured, a->measure);
		else if (a->min == a->max)
			fprintf(f, "%s (%" PRIu64 " of %" PRIu64 ", %s)\n", a->holds ? "holds" : "FAILS",
				(uint64_t)a->measured, (uint64_t)a->expected, a->measure);
		else
			fprintf(f, "%s (%" PRIu64 " of %" PRIu64 ", %s, allowed %" PRIu64 "..%" PRIu64 ")\n",
				a->holds ? "holds" : "FAILS", (uint64_t)a->measured, (uint64_t)a->expected,
				a->measure, (uint64_t)a->min, (uint64_t)a->max);
	}
}

void micro_json(json_object *root, const struct ledger *l)
{
	json_object *as = json_object_new_array(), *steps = json_object_new_array();
	json_object *names = json_array(l->workload, "steps");

	for (int i = 0; i < l->nassumptions; i++) {
		const struct assumption *a = &l->assumptions[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "claim", json_object_new_string(a->claim));
		json_object_object_add(o, "step", json_object_new_int(a->step));
		json_object_object_add(o, "measure", json_object_new_string(a->measure));
		json_object_object_add(o, "expected", json_object_new_uint64(a->expected));
		json_object_object_add(o, "min", json_object_new_uint64(a->min));
		json_object_object_add(o, "max", json_object_new_uint64(a->max));
		json_object_object_add(o, "measured", a->known ? json_object_new_uint64(a->measured) : NULL);
		json_object_object_add(o, "holds", json_object_new_boolean(a->holds));
		if (!a->known)
			json_object_object_add(o, "why", json_object_new_string(a->why));
		json_object_array_add(as, o);
	}
	json_object_object_add(root, "assumptions", as);
	for (size_t i = 0; i < json_array_len(names); i++) {
		__u64 id = json_u64(json_object_array_get_idx(names, i), "step", NULL);
		const struct seg_stats *st;
		json_object *o;

		if (id < 1 || id >= MAX_SEGMENTS)
			continue;
		st = &l->seg[id];
		o = json_object_new_object();
		json_object_object_add(o, "step", json_object_new_int(id));
		json_object_object_add(o, "name", json_object_new_string(
			json_str(json_object_array_get_idx(names, i), "name", "?")));
		json_object_object_add(o, "syscalls", json_object_new_uint64(st->syscalls));
		json_object_object_add(o, "voluntary_switches", json_object_new_uint64(st->voluntary));
		json_object_object_add(o, "involuntary_switches", json_object_new_uint64(st->involuntary));
		json_object_object_add(o, "preemptions", json_object_new_uint64(st->preempted));
		json_object_object_add(o, "handoffs", json_object_new_uint64(st->handoffs));
		json_object_object_add(o, "forks", json_object_new_uint64(st->forks));
		json_object_object_add(o, "exits", json_object_new_uint64(st->exits));
		json_object_object_add(o, "page_faults", json_object_new_uint64(st->faults_user));
		json_object_object_add(o, "page_cache_pages", json_object_new_uint64(st->pc_pages));
		json_object_array_add(steps, o);
	}
	json_object_object_add(root, "steps", steps);
}
