/* The microbenchmark harness: options, samples, distributions, steps and assumptions. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mb.h"
#include "contract/mbdocs.h"

/* ---- options ---- */

static const char *type_arg(enum mb_opt_type t)
{
	switch (t) {
	case MB_COUNT: return "N";
	case MB_SIZE: return "BYTES";
	case MB_CPU: return "CPU";
	case MB_SECONDS: return "SECS";
	case MB_CHOICE: return "WORD";
	case MB_STRING: return "PATH";
	default: return "";
	}
}

static void mb_usage(FILE *f, const char *name, const char *what, const struct mb_opt *opts)
{
	fprintf(f, "usage: %s [OPTIONS]\n%s\n", name, what);
	for (const struct mb_opt *o = opts; o->name; o++) {
		const struct mb_opt_doc *d = mb_opt_doc(name, o->name);
		char left[48];

		snprintf(left, sizeof(left), "--%s%s%s", o->name, *d->arg ? " " : "", d->arg);
		fprintf(f, "  %-22s %s\n", left, d->help);
	}
}

/*
 * Each option of @opts has its row in mb_opt_docs, with the argument its type takes, and each
 * row of @name is an option: 0, or -1 having said which is not.
 */
static int check_docs(const char *name, const struct mb_opt *opts)
{
	int n = 0, rows = 0;

	for (const struct mb_opt *o = opts; o->name; o++, n++) {
		const struct mb_opt_doc *d = mb_opt_doc(name, o->name);

		if (!d || (o->type != MB_CHOICE && strcmp(d->arg, type_arg(o->type)))) {
			fprintf(stderr, "%s: --%s is not described as it is parsed (mb_opt_docs)\n", name, o->name);
			return -1;
		}
	}
	for (int i = 0; i < mb_nr_opt_docs; i++)
		rows += !strcmp(mb_opt_docs[i].workload, name);
	if (rows != n) {
		fprintf(stderr, "%s: mb_opt_docs describes %d options, the workload takes %d\n", name, rows, n);
		return -1;
	}
	return 0;
}

int mb_parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')	/* strtoull would take spaces and a sign */
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > INT64_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

static bool in_choices(const char *word, const char *choices)
{
	size_t n = strlen(word);

	for (const char *p = choices; n && p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == '|' || p[n] == '\0'))
			return true;
	return false;
}

int mb_set_opt(const char *name, const struct mb_opt *o, const char *choices, const char *arg)
{
	uint64_t v, lo = o->min, hi = o->max ? o->max : 1ULL << 62;
	char *end;
	double d;
	long cpu;

	switch (o->type) {
	case MB_COUNT:
	case MB_SIZE:
		if (!o->max)	/* no bounds given: 1 and up */
			lo = 1;
		if ((o->type == MB_COUNT ? mb_parse_count(arg, &v) : wl_parse_size(arg, &v)) || v < lo || v > hi) {
			fprintf(stderr, "%s: invalid --%s '%s' (%llu to %llu)\n", name, o->name, arg,
				(unsigned long long)lo, (unsigned long long)hi);
			return -1;
		}
		*(uint64_t *)o->dst = v;
		return 0;
	case MB_CPU:
		errno = 0;
		cpu = strtol(arg, &end, 10);
		if (errno || end == arg || *end || cpu < -1 || cpu >= CPU_SETSIZE) {
			fprintf(stderr, "%s: invalid --%s '%s' (a CPU number, or -1 for none)\n", name,
				o->name, arg);
			return -1;
		}
		if (cpu >= 0) {
			cpu_set_t allowed;

			if (!sched_getaffinity(0, sizeof(allowed), &allowed) && !CPU_ISSET(cpu, &allowed)) {
				fprintf(stderr, "%s: invalid --%s %ld: not a CPU this process may run on\n", name,
					o->name, cpu);
				return -1;
			}
		}
		*(int *)o->dst = cpu;
		return 0;
	case MB_SECONDS:
		if (wl_parse_seconds(arg, 86400, &d)) {
			fprintf(stderr, "%s: invalid --%s '%s' (seconds, > 0)\n", name, o->name, arg);
			return -1;
		}
		*(double *)o->dst = d;
		return 0;
	case MB_CHOICE:
		if (!in_choices(arg, choices)) {
			fprintf(stderr, "%s: invalid --%s '%s' (%s)\n", name, o->name, arg, choices);
			return -1;
		}
		*(const char **)o->dst = arg;
		return 0;
	case MB_FLAG:
		*(bool *)o->dst = true;
		return 0;
	case MB_STRING:
		if (!*arg) {
			fprintf(stderr, "%s: invalid --%s '' (not empty)\n", name, o->name);
			return -1;
		}
		*(const char **)o->dst = arg;
		return 0;
	}
	return -1;
}

int mb_parse(int argc, char **argv, const char *name, const char *what, const struct mb_opt *opts)
{
	struct option longopts[64];
	int n = 0, c, idx;

	if (check_docs(name, opts))
		return -1;
	for (const struct mb_opt *o = opts; o->name && n < 62; o++, n++)
		longopts[n] = (struct option){ o->name, o->type == MB_FLAG ? no_argument : required_argument,
					       NULL, 0 };
	longopts[n] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[n + 1] = (struct option){};
	optind = 1;
	opterr = 0;	/* one line of our own per error */
	while ((c = getopt_long(argc, argv, ":h", longopts, &idx)) != -1) {
		if (c == 'h') {
			mb_usage(stdout, name, what, opts);
			exit(0);
		}
		if (c == ':') {
			fprintf(stderr, "%s: option '%s' needs a value (try --help)\n", name, argv[optind - 1]);
			return -1;
		}
		if (c != 0) {
			fprintf(stderr, "%s: unknown option '%s' (try --help)\n", name, argv[optind - 1]);
			return -1;
		}
		if (mb_set_opt(name, &opts[idx], mb_opt_doc(name, opts[idx].name)->arg, optarg))
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", name, argv[optind]);
		return -1;
	}
	return 0;
}

/* ---- timing ---- */

double mb_tsc_hz(void)
{
	static double hz;
	uint64_t t0, c0, t1, c1;

	if (!MB_HAVE_TSC)
		return 0;
	if (hz)
		return hz;
	t0 = mb_now_ns();
	c0 = mb_rdtsc();
	do
		t1 = mb_now_ns();
	while (t1 - t0 < 50000000);	/* 50 ms: 0.1% against a 50 us scheduling hiccup */
	c1 = mb_rdtsc();
	hz = (double)(c1 - c0) * 1e9 / (double)(t1 - t0);
	return hz;
}

int mb_pin(const char *name, int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "%s: cannot pin to CPU %d: %s\n", name, cpu, strerror(errno));
		return -errno;
	}
	return 0;
}

/* ---- samples ---- */

void mb_samples_reserve(struct mb_samples *s, size_t n)
{
	double *nv;

	if (n <= s->cap)
		return;
	nv = realloc(s->v, n * sizeof(*nv));
	if (!nv) {
		perror("realloc");
		exit(1);
	}
	/* touched now, and not with 0: malloc + memset(0) becomes calloc, whose fresh pages would
	 * fault when a step records into them */
	memset(nv + s->cap, 0xff, (n - s->cap) * sizeof(*nv));
	s->v = nv;
	s->cap = n;
}

void mb_samples_add(struct mb_samples *s, double v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		double *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv) {
			perror("realloc");
			exit(1);
		}
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = v;
}

void mb_samples_free(struct mb_samples *s)
{
	free(s->v);
	*s = (struct mb_samples){};
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double mb_percentile(struct mb_samples *s, double p)
{
	size_t rank;

	if (!s->n)
		return NAN;
	qsort(s->v, s->n, sizeof(*s->v), cmp_double);
	rank = (size_t)ceil(p / 100.0 * s->n);
	return s->v[rank ? rank - 1 : 0];
}

/* ---- the run ---- */

void mb_init(struct mb *m, const char *name, int cpu)
{
	*m = (struct mb){ .name = name, .cpu = cpu, .start_ns = mb_now_ns(),
			  .results = json_object_new_array(), .assumptions = json_object_new_array(),
			  .step_names = json_object_new_array(), .notes = json_object_new_array() };
}

#define MAX_CODE_FILES 64

/* The file of a /proc/self/maps line with permissions @perms, or NULL (anonymous, [stack], ...). */
static const char *maps_line(char *line, char *perms, unsigned long *lo, unsigned long *hi)
{
	char *path;
	int n = 0;

	if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", lo, hi, perms, &n) < 3 || !n)
		return NULL;
	path = line + n;
	path[strcspn(path, "\n")] = 0;
	return path[0] == '/' ? path : NULL;
}

/*
 * Reads in the pages of this program and its libraries (every mapping of a file that is mapped
 * executable somewhere) before the measured phase: on a cold start, a fresh boot, a code page
 * first run during a step would be read in then, one of the step's page-cache pages.
 */
static void page_in_code(void)
{
	char line[4096 + 128], perms[8], files[MAX_CODE_FILES][256];
	unsigned long lo, hi, page = sysconf(_SC_PAGESIZE);
	const char *path;
	int n = 0;
	FILE *f;

	for (int pass = 0; pass < 2; pass++) {
		if (!(f = fopen("/proc/self/maps", "re")))
			return;
		while (fgets(line, sizeof(line), f)) {
			bool known = false;

			if (!(path = maps_line(line, perms, &lo, &hi)))
				continue;
			for (int i = 0; i < n && !known; i++)
				known = !strcmp(files[i], path);
			if (pass == 0 && perms[2] == 'x' && !known && n < MAX_CODE_FILES)
				snprintf(files[n++], sizeof(files[0]), "%s", path);
			if (pass == 1 && known && perms[0] == 'r')
				for (unsigned long a = lo; a < hi; a += page)
					(void)*(volatile const char *)a;
		}
		fclose(f);
	}
}

void mb_begin(struct mb *m)
{
	page_in_code();
	WL_PHASE_BEGIN();
}

int mb_step_begin(struct mb *m, const char *what)
{
	json_object *s;

	if (m->steps >= MB_MAX_STEPS) {
		fprintf(stderr, "%s: more than %d steps\n", m->name, MB_MAX_STEPS);
		exit(1);
	}
	m->steps++;
	s = json_object_new_object();
	json_object_object_add(s, "step", json_object_new_int(m->steps));
	json_object_object_add(s, "name", json_object_new_string(what));
	json_object_array_add(m->step_names, s);
	WL_STEP_MARK(m->steps);
	return m->steps;
}

void mb_step_end(struct mb *m)
{
	WL_STEP_MARK(0);
}

void mb_assume(struct mb *m, int step, const char *claim, const char *measure, uint64_t expected,
	       uint64_t lo, uint64_t hi)
{
	json_object *a = json_object_new_object();

	json_object_object_add(a, "claim", json_object_new_string(claim));
	json_object_object_add(a, "step", json_object_new_int(step));
	json_object_object_add(a, "measure", json_object_new_string(measure));
	json_object_object_add(a, "expected", json_object_new_uint64(expected));
	json_object_object_add(a, "min", json_object_new_uint64(lo));
	json_object_object_add(a, "max", json_object_new_uint64(hi));
	json_object_array_add(m->assumptions, a);
}

/* Histogram of the samples: 12 equal bins from min to p99, and one for the rest up to max. */
static json_object *sample_hist(struct mb_samples *s, double lo, double p99, double max)
{
	enum { BINS = 12 };
	uint64_t count[BINS + 1] = {};
	double width = (p99 - lo) / BINS;
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < s->n; i++) {
		int b = width > 0 ? (int)((s->v[i] - lo) / width) : 0;

		if (s->v[i] > p99)
			b = BINS;
		else if (b >= BINS)
			b = BINS - 1;
		count[b]++;
	}
	for (int b = 0; b <= BINS; b++) {
		json_object *o;

		if (b == BINS && !count[b])
			break;
		o = json_object_new_object();
		json_object_object_add(o, "lo", json_object_new_double(b < BINS ? lo + b * width : p99));
		json_object_object_add(o, "hi", json_object_new_double(b < BINS - 1 ? lo + (b + 1) * width
									: b == BINS - 1 ? p99 : max));
		json_object_object_add(o, "count", json_object_new_uint64(count[b]));
		json_object_array_add(a, o);
		if (width <= 0 && b == 0 && p99 == max)
			break;	/* every sample equal: one bin says it */
	}
	return a;
}

json_object *mb_result(struct mb *m, const char *name, const char *unit, struct mb_samples *s,
		       uint64_t iters_per_sample, uint64_t warmup)
{
	json_object *r = json_object_new_object();
	double sum = 0, min, med, p99, max;

	for (size_t i = 0; i < s->n; i++)
		sum += s->v[i];
	min = mb_percentile(s, 0);
	med = mb_percentile(s, 50);
	p99 = mb_percentile(s, 99);
	max = s->n ? s->v[s->n - 1] : NAN;
	json_object_object_add(r, "name", json_object_new_string(name));
	json_object_object_add(r, "unit", json_object_new_string(unit));
	json_object_object_add(r, "samples", json_object_new_uint64(s->n));
	json_object_object_add(r, "iters_per_sample", json_object_new_uint64(iters_per_sample));
	json_object_object_add(r, "warmup", json_object_new_uint64(warmup));
	json_object_object_add(r, WL_KEY_CPU, json_object_new_int(m->cpu));
	if (s->n) {
		double mean = sum / s->n;

		/* the rounding of a sum of equal samples can put their mean a last bit outside them */
		mean = mean < min ? min : mean > max ? max : mean;
		json_object_object_add(r, "min", json_object_new_double(min));
		json_object_object_add(r, "median", json_object_new_double(med));
		json_object_object_add(r, "mean", json_object_new_double(mean));
		json_object_object_add(r, "p99", json_object_new_double(p99));
		json_object_object_add(r, "max", json_object_new_double(max));
		json_object_object_add(r, "hist", sample_hist(s, min, p99, max));
	}
	json_object_array_add(m->results, r);
	return r;
}

void mb_note(struct mb *m, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_array_add(m->notes, json_object_new_string(buf));
}

void mb_end(struct mb *m)
{
	if (!m->ended)
		WL_PHASE_END();
	m->ended = true;
}

int mb_finish(struct mb *m, json_object *extra)
{
	json_object *out = json_object_new_object();
	int err;

	mb_end(m);
	json_object_object_add(out, WL_KEY_WORKLOAD, json_object_new_string(m->name));
	json_object_object_add(out, "micro", json_object_new_boolean(1));
	json_object_object_add(out, WL_KEY_CPU, json_object_new_int(m->cpu));
	json_object_object_add(out, WL_KEY_ELAPSED_S, json_object_new_double((mb_now_ns() - m->start_ns) / 1e9));
	json_object_object_add(out, WL_KEY_RESULTS, m->results);
	json_object_object_add(out, WL_KEY_STEPS, m->step_names);
	json_object_object_add(out, WL_KEY_ASSUMPTIONS, m->assumptions);
	json_object_object_add(out, WL_KEY_NOTES, m->notes);
	if (extra) {
		json_object_object_foreach(extra, k, v)
			json_object_object_add(out, k, json_object_get(v));
		json_object_put(extra);
	}
	err = wl_emit(WL_KIND_MICRO, out);
	json_object_put(out);
	return err ? 1 : 0;
}

int mb_sample(struct mb *m, const struct mb_bench *b, uint64_t iters, uint64_t warmup, uint64_t reps,
	      struct mb_samples *s)
{
	int step;

	/* the allocator may enter the kernel (mmap, brk) or fault: not inside the step, where both count */
	mb_samples_reserve(s, s->n + reps);
	step = mb_step_begin(m, b->name);
	for (uint64_t r = 0; r < warmup + reps; r++) {
		uint64_t t0 = mb_now_ns();

		b->run(b->state, iters);
		if (r >= warmup)
			s->v[s->n++] = (double)(mb_now_ns() - t0) / iters;
	}
	mb_step_end(m);
	return step;
}

int mb_measure(struct mb *m, const struct mb_bench *b, uint64_t iters, uint64_t warmup, uint64_t reps,
	       struct mb_samples *out)
{
	struct mb_samples own = {}, *s = out ? out : &own;
	int step = mb_sample(m, b, iters, warmup, reps, s);

	mb_result(m, b->name, b->unit ? b->unit : "ns", s, iters, warmup);
	if (!out)
		mb_samples_free(&own);
	return step;
}

__attribute__((noinline)) void wl_step_mark(uint32_t id)
{
	DTRACE_PROBE1(WL_USDT_PROVIDER_T, WL_USDT_STEP_T, id);
}
