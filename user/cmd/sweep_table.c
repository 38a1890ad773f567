/*
 * The sweep's table: its columns, fixed before the first run; a row from one run's JSON ledger
 * (a microbenchmark's: its measurements and its assumptions' verdicts too); the rows written as CSV (one line each, flushed) or as one JSON document (rewritten whole after
 * every run, so it is always complete).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "os/cli.h"
#include "os/jsonpath.h"
#include "os/machine.h"
#include "report/output.h"
#include "ledger/perfroles.h"
#include "trace/sites.h"
#include "trace/cost.h"
#include "cmd/sweep_axes.h"
#include "cmd/sweep_table.h"

static void add_column(struct columns *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_column(struct columns *c, const char *fmt, ...)
{
	va_list ap;
	char *name;

	va_start(ap, fmt);
	if (vasprintf(&name, fmt, ap) < 0)
		name = NULL;
	va_end(ap);
	if (!name)
		cli_out_of_memory();
	c->name = cli_xrealloc(c->name, (c->n + 1) * sizeof(*c->name));
	c->name[c->n++] = name;
}

/* perf's counter names use dashes ("task-clock"); column names use underscores. */
static void perf_column(char *buf, size_t n, const char *counter)
{
	snprintf(buf, n, "perf_%s", counter);
	for (char *p = buf; *p; p++)
		if (*p == '-')
			*p = '_';
}

/* A microbenchmark's columns: each measurement's figures and the assumptions' verdicts (below). */
static const char *const micro_columns[] = {
	"m_name", "m_unit", "m_samples", "m_min", "m_median", "m_mean", "m_p99", "m_max",
	"assumptions_held", "assumptions_failed", "assumption_verdicts",
};
#define NR_MICRO_COLUMNS (sizeof(micro_columns) / sizeof(micro_columns[0]))
/* ... m_* from these keys of each of the workload's results, in the same order */
static const char *const micro_keys[] = { "name", "unit", "samples", "min", "median", "mean", "p99", "max" };

/* The head of a microbenchmark's row: its point instead of sizes and threads, no stream figures. */
static void micro_head(struct columns *c, const struct axis *axes, int naxes)
{
	static const char *const after[] = {
		"workload_args", "status", "exit_code", "error", "host", "kernel", "machine", "methods",
		"elapsed_s", "bytes",
	};

	add_column(c, "run");
	add_column(c, "rep");
	add_column(c, "workload");
	for (int i = 0; i < naxes; i++)
		add_column(c, "%s", axes[i].column);
	for (unsigned i = 0; i < sizeof(after) / sizeof(after[0]); i++)
		add_column(c, "%s", after[i]);
	for (unsigned i = 0; i < NR_MICRO_COLUMNS; i++)
		add_column(c, "%s", micro_columns[i]);
}

/* The sampler's figures a row carries, and where in the ledger each is. */
static const char *const cost_cols[][2] = {
	{ "cost_samples", "cost.samples" },
	{ "copy_cpu_share", "cost.copy_share" },
	{ "zc_ns_per_call", "cost.zerocopy_per_call.ns_per_call" },
	{ "zc_copy_ns_per_call", "cost.zerocopy_per_call.copy_ns_per_call" },
	{ "page_refs_ns_per_call", "cost.page_refs_per_call.ns_per_call" },
	{ "page_refs_copy_ns_per_call", "cost.page_refs_per_call.copy_ns_per_call" },
};

void build_columns(struct columns *c, bool micro, const struct axis *axes, int naxes)
{
	static const char *const head[] = {
		"run", "rep", "workload", "size", "threads", "status", "exit_code", "error", "host",
		"kernel", "machine", "methods", "elapsed_s", "bytes", "bytes_received", "messages",
		"throughput_gbit_s", "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_max_ns",
	};
	static const char *const middle[] = {
		"cpu_copies_per_byte", "cpu_copy_sites", "ctx_switches", "ctx_voluntary", "ctx_involuntary", "offcpu_ns",
		"syscalls", "page_faults_user", "page_faults_kernel", "task_clock_ns", "cpu_ns_per_byte",
		"unattributed_bytes",
	};

	if (micro)
		micro_head(c, axes, naxes);
	for (unsigned i = 0; i < sizeof(head) / sizeof(head[0]) && !micro; i++)
		add_column(c, "%s", head[i]);
	for (int s = 0; s < NR_SITES; s++) {
		add_column(c, "%s_copies", site_name(s));
		add_column(c, "%s_bytes", site_name(s));
		add_column(c, "%s_per_byte", site_name(s));
	}
	for (unsigned i = 0; i < sizeof(middle) / sizeof(middle[0]); i++)
		add_column(c, "%s", middle[i]);
	/* the sampler's: CPU time by copy site and by kind, per payload byte */
	for (int s = 0; s < NR_SITES; s++)
		if (is_cpu_copy(s)) {
			add_column(c, "%s_cpu_ns", site_name(s));
			add_column(c, "%s_cpu_ns_per_payload_byte", site_name(s));
		}
	for (int k = NR_SITES; k < NR_COST_CLASSES; k++)
		add_column(c, "cost_%s_ns_per_payload_byte", cost_class_name(k));
	for (unsigned i = 0; i < sizeof(cost_cols) / sizeof(cost_cols[0]); i++)
		add_column(c, "%s", cost_cols[i][0]);
	for (int i = 0; i < NR_PERF_COUNTERS; i++)
		c->perf_counter[i] = perf_counter_name(i);
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		char col[96];

		perf_column(col, sizeof(col), c->perf_counter[i]);
		add_column(c, "%s", col);
	}
	add_column(c, "perf_roles");
	add_column(c, "perf_multiplexed");
	for (int role = 0; role < NR_PERF_ROLES; role++)
		for (int d = 0; d < NR_PERF_DERIVED; d++)
			add_column(c, "%s%s%s", role ? perf_role_names[role] : "", role ? "_" : "",
				   perf_derived_defs[d].key);
	add_column(c, "memcpy_mb_s");
	add_column(c, "checks_passed");
	add_column(c, "checks_failed");
	add_column(c, "failed_checks");
}

void free_columns(struct columns *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->name[i]);
	free(c->name);
}

/*
 * Sets a column; a NULL value leaves the cell empty (not measured). A column this sweep's table
 * does not have stays out: a microbenchmark's row has no throughput, whatever its ledger holds.
 */
void row_put(json_object *row, const char *col, json_object *v)
{
	if (json_object_object_get_ex(row, col, NULL))
		json_object_object_add(row, col, v);
	else
		json_object_put(v);
}

static void put_copy(json_object *row, const char *col, json_object *v)
{
	if (v)
		row_put(row, col, json_object_get(v));
}

json_object *new_row(const struct columns *c)
{
	json_object *row = json_object_new_object();

	for (int i = 0; i < c->n; i++)
		json_object_object_add(row, c->name[i], NULL);
	return row;
}

/* "methods": every probe site's method, "site=method;..." */
static void put_methods(json_object *row, json_object *probes)
{
	char *methods = NULL;
	size_t len = 0;
	bool first = true;
	FILE *f;

	if (!probes || !(f = open_memstream(&methods, &len)))
		return;
	json_object_object_foreach(probes, name, method) {
		fprintf(f, "%s%s=%s", first ? "" : ";", name, json_object_get_string(method));
		first = false;
	}
	fclose(f);
	row_put(row, "methods", json_object_new_string(methods));
	free(methods);
}

/* Each site's copies, bytes and bytes per payload byte, and the CPU copies per payload byte. */
static void put_sites(json_object *row, json_object *led, double payload)
{
	bool every_site = json_at(led, "sites") != NULL;
	double cpu_bytes = 0;
	char col[96], cpu_sites[512] = "";

	for (int s = 0; s < NR_SITES; s++) {
		json_object *site = json_at(json_at(led, "sites"), site_name(s)), *cpu;

		if (!site) {
			/* a sweep's workloads run over loopback and veth, which take page frags: nothing
			 * is copied on transmit there, counted or not */
			every_site &= s == SITE_TX_COPY;
			continue;
		}
		snprintf(col, sizeof(col), "%s_copies", site_name(s));
		put_copy(row, col, json_at(site, "count"));
		snprintf(col, sizeof(col), "%s_bytes", site_name(s));
		put_copy(row, col, json_at(site, "bytes"));
		snprintf(col, sizeof(col), "%s_per_byte", site_name(s));
		put_copy(row, col, json_at(site, "per_payload_byte"));
		cpu = json_at(site, "cpu_copy");
		if (cpu && json_object_get_boolean(cpu)) {
			cpu_bytes += json_object_get_double(json_at(site, "bytes"));
			snprintf(cpu_sites + strlen(cpu_sites), sizeof(cpu_sites) - strlen(cpu_sites), "%s%s",
				 cpu_sites[0] ? ";" : "", site_name(s));
		}
	}
	row_put(row, "cpu_copy_sites", json_object_new_string(cpu_sites));
	/* a site this kernel cannot trace may hold CPU copies: then the sum is unknown, not smaller */
	if (every_site && payload > 0)
		row_put(row, "cpu_copies_per_byte", json_object_new_double(cpu_bytes / payload));
}

/* The sampler's CPU time by site and kind per payload byte; nothing where it did not sample. */
static void put_cost(json_object *row, json_object *led, double payload)
{
	json_object *cost = json_at(led, "cost"), *measured = cost ? json_at(cost, "measured") : NULL;
	char col[96], path[128];

	if (!measured || !json_object_get_boolean(measured))
		return;
	for (unsigned i = 0; i < sizeof(cost_cols) / sizeof(cost_cols[0]); i++)
		put_copy(row, cost_cols[i][0], json_at(led, cost_cols[i][1]));
	for (int k = 0; k < NR_COST_CLASSES; k++) {
		json_object *ns;

		snprintf(path, sizeof(path), k < NR_SITES ? "sites.%s.cpu_ns" : "cost.by_kind.%s.cpu_ns",
			 cost_class_name(k));
		ns = json_at(led, path);
		if (!ns || (k < NR_SITES && !is_cpu_copy(k)))
			continue;
		if (k < NR_SITES) {
			snprintf(col, sizeof(col), "%s_cpu_ns", cost_class_name(k));
			put_copy(row, col, ns);
			snprintf(col, sizeof(col), "%s_cpu_ns_per_payload_byte", cost_class_name(k));
		} else {
			snprintf(col, sizeof(col), "cost_%s_ns_per_payload_byte", cost_class_name(k));
		}
		if (payload > 0)
			row_put(row, col, json_object_new_double(json_object_get_double(ns) / payload));
	}
}

/* Which roles the counters separate, which were multiplexed, and the figures derived from them. */
static void put_counters(json_object *row, json_object *counters)
{
	json_object *events = json_at(counters, "events");
	char col[96], scaled[512] = "";

	if (!counters)
		return;
	if (json_at(counters, "roles_why"))
		snprintf(col, sizeof(col), "whole (%.80s)", json_str(counters, "roles_why", ""));
	row_put(row, "perf_roles", json_object_new_string(json_at(counters, "roles_why") ? col
							  : json_str(counters, "roles", "?")));
	if (events && json_object_is_type(events, json_type_object)) {
		json_object_object_foreach(events, name, ev) {
			double running = json_double(ev, "whole.running_fraction");

			if (running < 1)
				snprintf(scaled + strlen(scaled), sizeof(scaled) - strlen(scaled), "%s%s=%.3g",
					 scaled[0] ? ";" : "", name, running);
		}
	}
	row_put(row, "perf_multiplexed", json_object_new_string(scaled[0] ? scaled : "none"));
	for (int role = 0; role < NR_PERF_ROLES; role++)
		for (int d = 0; d < NR_PERF_DERIVED; d++) {
			char path[96];

			snprintf(path, sizeof(path), "derived.%s.%s", perf_role_names[role], perf_derived_defs[d].key);
			snprintf(col, sizeof(col), "%s%s%s", role ? perf_role_names[role] : "", role ? "_" : "",
				 perf_derived_defs[d].key);
			put_copy(row, col, json_at(counters, path));
		}
}

/* A microbenchmark's memcpy bandwidth (membw): the copy bound's yardstick. */
static void put_memcpy(json_object *row, json_object *results)
{
	for (size_t i = 0; i < json_array_len(results); i++) {
		json_object *r = json_object_array_get_idx(results, i);

		if (!strcmp(json_str(r, "name", ""), "memcpy") && !strcmp(json_str(r, "unit", ""), "MB/s"))
			put_copy(row, "memcpy_mb_s", json_at(r, "median"));
	}
}

/* How many checks held, how many failed, and the failed ones' names. */
static void put_checks(json_object *row, json_object *checks)
{
	int passed = 0, failed = 0;
	char names[1024] = "";

	if (!checks || !json_object_is_type(checks, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(checks); i++) {
		json_object *chk = json_object_array_get_idx(checks, i), *ok = json_at(chk, "ok");
		json_object *name = json_at(chk, "name");

		if (ok && json_object_get_boolean(ok)) {
			passed++;
			continue;
		}
		failed++;
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", failed > 1 ? ";" : "",
			 name ? json_object_get_string(name) : "?");
	}
	row_put(row, "checks_passed", json_object_new_int(passed));
	row_put(row, "checks_failed", json_object_new_int(failed));
	row_put(row, "failed_checks", json_object_new_string(names));
}

void fill_from_ledger(json_object *row, json_object *led, const struct columns *c)
{
	static const char *const copied[][2] = {
		{ "elapsed_s", "workload.elapsed_s" }, { "bytes", "workload.bytes" },
		{ "bytes_received", "workload.bytes_received" }, { "messages", "workload.messages" },
		{ "throughput_gbit_s", "workload.throughput_gbit_s" },
		{ "lat_p50_ns", "workload.latency_ns.p50" }, { "lat_p90_ns", "workload.latency_ns.p90" },
		{ "lat_p99_ns", "workload.latency_ns.p99" }, { "lat_max_ns", "workload.latency_ns.max" },
		{ "ctx_switches", "sched.switches" }, { "ctx_voluntary", "sched.voluntary" },
		{ "ctx_involuntary", "sched.involuntary" }, { "offcpu_ns", "sched.offcpu_ns" },
		{ "page_faults_user", "page_faults.user" }, { "page_faults_kernel", "page_faults.kernel" },
		{ "unattributed_bytes", "unattributed" },
	};
	json_object *perf = json_at(led, "perf");
	json_object *payload_o = json_at(led, "workload.bytes"), *task_clock = perf ? json_at(perf, "task-clock") : NULL;
	double payload = payload_o ? json_object_get_double(payload_o) : 0;
	char col[96];

	for (unsigned i = 0; i < sizeof(copied) / sizeof(copied[0]); i++)
		put_copy(row, copied[i][0], json_at(led, copied[i][1]));
	put_methods(row, json_at(led, "probes"));
	put_sites(row, led, payload);
	put_cost(row, led, payload);
	if (json_at(led, "syscalls"))
		put_copy(row, "syscalls", json_at(led, "syscalls_total"));
	put_copy(row, "task_clock_ns", task_clock);
	if (task_clock && payload > 0)
		row_put(row, "cpu_ns_per_byte", json_object_new_double(json_object_get_double(task_clock) / payload));
	for (int i = 0; perf && i < NR_PERF_COUNTERS; i++) {
		perf_column(col, sizeof(col), c->perf_counter[i]);
		put_copy(row, col, json_at(perf, c->perf_counter[i]));
	}
	put_counters(row, json_at(led, "counters"));
	put_memcpy(row, json_array(led, "workload.results"));
	put_checks(row, json_at(led, "checks"));
}

/* ---- a microbenchmark's figures ---- */

/*
 * An assumption's verdict in the words of the run's own report: "holds (0 seen, page_faults)",
 * "FAILS (255 of 256, page_cache_pages)", "NOT CHECKED (why)".
 */
static void verdict_words(json_object *as, char *buf, size_t n)
{
	json_object *measured = json_at(as, "measured");
	const char *word = json_object_get_boolean(json_at(as, "holds")) ? "holds" : "FAILS";
	const char *measure = json_str(as, "measure", "?");
	__u64 m = json_u64(as, "measured", NULL), e = json_u64(as, "expected", NULL);
	__u64 lo = json_u64(as, "min", NULL), hi = json_u64(as, "max", NULL);

	if (!measured)
		snprintf(buf, n, "NOT CHECKED (%s)", json_str(as, "why", "not measured"));
	else if (e == 0 && lo == hi)
		snprintf(buf, n, "%s (%llu seen, %s)", word, (unsigned long long)m, measure);
	else if (lo == hi)
		snprintf(buf, n, "%s (%llu of %llu, %s)", word, (unsigned long long)m, (unsigned long long)e, measure);
	else
		snprintf(buf, n, "%s (%llu of %llu, %s, allowed %llu..%llu)", word, (unsigned long long)m,
			 (unsigned long long)e, measure, (unsigned long long)lo, (unsigned long long)hi);
}

/* Appends @item to the ';'-joined list in @f; an item's own ';' becomes ',' so the list splits back. */
static void list_add(FILE *f, bool first, const char *item)
{
	if (!first)
		fputc(';', f);
	for (; *item; item++)
		fputc(*item == ';' ? ',' : *item, f);
}

static void put_list(json_object *row, const char *col, char **text, size_t *len, FILE *f)
{
	fclose(f);
	row_put(row, col, json_object_new_string(*text ? *text : ""));
	free(*text);
	*text = NULL;
	*len = 0;
}

/* m_name, m_unit, ...: one entry per measurement, in the workload's order, joined by ';'. */
static void put_measurements(json_object *row, json_object *results)
{
	size_t nres = json_array_len(results);

	for (unsigned k = 0; k < sizeof(micro_keys) / sizeof(micro_keys[0]); k++) {
		char *text = NULL, num[32];
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (!f)
			cli_out_of_memory();
		for (size_t i = 0; i < nres; i++) {
			json_object *v = json_at(json_object_array_get_idx(results, i), micro_keys[k]);

			if (json_object_is_type(v, json_type_string))
				list_add(f, !i, json_object_get_string(v));
			else {
				snprintf(num, sizeof(num), v ? "%.6g" : "", json_object_get_double(v));
				list_add(f, !i, num);
			}
		}
		put_list(row, micro_columns[k], &text, &len, f);
	}
}

/* How many assumptions held and failed, and each one's claim and verdict; the JSON form's list. */
static json_object *put_assumptions(json_object *row, json_object *assumptions)
{
	json_object *out = json_object_new_array();
	char *text = NULL, verdict[256];
	size_t len = 0, held = 0, n = json_array_len(assumptions);
	FILE *f = open_memstream(&text, &len);

	if (!f)
		cli_out_of_memory();
	for (size_t i = 0; i < n; i++) {
		json_object *as = json_object_array_get_idx(assumptions, i), *copy = NULL;
		char *item;

		verdict_words(as, verdict, sizeof(verdict));
		held += json_object_get_boolean(json_at(as, "holds"));
		if (asprintf(&item, "%s: %s", json_str(as, "claim", "?"), verdict) < 0)
			cli_out_of_memory();
		list_add(f, !i, item);
		free(item);
		if (json_object_deep_copy(as, &copy, NULL))
			cli_out_of_memory();
		json_object_object_add(copy, "verdict", json_object_new_string(verdict));
		json_object_array_add(out, copy);
	}
	put_list(row, "assumption_verdicts", &text, &len, f);
	row_put(row, "assumptions_held", json_object_new_uint64(held));
	row_put(row, "assumptions_failed", json_object_new_uint64(n - held));
	return out;
}

void fill_micro(json_object *row, json_object *led, bool json)
{
	json_object *results = json_array(led, "workload.results"), *assumptions = json_array(led, "assumptions");
	json_object *verdicts;

	if (!led) {
		if (json) {
			json_object_object_add(row, "measurements", NULL);
			json_object_object_add(row, "assumptions", NULL);
		}
		return;
	}
	put_measurements(row, results);
	verdicts = put_assumptions(row, assumptions);
	if (!json) {
		json_object_put(verdicts);
		return;
	}
	/* the distributions whole (histograms too), and each assumption with its verdict */
	json_object_object_add(row, "measurements", results ? json_object_get(results) : json_object_new_array());
	json_object_object_add(row, "assumptions", verdicts);
}

/* ---- output ---- */

static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void csv_value(FILE *f, json_object *v)
{
	double d;

	switch (json_object_get_type(v)) {
	case json_type_null:
		break;
	case json_type_double:
		d = json_object_get_double(v);
		/* whole numbers (perf's scaled counts, per-byte ratios of 1) print without a fraction */
		if (d > -1e15 && d < 1e15 && d == (double)(long long)d)
			fprintf(f, "%lld", (long long)d);
		else if (d == d && d - d == 0)
			fprintf(f, "%.10g", d);
		break;
	case json_type_string:
		csv_field(f, json_object_get_string(v));
		break;
	default:
		csv_field(f, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
		break;
	}
}

static void csv_row(FILE *f, const struct columns *c, json_object *row)
{
	for (int i = 0; i < c->n; i++) {
		if (i)
			fputc(',', f);
		if (row)
			csv_value(f, json_at(row, c->name[i]));
		else
			csv_field(f, c->name[i]);
	}
	fputc('\n', f);
}

static void output_error(struct sweep_output *out, const char *what)
{
	if (!out->failed)
		fprintf(stderr, "zctrace sweep: cannot write %s: %s\n", what, strerror(errno));
	out->failed = true;
}

/* Every CSV row reaches its file before the next run; stdout's failure is said once, not again at exit. */
static void output_flush(struct sweep_output *out)
{
	if (out->csv == stdout) {
		if (stdout_flush("zctrace sweep"))
			out->failed = true;
	} else if (fflush(out->csv) || ferror(out->csv)) {
		output_error(out, out->path);
	}
}

/* The JSON document is rewritten whole after every run, through a rename, so it is always complete. */
static void json_flush(struct sweep_output *out)
{
	if (json_object_to_file_ext(out->tmp_path, out->doc, JSON_C_TO_STRING_PRETTY |
				    JSON_C_TO_STRING_NOSLASHESCAPE) || rename(out->tmp_path, out->path)) {
		output_error(out, out->path);
		unlink(out->tmp_path);
	}
}

json_object *meta_json(int argc, char **argv, const struct utsname *u, const struct machine *m)
{
	json_object *meta = json_object_new_object(), *args = json_object_new_array();
	char started[32];
	time_t t = time(NULL);
	struct tm tm;

	strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	json_object_array_add(args, json_object_new_string("zctrace"));
	for (int i = 0; i < argc; i++)
		json_object_array_add(args, json_object_new_string(argv[i]));
	json_object_object_add(meta, "host", json_object_new_string(u->nodename));
	json_object_object_add(meta, "kernel", json_object_new_string(u->release));
	json_object_object_add(meta, "started", json_object_new_string(started));
	json_object_object_add(meta, "argv", args);
	json_object_object_add(meta, "machine", machine_json(m));
	return meta;
}

int output_open(struct sweep_output *out, const char *path, bool json, const struct columns *c, json_object *meta)
{
	out->path = path && strcmp(path, "-") ? path : NULL;
	if (json) {
		out->doc = json_object_new_object();
		out->rows = json_object_new_array();
		json_object_object_add(out->doc, "meta", meta);
		json_object_object_add(out->doc, "rows", out->rows);
		if (asprintf(&out->tmp_path, "%s.tmp", out->path) < 0)
			out->tmp_path = NULL;
		if (!out->tmp_path)
			return -ENOMEM;
		json_flush(out);
		return out->failed ? -EIO : 0;
	}
	json_object_put(meta);
	out->csv = out->path ? fopen(out->path, "we") : stdout;
	if (!out->csv) {
		output_error(out, out->path);
		return -errno;
	}
	csv_row(out->csv, c, NULL);
	output_flush(out);
	return out->failed ? -EIO : 0;
}

/* Takes the row. */
void output_row(struct sweep_output *out, const struct columns *c, json_object *row)
{
	if (out->doc) {
		json_object_array_add(out->rows, row);
		json_flush(out);
		return;
	}
	csv_row(out->csv, c, row);
	output_flush(out);
	json_object_put(row);
}

void output_close(struct sweep_output *out)
{
	if (out->csv && out->csv != stdout && fclose(out->csv))
		output_error(out, out->path);
	out->csv = NULL;
	json_object_put(out->doc);
	out->doc = NULL;
	free(out->tmp_path);
}
