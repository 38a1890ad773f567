/*
 * zctrace sweep: traces a grid of runs (workloads x sizes x threads x repetitions), each one a
 * `zctrace run` of its own with a timeout, and writes one CSV or JSON row per run.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include "jsonpath.h"
#include "ledger.h"
#include "output.h"
#include "perfcnt.h"
#include "probes.h"
#include "cli.h"
#include "clock.h"
#include "sweep.h"
#include "wl.h"
#include "workloads.h"

#define MAX_THREADS 256
#define MAX_SIZE (1ULL << 30)		/* the workloads' own limit */
#define MAX_REPS 100000
#define TIMEOUT_BASE_S 60.0		/* per run, plus 3 x --duration */
#define TIMEOUT_MESSAGES_S 120.0	/* per run with --messages, whose length is unknown */
#define STOP_GRACE_S 10.0		/* `zctrace run` takes up to 5 s to stop its workload, then reports */
#define ERROR_LEN 300

enum run_status { RUN_OK, RUN_CHECK_FAILED, RUN_ERROR, RUN_TIMEOUT, RUN_INTERRUPTED, NR_RUN_STATUS };

static const char *const status_names[NR_RUN_STATUS] = {
	"ok", "check_failed", "error", "timeout", "interrupted",
};

struct sweep_args {
	char **workloads;
	int nworkloads;
	uint64_t *sizes;
	int nsizes;
	uint64_t *threads;
	int nthreads;
	long reps;
	const char *duration;		/* passed on as given; NULL with --messages */
	double duration_s;
	uint64_t messages;
	double timeout_s;		/* 0: the default */
	const char *method;
	const char *out_path;		/* NULL or "-": CSV on stdout */
	bool json;
	char **extra;			/* after "--": appended to every workload's arguments */
	int nextra;
};

/* The columns of a row, in order. Fixed before the first run, so the header never depends on it. */
struct columns {
	char **name;
	int n;
	const char *perf_counter[NR_PERF_COUNTERS];
};

struct run_outcome {
	enum run_status status;
	int exit_code;			/* -1 when the run was not reaped */
	char error[ERROR_LEN];
	json_object *ledger;		/* the run's JSON ledger, or NULL */
};

struct sweep_output {
	const char *path;		/* NULL: stdout */
	FILE *csv;
	json_object *doc;		/* JSON: { "meta", "rows" }, rewritten after every run */
	json_object *rows;
	char *tmp_path;
	bool failed;
};

static void out_of_memory(void)
{
	fprintf(stderr, "zctrace sweep: out of memory\n");
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		out_of_memory();
	return p;
}

#define usage_error(...) cli_usage_error("zctrace sweep", __VA_ARGS__)

/* ---- option parsing ---- */

/* Splits a comma-separated list; items[0] owns the copy. An empty item is an error. */
static int split_list(const char *list, char ***items, int *n)
{
	char *p = strdup(list);

	if (!p)
		out_of_memory();
	*items = NULL;
	*n = 0;
	for (;;) {
		char *comma = strchr(p, ',');

		if (comma)
			*comma = '\0';
		*items = xrealloc(*items, (*n + 1) * sizeof(**items));
		(*items)[(*n)++] = p;
		if (!*p)
			return -EINVAL;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

static void free_list(char **items)
{
	if (items)
		free(items[0]);
	free(items);
}

static int parse_number_list(const char *list, uint64_t **vals, int *n, uint64_t max)
{
	char **items;
	int err = split_list(list, &items, n);

	*vals = xrealloc(NULL, *n * sizeof(**vals));
	for (int i = 0; i < *n && !err; i++)
		if (wl_parse_size(items[i], &(*vals)[i]) || (*vals)[i] == 0 || (*vals)[i] > max)
			err = -EINVAL;
	free_list(items);
	return err;
}

static const char sweep_doc[] =
	"Trace a grid of runs (workloads x sizes x threads x repetitions) and write one row per run.\n"
	"\n"
	"EXAMPLES:\n"
	"    zctrace sweep tcp-twocopy,tcp-onecopy,tcp-zerocopy --sizes 1K,4K,16K,64K \\\n"
	"        --threads 1,2,4,8 --reps 3 --duration 2 -o results.csv\n"
	"    zctrace sweep tcp-sendfile --sizes 64K,1M --messages 500 -o sendfile.json\n"
	"    zctrace sweep tcp-onecopy -m tracepoint -- --port 5001\n"
	"\n"
	"Each run is 'zctrace run --no-hist --json FILE [-m M] WORKLOAD --size S --threads T "
	"(--duration D | --messages N) [WORKLOAD ARGS]'. Repetitions are the outer loop. The output "
	"format follows the extension of -o (.csv or .json); without -o, CSV goes to stdout.\n"
	"\n"
	"Exit status: 0 when every run was ok, 1 when a run failed a check or failed, 2 on a usage "
	"error, 128 + the signal when interrupted.";

static const struct argp_option sweep_options[] = {
	{ "sizes", 's', "LIST", 0, "Message sizes, suffixes K, M, G (default 64K)", 0 },
	{ "threads", 't', "LIST", 0, "Thread (connection) counts, 1 to 256 (default 1)", 0 },
	{ "reps", 'r', "N", 0, "Repetitions of every point (default 1)", 0 },
	{ "duration", 'd', "SECS", 0, "Length of each run (default 1)", 0 },
	{ "messages", 'n', "N", 0, "Messages per connection instead of --duration", 0 },
	{ "method", 'm', "METHOD", 0, "Passed to every run: fentry, kprobe or tracepoint", 0 },
	{ "output", 'o', "FILE", 0, "Write FILE.csv or FILE.json (default: CSV on stdout)", 0 },
	{ "timeout", 'T', "SECS", 0,
	  "Stop a run after SECS (default 60 + 3 x duration, 120 with --messages)", 0 },
	{},
};

static error_t sweep_parse(int key, char *arg, struct argp_state *state)
{
	struct sweep_args *a = state->input;
	enum method m;
	char *end;
	double v;

	switch (key) {
	case 's':
		free(a->sizes);
		if (parse_number_list(arg, &a->sizes, &a->nsizes, MAX_SIZE))
			argp_failure(state, EXIT_USAGE, 0,
				     "invalid --sizes '%s' (a list of 1 to 1G, e.g. 1K,4K,64K)", arg);
		break;
	case 't':
		free(a->threads);
		if (parse_number_list(arg, &a->threads, &a->nthreads, MAX_THREADS))
			argp_failure(state, EXIT_USAGE, 0,
				     "invalid --threads '%s' (a list of 1 to %d, e.g. 1,2,4)", arg, MAX_THREADS);
		break;
	case 'r':
		errno = 0;
		a->reps = strtol(arg, &end, 10);
		if (errno || end == arg || *end || a->reps < 1 || a->reps > MAX_REPS)
			argp_failure(state, EXIT_USAGE, 0, "invalid --reps '%s' (1 to %d)", arg, MAX_REPS);
		break;
	case 'd':
		if (wl_parse_seconds(arg, 86400, &v))
			argp_failure(state, EXIT_USAGE, 0, "invalid --duration '%s' (seconds, > 0)", arg);
		a->duration = arg;
		a->duration_s = v;
		break;
	case 'n':
		if (wl_parse_size(arg, &a->messages) || !a->messages)
			argp_failure(state, EXIT_USAGE, 0, "invalid --messages '%s' (> 0)", arg);
		break;
	case 'm':
		if (parse_method(arg, &m) || m == METHOD_RAW_TP || m == METHOD_NONE)
			argp_failure(state, EXIT_USAGE, 0,
				     "unknown method '%s' (fentry, kprobe or tracepoint)", arg);
		a->method = arg;
		break;
	case 'o':
		a->out_path = arg;
		break;
	case 'T':
		if (wl_parse_seconds(arg, 86400.0 * 30, &a->timeout_s))
			argp_failure(state, EXIT_USAGE, 0, "invalid --timeout '%s' (seconds, > 0)", arg);
		break;
	case ARGP_KEY_ARG:
		/* everything after "--" belongs to the workloads */
		if (!strcmp(arg, "--") || (state->next >= 2 && !strcmp(state->argv[state->next - 2], "--"))) {
			bool dashes = !strcmp(arg, "--");

			a->extra = &state->argv[state->next - (dashes ? 0 : 1)];
			a->nextra = state->argc - state->next + (dashes ? 0 : 1);
			state->next = state->argc;
			break;
		}
		if (a->workloads)
			argp_failure(state, EXIT_USAGE, 0,
				     "unexpected argument '%s' (workload arguments go after --)", arg);
		if (split_list(arg, &a->workloads, &a->nworkloads))
			argp_failure(state, EXIT_USAGE, 0, "invalid workload list '%s'", arg);
		for (int i = 0; i < a->nworkloads; i++)
			if (!find_workload(a->workloads[i]))
				argp_failure(state, EXIT_USAGE, 0, "unknown workload '%s' (try 'zctrace list')",
					     a->workloads[i]);
		break;
	case ARGP_KEY_END:
		if (!a->workloads)
			argp_failure(state, EXIT_USAGE, 0,
				     "no workloads given (e.g. 'zctrace sweep tcp-onecopy,tcp-twocopy'; 'zctrace list')");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ---- rows ---- */

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
		out_of_memory();
	c->name = xrealloc(c->name, (c->n + 1) * sizeof(*c->name));
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

static void build_columns(struct columns *c)
{
	static const char *const head[] = {
		"run", "rep", "workload", "size", "threads", "status", "exit_code", "error", "host",
		"kernel", "methods", "elapsed_s", "bytes", "bytes_received", "messages",
		"throughput_gbit_s", "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_max_ns",
	};
	static const char *const middle[] = {
		"cpu_copies_per_byte", "ctx_switches", "ctx_voluntary", "ctx_involuntary", "offcpu_ns",
		"syscalls", "page_faults_user", "page_faults_kernel", "task_clock_ns", "cpu_ns_per_byte",
	};

	for (unsigned i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		add_column(c, "%s", head[i]);
	for (int s = 0; s < NR_SITES; s++) {
		add_column(c, "%s_copies", site_name(s));
		add_column(c, "%s_bytes", site_name(s));
		add_column(c, "%s_per_byte", site_name(s));
	}
	for (unsigned i = 0; i < sizeof(middle) / sizeof(middle[0]); i++)
		add_column(c, "%s", middle[i]);
	for (int i = 0; i < NR_PERF_COUNTERS; i++)
		c->perf_counter[i] = perf_counter_name(i);
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		char col[96];

		perf_column(col, sizeof(col), c->perf_counter[i]);
		add_column(c, "%s", col);
	}
	add_column(c, "checks_passed");
	add_column(c, "checks_failed");
	add_column(c, "failed_checks");
}

static void free_columns(struct columns *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->name[i]);
	free(c->name);
}

/* Sets a column; a NULL value leaves the cell empty (not measured). */
static void put(json_object *row, const char *col, json_object *v)
{
	json_object_object_add(row, col, v);
}

static void put_copy(json_object *row, const char *col, json_object *v)
{
	if (v)
		put(row, col, json_object_get(v));
}

static json_object *new_row(const struct columns *c)
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
	put(row, "methods", json_object_new_string(methods));
	free(methods);
}

/* Each site's copies, bytes and bytes per payload byte, and the CPU copies per payload byte. */
static void put_sites(json_object *row, json_object *led, double payload)
{
	bool every_site = json_at(led, "sites") != NULL;
	double cpu_bytes = 0;
	char col[96];

	for (int s = 0; s < NR_SITES; s++) {
		json_object *site = json_at(json_at(led, "sites"), site_name(s)), *cpu;

		if (!site) {
			every_site = false;
			continue;
		}
		snprintf(col, sizeof(col), "%s_copies", site_name(s));
		put_copy(row, col, json_at(site, "count"));
		snprintf(col, sizeof(col), "%s_bytes", site_name(s));
		put_copy(row, col, json_at(site, "bytes"));
		snprintf(col, sizeof(col), "%s_per_byte", site_name(s));
		put_copy(row, col, json_at(site, "per_payload_byte"));
		cpu = json_at(site, "cpu_copy");
		if (cpu && json_object_get_boolean(cpu))
			cpu_bytes += json_object_get_double(json_at(site, "bytes"));
	}
	/* a site this kernel cannot trace may hold CPU copies: then the sum is unknown, not smaller */
	if (every_site && payload > 0)
		put(row, "cpu_copies_per_byte", json_object_new_double(cpu_bytes / payload));
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
	put(row, "checks_passed", json_object_new_int(passed));
	put(row, "checks_failed", json_object_new_int(failed));
	put(row, "failed_checks", json_object_new_string(names));
}

static void fill_from_ledger(json_object *row, json_object *led, const struct columns *c)
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
	};
	json_object *perf = json_at(led, "perf");
	json_object *payload_o = json_at(led, "workload.bytes"), *task_clock = perf ? json_at(perf, "task-clock") : NULL;
	double payload = payload_o ? json_object_get_double(payload_o) : 0;
	char col[96];

	for (unsigned i = 0; i < sizeof(copied) / sizeof(copied[0]); i++)
		put_copy(row, copied[i][0], json_at(led, copied[i][1]));
	put_methods(row, json_at(led, "probes"));
	put_sites(row, led, payload);
	if (json_at(led, "syscalls"))
		put_copy(row, "syscalls", json_at(led, "syscalls_total"));
	put_copy(row, "task_clock_ns", task_clock);
	if (task_clock && payload > 0)
		put(row, "cpu_ns_per_byte", json_object_new_double(json_object_get_double(task_clock) / payload));
	for (int i = 0; perf && i < NR_PERF_COUNTERS; i++) {
		perf_column(col, sizeof(col), c->perf_counter[i]);
		put_copy(row, col, json_at(perf, c->perf_counter[i]));
	}
	put_checks(row, json_at(led, "checks"));
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

static json_object *meta_json(int argc, char **argv, const struct utsname *u)
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
	return meta;
}

static int output_open(struct sweep_output *out, const struct sweep_args *a, const struct columns *c,
		       json_object *meta)
{
	out->path = a->out_path && strcmp(a->out_path, "-") ? a->out_path : NULL;
	if (a->json) {
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
static void output_row(struct sweep_output *out, const struct columns *c, json_object *row)
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

static void output_close(struct sweep_output *out)
{
	if (out->csv && out->csv != stdout && fclose(out->csv))
		output_error(out, out->path);
	out->csv = NULL;
	json_object_put(out->doc);
	out->doc = NULL;
	free(out->tmp_path);
}

/* ---- running one point ---- */

/* The last non-empty line of a log, on one line of bounded length. */
/*
 * The last line of a run's log. When that is zctrace's account of how the program ended ("zctrace:
 * workload X exited with status 1"), the line before it, usually the program's own reason, leads.
 */
static bool log_tail(const char *path, char *buf, size_t n)
{
	char tail[4096], *line = NULL, *prev = NULL, *save;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t size;
	ssize_t len;

	if (fd < 0)
		return false;
	size = lseek(fd, 0, SEEK_END);
	len = pread(fd, tail, sizeof(tail) - 1, size > (off_t)sizeof(tail) - 1 ? size - (off_t)(sizeof(tail) - 1) : 0);
	close(fd);
	if (len <= 0)
		return false;
	tail[len] = '\0';
	for (char *p = strtok_r(tail, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (*p) {
			prev = line;
			line = p;
		}
	}
	if (!line)
		return false;
	if (prev && !strncmp(line, "zctrace: ", 9) && (strstr(line, " exited with status ") ||
						       strstr(line, " killed by signal ")))
		snprintf(buf, n, "%s (%s)", prev, line + 9);
	else
		snprintf(buf, n, "%s", line);
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < ' ')
			*p = ' ';
	return true;
}

/*
 * The sweep is a child subreaper: a workload whose tracer was killed is reparented here instead of
 * to init. Once a run's process has been reaped, any child left is such a leftover.
 */
static void reap_leftovers(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", getpid());
	for (int round = 0; round < 64; round++) {
		pid_t pids[256];
		int n = 0;
		FILE *f = fopen(path, "re");

		if (!f)
			break;
		while (n < 256 && fscanf(f, "%d", &pids[n]) == 1)
			n++;
		fclose(f);
		for (int i = 0; i < n; i++) {
			if (getpgid(pids[i]) == pids[i])
				kill(-pids[i], SIGKILL);
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
		if (!n)
			break;
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void classify(struct run_outcome *o, const char *out_log, const char *err_log, int wstatus)
{
	json_object *ok = json_at(o->ledger, "ok"), *exit_status = json_at(o->ledger, "exit_status");
	json_object *checks = json_at(o->ledger, "checks");
	bool program_ok = !exit_status || json_object_get_int(exit_status) == 0;

	if (o->ledger && o->exit_code == 0 && ok && json_object_get_boolean(ok)) {
		o->status = RUN_OK;
		return;
	}
	if (o->ledger && o->exit_code == 1 && program_ok && checks) {
		for (size_t i = 0; i < json_object_array_length(checks); i++) {
			json_object *chk = json_object_array_get_idx(checks, i), *cok = json_at(chk, "ok");

			if (cok && json_object_get_boolean(cok))
				continue;
			o->status = RUN_CHECK_FAILED;
			snprintf(o->error, sizeof(o->error), "%s: %s",
				 json_at(chk, "name") ? json_object_get_string(json_at(chk, "name")) : "?",
				 json_at(chk, "detail") ? json_object_get_string(json_at(chk, "detail")) : "");
			return;
		}
	}
	o->status = RUN_ERROR;
	if (log_tail(err_log, o->error, sizeof(o->error)) || log_tail(out_log, o->error, sizeof(o->error)))
		return;
	if (WIFSIGNALED(wstatus))
		snprintf(o->error, sizeof(o->error), "killed by signal %d", WTERMSIG(wstatus));
	else if (!o->ledger)
		snprintf(o->error, sizeof(o->error), "exit status %d and no ledger written", o->exit_code);
	else
		snprintf(o->error, sizeof(o->error), "exit status %d", o->exit_code);
}

/* The `zctrace run` command line of one cell of the grid; @num holds its numbers' text. */
static const char **run_argv(const struct sweep_args *a, const char *workload, uint64_t size, uint64_t threads,
			     const char *json_path, char num[3][24])
{
	const char **argv = xrealloc(NULL, (20 + a->nextra) * sizeof(*argv));
	const struct workload_def *def = find_workload(workload);
	int n = 0;

	snprintf(num[0], 24, "%" PRIu64, size);
	snprintf(num[1], 24, "%" PRIu64, threads);
	snprintf(num[2], 24, "%" PRIu64, a->messages);
	argv[n++] = "zctrace";
	argv[n++] = "run";
	argv[n++] = "--no-hist";
	argv[n++] = "--json";
	argv[n++] = json_path;
	if (a->method) {
		argv[n++] = "-m";
		argv[n++] = a->method;
	}
	argv[n++] = workload;
	argv[n++] = "--size";
	argv[n++] = num[0];
	if (!def->no_threads) {
		argv[n++] = "--threads";
		argv[n++] = num[1];
	}
	if (!def->no_amount) {	/* the file workloads move their file, once */
		argv[n++] = a->duration ? "--duration" : "--messages";
		argv[n++] = a->duration ? a->duration : num[2];
	}
	for (int i = 0; i < a->nextra; i++)
		argv[n++] = a->extra[i];
	argv[n] = NULL;
	return argv;
}

/* Starts @argv (this zctrace) in a process group of its own, its output to the logs. */
static pid_t start_run(const char **argv, const char *out_log, const char *err_log)
{
	pid_t child = fork();

	if (child == 0) {
		int in = open("/dev/null", O_RDONLY), out = open(out_log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int err = open(err_log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		/* its own process group, so a timeout can stop the run and everything it started */
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(127);
		execv("/proc/self/exe", (char **)argv);
		fprintf(stderr, "zctrace sweep: cannot run /proc/self/exe: %s\n", strerror(errno));
		_exit(127);
	}
	if (child > 0)
		setpgid(child, child);
	return child;
}

/*
 * Waits for the run, stopping it (TERM, then KILL after a grace period) at @timeout seconds or a
 * stop signal; then kills whatever it left. Returns RUN_OK, RUN_TIMEOUT or RUN_INTERRUPTED.
 */
static enum run_status wait_run(pid_t child, double timeout, int *wstatus, bool *reaped, int *wait_err)
{
	double start = now_s(), kill_at = 0;
	enum run_status stopping = RUN_OK;
	bool killed = false;

	for (;;) {
		pid_t w = waitpid(child, wstatus, WNOHANG);
		double t = now_s();

		if (w == child) {
			*reaped = true;
			break;
		}
		if (w < 0 && errno != EINTR) {
			*wait_err = errno;
			break;
		}
		if (stopping == RUN_OK && (stop_signal || t - start >= timeout)) {
			/* `zctrace run` stops its workload on SIGTERM and still writes its ledger */
			stopping = stop_signal ? RUN_INTERRUPTED : RUN_TIMEOUT;
			kill(-child, SIGTERM);
			kill_at = t + STOP_GRACE_S;
		} else if (stopping != RUN_OK && !killed && t >= kill_at) {
			kill(-child, SIGKILL);
			killed = true;
		}
		sleep_ms(10);
	}
	/* nothing the run started outlives it */
	kill(-child, SIGKILL);
	reap_leftovers();
	return stopping;
}

static void run_one(const struct sweep_args *a, const char *dir, const char *workload, uint64_t size,
		    uint64_t threads, struct run_outcome *o)
{
	char json_path[PATH_MAX], out_log[PATH_MAX], err_log[PATH_MAX], num[3][24];
	const char **argv;
	double timeout = a->timeout_s ? a->timeout_s
				      : a->duration ? TIMEOUT_BASE_S + 3 * a->duration_s : TIMEOUT_MESSAGES_S;
	enum run_status stopping;
	int wstatus = 0, wait_err = 0;
	bool reaped = false;
	pid_t child;

	memset(o, 0, sizeof(*o));
	o->exit_code = -1;
	snprintf(json_path, sizeof(json_path), "%s/ledger.json", dir);
	snprintf(out_log, sizeof(out_log), "%s/stdout.log", dir);
	snprintf(err_log, sizeof(err_log), "%s/stderr.log", dir);
	unlink(json_path);
	argv = run_argv(a, workload, size, threads, json_path, num);
	child = start_run(argv, out_log, err_log);
	free(argv);
	if (child < 0) {
		o->status = RUN_ERROR;
		snprintf(o->error, sizeof(o->error), "fork: %s", strerror(errno));
		return;
	}
	stopping = wait_run(child, timeout, &wstatus, &reaped, &wait_err);
	if (reaped)
		o->exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	if (!access(json_path, F_OK))
		o->ledger = json_object_from_file(json_path);
	if (stopping == RUN_TIMEOUT) {
		o->status = RUN_TIMEOUT;
		snprintf(o->error, sizeof(o->error), "timeout after %.0f s", timeout);
	} else if (stopping == RUN_INTERRUPTED) {
		o->status = RUN_INTERRUPTED;
		snprintf(o->error, sizeof(o->error), "interrupted by signal %d", (int)stop_signal);
	} else if (!reaped) {
		o->status = RUN_ERROR;
		snprintf(o->error, sizeof(o->error), "lost the run: waitpid: %s", strerror(wait_err));
	} else {
		classify(o, out_log, err_log, wstatus);
	}
	unlink(json_path);
	unlink(out_log);
	unlink(err_log);
}

/* ---- the sweep ---- */

/* A sweep whose rows cannot be written is not worth running on. */
static bool keep_going(const struct sweep_output *out)
{
	return !stop_signal && !out->failed;
}

static const char *size_label(uint64_t v, char *buf, size_t n)
{
	if (v >= (1ULL << 30) && !(v % (1ULL << 30)))
		snprintf(buf, n, "%" PRIu64 "G", v >> 30);
	else if (v >= (1ULL << 20) && !(v % (1ULL << 20)))
		snprintf(buf, n, "%" PRIu64 "M", v >> 20);
	else if (v >= 1024 && !(v % 1024))
		snprintf(buf, n, "%" PRIu64 "K", v >> 10);
	else
		snprintf(buf, n, "%" PRIu64, v);
	return buf;
}

static const char *duration_label(double s, char *buf, size_t n)
{
	if (s < 100)
		snprintf(buf, n, "%.0fs", s);
	else
		snprintf(buf, n, "%dm%02ds", (int)(s + 0.5) / 60, (int)(s + 0.5) % 60);
	return buf;
}

static void progress(int k, int n, const char *workload, uint64_t size, uint64_t threads, long rep,
		     const struct run_outcome *o, double elapsed)
{
	json_object *tput = json_at(o->ledger, "workload.throughput_gbit_s");
	char sz[24], el[24], eta[24];

	fprintf(stderr, "[%d/%d] %s size=%s threads=%" PRIu64 " rep=%ld: %s", k, n, workload,
		size_label(size, sz, sizeof(sz)), threads, rep, status_names[o->status]);
	if (tput)
		fprintf(stderr, " %.1f Gbit/s", json_object_get_double(tput));
	if (o->status != RUN_OK)
		fprintf(stderr, ": %.160s", o->error);
	fprintf(stderr, " (elapsed %s, ETA %s)\n", duration_label(elapsed, el, sizeof(el)),
		duration_label(elapsed / k * (n - k), eta, sizeof(eta)));
}

static json_object *make_row(const struct columns *c, int k, long rep, const char *workload, uint64_t size,
			     uint64_t threads, const struct run_outcome *o, const struct utsname *u, bool json)
{
	json_object *row = new_row(c);

	put(row, "run", json_object_new_int(k));
	put(row, "rep", json_object_new_int64(rep));
	put(row, "workload", json_object_new_string(workload));
	put(row, "size", json_object_new_uint64(size));
	put(row, "threads", json_object_new_uint64(threads));
	put(row, "status", json_object_new_string(status_names[o->status]));
	if (o->exit_code >= 0)
		put(row, "exit_code", json_object_new_int(o->exit_code));
	if (o->error[0])
		put(row, "error", json_object_new_string(o->error));
	put(row, "host", json_object_new_string(u->nodename));
	put(row, "kernel", json_object_new_string(u->release));
	/* an interrupted or timed-out run keeps the figures of the partial ledger it wrote */
	if (o->ledger)
		fill_from_ledger(row, o->ledger, c);
	if (json)
		json_object_object_add(row, "checks", json_object_get(json_at(o->ledger, "checks")));
	return row;
}

/* Every run of the grid, a row each; how many ran. */
static int run_grid(const struct sweep_args *a, const char *dir, struct sweep_output *out, const struct columns *cols,
		    const struct utsname *u, int counts[NR_RUN_STATUS], int nruns, double start)
{
	int k = 0;

	/* repetitions outermost: slow drift of the machine spreads over every point */
	for (long rep = 1; rep <= a->reps && keep_going(out); rep++)
		for (int w = 0; w < a->nworkloads && keep_going(out); w++)
			for (int s = 0; s < a->nsizes && keep_going(out); s++)
				for (int t = 0; t < a->nthreads && keep_going(out); t++) {
					struct run_outcome o;

					run_one(a, dir, a->workloads[w], a->sizes[s], a->threads[t], &o);
					k++;
					counts[o.status]++;
					output_row(out, cols, make_row(cols, k, rep, a->workloads[w], a->sizes[s],
								       a->threads[t], &o, u, a->json));
					progress(k, nruns, a->workloads[w], a->sizes[s], a->threads[t], rep, &o,
						 now_s() - start);
					json_object_put(o.ledger);
				}
	return k;
}

/* The options that only make sense together: a usage error (one line) or 0. */
static int check_args(struct sweep_args *a)
{
	if (a->duration && a->messages)
		return usage_error("give either --duration or --messages, not both");
	if (!a->duration && !a->messages) {
		a->duration = "1";
		a->duration_s = 1;
	}
	if (!a->sizes)
		parse_number_list("64K", &a->sizes, &a->nsizes, MAX_SIZE);
	if (!a->threads)
		parse_number_list("1", &a->threads, &a->nthreads, MAX_THREADS);
	for (int i = 0; i < a->nworkloads; i++) {
		if (find_workload(a->workloads[i])->no_threads && (a->nthreads != 1 || a->threads[0] != 1))
			return usage_error("%s copies one file at a time: sweep it with --threads 1", a->workloads[i]);
	}
	if (a->out_path && strcmp(a->out_path, "-")) {
		const char *ext = strrchr(a->out_path, '.');

		if (ext && !strcasecmp(ext, ".json"))
			a->json = true;
		else if (!ext || strcasecmp(ext, ".csv"))
			return usage_error("cannot tell the format of '%s' from its extension (use .csv or .json)",
					   a->out_path);
	}
	if ((long long)a->nworkloads * a->nsizes * a->nthreads * a->reps > 1000000)
		return usage_error("more than 1000000 runs: make the grid smaller");
	return 0;
}

/* The sweep's last line: how many runs ran and how they ended. Returns the exit status. */
static int report_end(const struct sweep_output *out, const int counts[NR_RUN_STATUS], int k, int nruns,
		      double start)
{
	int ret;

	if (out->failed) {
		fprintf(stderr, "zctrace sweep: stopped after %d of %d runs: the rows cannot be written\n", k, nruns);
		ret = 1;
	} else if (stop_signal) {
		fprintf(stderr, "zctrace sweep: interrupted by signal %d after %d of %d runs; %d row%s in %s\n",
			(int)stop_signal, k, nruns, k, k == 1 ? "" : "s", out->path ? out->path : "stdout");
		ret = 128 + stop_signal;
	} else if (counts[RUN_OK] == k) {
		fprintf(stderr, "zctrace sweep: %d run%s in %.0f s, all ok; rows in %s\n", k, k > 1 ? "s" : "", now_s() - start,
			out->path ? out->path : "stdout");
		ret = 0;
	} else {
		char why[128] = "";

		for (int st = RUN_CHECK_FAILED; st < NR_RUN_STATUS; st++)
			if (counts[st])
				snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%d %s",
					 why[0] ? ", " : "", counts[st], status_names[st]);
		fprintf(stderr, "zctrace sweep: %d of %d runs failed (%s) in %.0f s; rows in %s\n",
			k - counts[RUN_OK], k, why, now_s() - start, out->path ? out->path : "stdout");
		ret = 1;
	}
	return ret;
}

int cmd_sweep(int argc, char **argv)
{
	static const struct argp argp = { sweep_options, sweep_parse,
					  "WORKLOAD[,WORKLOAD...] [-- WORKLOAD ARGS]", sweep_doc };
	struct sweep_args a = { .reps = 1 };
	struct sweep_output out = {};
	struct columns cols = {};
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct utsname u;
	char dir[PATH_MAX] = "", length[48], **meta_argv;
	int nruns = 0, k = 0, counts[NR_RUN_STATUS] = {}, ret = 1;
	double start;

	/* argp rewrites argv[0] for its messages: keep the command line as given for the meta data */
	meta_argv = xrealloc(NULL, (argc + 1) * sizeof(*meta_argv));
	memcpy(meta_argv, argv, argc * sizeof(*argv));

	argp_err_exit_status = EXIT_USAGE;
	argv[0] = "zctrace sweep";
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &a)) {
		free(meta_argv);
		return EXIT_USAGE;
	}
	if ((ret = check_args(&a)))
		goto cleanup;
	ret = 1;
	nruns = a.nworkloads * a.nsizes * a.nthreads * a.reps;

	uname(&u);
	build_columns(&cols);
	if (output_open(&out, &a, &cols, meta_json(argc, meta_argv, &u)))
		goto cleanup;
	snprintf(dir, sizeof(dir), "%s/zctrace-sweep.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "zctrace sweep: cannot make a temporary directory %s: %s\n", dir, strerror(errno));
		dir[0] = '\0';
		goto cleanup;
	}

	catch_stop_signals();
	sigaction(SIGPIPE, &ign, NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	if (a.duration)
		snprintf(length, sizeof(length), "%s s", a.duration);
	else
		snprintf(length, sizeof(length), "%" PRIu64 " messages per connection", a.messages);
	fprintf(stderr, "zctrace sweep: %d run%s (%d workload%s x %d size%s x %d thread count%s x %ld rep%s), "
		"%s each; writing %s\n", nruns, nruns > 1 ? "s" : "", a.nworkloads, a.nworkloads > 1 ? "s" : "", a.nsizes,
		a.nsizes > 1 ? "s" : "", a.nthreads, a.nthreads > 1 ? "s" : "", a.reps, a.reps > 1 ? "s" : "",
		length, out.path ? out.path : "CSV to stdout");

	start = now_s();
	k = run_grid(&a, dir, &out, &cols, &u, counts, nruns, start);
	ret = report_end(&out, counts, k, nruns, start);

cleanup:
	output_close(&out);
	if (out.failed && ret == 0)
		ret = 1;
	if (dir[0])
		rmdir(dir);
	free_columns(&cols);
	free(a.sizes);
	free(a.threads);
	free_list(a.workloads);
	free(meta_argv);
	return ret;
}
