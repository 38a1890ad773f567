/*
 * zctrace sweep: traces a grid of runs (workloads x sizes x threads x repetitions, or a
 * microbenchmark's own parameters: --param axes), each one a `zctrace run` in a process of its own
 * with a timeout, all under one tracer loaded once, and writes one CSV or JSON row per run.
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>
#include "os/jsonpath.h"
#include "ledger/ledger.h"
#include "os/machine.h"
#include "report/output.h"
#include "os/perfcnt.h"
#include "trace/probes.h"
#include "os/cli.h"
#include "os/clock.h"
#include "cmd/run.h"
#include "cmd/sweep.h"
#include "cmd/sweep_axes.h"
#include "cmd/sweep_table.h"
#include "trace/target.h"
#include "trace/tracer.h"
#include "zctrace.skel.h"
#include "contract/opts.h"
#include "trace/workloads.h"

#define MAX_THREADS 256
#define MAX_SIZE (1ULL << 30)		/* the workloads' own limit */
#define MAX_REPS 100000
#define TIMEOUT_BASE_S 60.0		/* per run, plus 3 x --duration */
#define MAX_SHARED_BINARIES 16	/* workload binaries with the shared tracer's USDT programs */
#define TIMEOUT_MESSAGES_S 120.0	/* per run with --messages or of a microbenchmark, whose length is unknown */
#define STOP_GRACE_S 10.0		/* `zctrace run` takes up to 5 s to stop its workload, then reports */
#define ERROR_LEN 300
#define MEMBW_WORKLOAD "membw"		/* --membw's runs */

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
	const char *ledger_dir;		/* --ledgers: each run's whole ledger kept there, or NULL */
	char **extra;			/* after "--": appended to every workload's arguments */
	int nextra;
	uint64_t membw_size;		/* --membw: a memcpy bandwidth run of this size per repetition; 0: none */
	bool micro;			/* microbenchmarks: --param axes instead of sizes and threads */
	struct axis axes[MAX_AXES];	/* --param, in the order given: the last varies fastest */
	int naxes;
	struct axis_map *maps;		/* [workload * naxes + axis]: the options each value sets */
};

struct run_outcome {
	enum run_status status;
	int exit_code;			/* -1 when the run was not reaped */
	char error[ERROR_LEN];
	json_object *ledger;		/* the run's JSON ledger, or NULL */
};

/* One point of the grid: a stream workload's size and threads, or a microbenchmark's axis values. */
struct cell {
	const char *workload;
	int w;				/* index in the sweep's workloads; -1 for --membw's run */
	uint64_t size, threads;		/* stream workloads */
	const int *point;		/* microbenchmarks: the value index on each axis */
	bool bandwidth;			/* --membw's run, which takes none of the grid's workload arguments */
};

#define usage_error(...) cli_usage_error("zctrace sweep", __VA_ARGS__)

/* ---- option parsing ---- */

/* Splits a comma-separated list; items[0] owns the copy. An empty item is an error. */
static int split_list(const char *list, char ***items, int *n)
{
	char *p = strdup(list);

	if (!p)
		cli_out_of_memory();
	*items = NULL;
	*n = 0;
	for (;;) {
		char *comma = strchr(p, ',');

		if (comma)
			*comma = '\0';
		*items = cli_xrealloc(*items, (*n + 1) * sizeof(**items));
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

	*vals = cli_xrealloc(NULL, *n * sizeof(**vals));
	for (int i = 0; i < *n && !err; i++)
		if (wl_parse_size(items[i], &(*vals)[i]) || (*vals)[i] == 0 || (*vals)[i] > max)
			err = -EINVAL;
	free_list(items);
	return err;
}

static const char sweep_doc[] =
	"Trace a grid of runs (workloads x sizes x threads x repetitions, or a microbenchmark's "
	"own options x repetitions) and write one row per run.\n"
	"\n"
	"EXAMPLES:\n"
	"    zctrace sweep tcp-twocopy,tcp-onecopy,tcp-zerocopy --sizes 1K,4K,16K,64K \\\n"
	"        --threads 1,2,4,8 --reps 3 --duration 2 -o results.csv\n"
	"    zctrace sweep tcp-sendfile --sizes 64K,1M --messages 500 -o sendfile.json\n"
	"    zctrace sweep tcp-onecopy -m tracepoint -- --port 5001\n"
	"    zctrace sweep memlat --param size=4K,32K,256K,2M,16M,64M -o memlat.json\n"
	"    zctrace sweep fileread --param file-size=1M,16M --param cache=cold,warm -o fileread.json\n"
	"\n"
	"Each run is 'zctrace run --no-hist --passes=traced --json FILE [-m M] WORKLOAD --size S --threads T "
	"(--duration D | --messages N) [WORKLOAD ARGS]'. Repetitions are the outer loop. The output "
	"format follows the extension of -o (.csv or .json); without -o, CSV goes to stdout. A "
	"microbenchmark's run is 'zctrace run --no-hist --passes=traced --json FILE WORKLOAD [each "
	"axis's option and value] [WORKLOAD ARGS]'; each value is checked by the workload's own "
	"parser before the first run. The runs share one tracer, loaded once and reset before each "
	"run (again only where a workload needs other programs), each in a process of its own.\n"
	"\n"
	"Exit status: 0 when every run was ok, 1 when a run failed a check or failed (or its row or "
	"ledger could not be written), 2 on a usage error, 128 + the signal when interrupted.";

static const struct argp_option sweep_options[] = {
	{ "sizes", 's', "LIST", 0, "Message sizes, suffixes K, M, G (default 64K)", 0 },
	{ "threads", 't', "LIST", 0, "Thread (connection) counts, 1 to 256 (default 1)", 0 },
	{ "reps", 'r', "N", 0, "Repetitions of every point (default 1)", 0 },
	{ "duration", 'd', "SECS", 0, "Length of each run (default 1)", 0 },
	{ "messages", 'n', "N", 0, "Messages per connection instead of --duration", 0 },
	{ "method", 'm', "METHOD", 0, "Passed to every run: fentry, kprobe or tracepoint", 0 },
	{ "output", 'o', "FILE", 0, "Write FILE.csv or FILE.json (default: CSV on stdout)", 0 },
	{ "param", 'P', "NAME=LIST", 0,
	  "Microbenchmarks: an axis of the grid, NAME an option of the workload (or size for memlat and "
	  "filecache, procs for contention, args for call), LIST its values; repeat for a grid", 0 },
	{ "membw", 'b', "SIZE", 0,
	  "Also run 'membw --kind memcpy --size SIZE' once per repetition: the copy bandwidth the "
	  "findings hold the copies against", 0 },
	{ "timeout", 'T', "SECS", 0,
	  "Stop a run after SECS (default 60 + 3 x duration, 120 with --messages)", 0 },
	{ "ledgers", 'L', "DIR", 0,
	  "Also keep each run's whole ledger (what 'zctrace run --json' writes) as DIR/run-K.json, K "
	  "the row's run number (none for a run that wrote none); DIR is made if missing", 0 },
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
	case 'b':
		if (wl_parse_size(arg, &a->membw_size) || a->membw_size < 4096 || a->membw_size % 8 ||
		    a->membw_size > (4ULL << 30))
			argp_failure(state, EXIT_USAGE, 0, "invalid --membw '%s' (4K to 4G, a multiple of 8)", arg);
		break;
	case 'P':
		if (a->naxes == MAX_AXES)
			argp_failure(state, EXIT_USAGE, 0, "more than %d --param axes", MAX_AXES);
		if (axis_parse(arg, &a->axes[a->naxes]))
			exit(EXIT_USAGE);	/* its one line is out */
		a->naxes++;
		break;
	case 'L':
		a->ledger_dir = arg;
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

/* ---- running one point ---- */

/*
 * The last non-empty line of a run's log, on one line of bounded length. When that is zctrace's
 * account of how the program ended ("zctrace: workload X exited with status 1"), the line before
 * it, usually the program's own reason, leads.
 */
static bool log_tail(int fd, char *buf, size_t n)
{
	char tail[4096], *line = NULL, *prev = NULL, *save;
	off_t size;
	ssize_t len;

	size = lseek(fd, 0, SEEK_END);
	len = pread(fd, tail, sizeof(tail) - 1, size > (off_t)sizeof(tail) - 1 ? size - (off_t)(sizeof(tail) - 1) : 0);
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

/* Whether @pid is a run's detach child (tracer_stop_background()), left to finish on its own. */
static bool detaching(pid_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (!(f = fopen(path, "re")))
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return !strcmp(comm, "zctrace-detach\n");
}

/*
 * The sweep is a child subreaper: a workload whose tracer was killed is reparented here instead of
 * to init. Once a run's process has been reaped, any child left is such a leftover, but for a
 * run's detach child: it lets the kernel's links go while the next run starts, and is reaped once
 * it is done (or at the end of the sweep).
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
		int killed = 0;

		for (int i = 0; i < n; i++) {
			if (detaching(pids[i]))
				continue;
			if (getpgid(pids[i]) == pids[i])
				kill(-pids[i], SIGKILL);
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			killed++;
		}
		if (!killed)
			break;
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* The detach children still at work, waited for (30 s at most): nothing the sweep started outlives it. */
static void await_detaching(void)
{
	double end = now_s() + 30;
	pid_t w;

	while ((w = waitpid(-1, NULL, WNOHANG)) >= 0 && now_s() < end)
		if (w == 0)
			sleep_ms(10);
}

static void classify(struct run_outcome *o, int out_log, int err_log, int wstatus)
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

/* The workload's own options of a microbenchmark's point: each axis's value. */
static int point_argv(const struct sweep_args *a, const struct cell *c, const char **argv, int n)
{
	for (int i = 0; i < a->naxes; i++)
		n = axis_argv(&a->maps[c->w * a->naxes + i], a->axes[i].values[c->point[i]], argv, n);
	return n;
}

/* The `zctrace run` command line of one cell of the grid; @num holds its numbers' text. */
static const char **run_argv(const struct sweep_args *a, const struct cell *c, const char *json_path,
			     char num[3][24])
{
	const char **argv = cli_xrealloc(NULL, (20 + 2 * MAX_AXIS_OPTIONS * a->naxes + a->nextra) * sizeof(*argv));
	const struct workload_def *def = find_workload(c->workload);
	int n = 0;

	snprintf(num[0], 24, "%" PRIu64, c->size);
	snprintf(num[1], 24, "%" PRIu64, c->threads);
	snprintf(num[2], 24, "%" PRIu64, a->messages);
	argv[n++] = "zctrace";
	argv[n++] = "run";
	argv[n++] = "--no-hist";
	argv[n++] = "--passes=traced";	/* one pass a cell: a grid compares its cells, all traced alike */
	argv[n++] = "--json";
	argv[n++] = json_path;
	if (a->method) {
		argv[n++] = "-m";
		argv[n++] = a->method;
	}
	argv[n++] = c->workload;
	if (c->point)
		n = point_argv(a, c, argv, n);
	if (!a->micro) {
		argv[n++] = "--size";
		argv[n++] = num[0];
	}
	if (!a->micro && !def->no_threads) {
		argv[n++] = "--threads";
		argv[n++] = num[1];
	}
	if (!a->micro && !def->no_amount) {	/* the file workloads move their file, once */
		argv[n++] = a->duration ? "--duration" : "--messages";
		argv[n++] = a->duration ? a->duration : num[2];
	}
	if (c->bandwidth) {	/* the grid's workload arguments are not membw's */
		argv[n++] = "--kind";
		argv[n++] = "memcpy";
	}
	for (int i = 0; i < a->nextra && !c->bandwidth; i++)
		argv[n++] = a->extra[i];
	argv[n] = NULL;
	return argv;
}

/*
 * The tracer the sweep loads once and runs cell after cell under: a load and attach cost about
 * 0.1 s, and a second run's attach waits behind the first one's detach, against cells of a second.
 * Each cell is still a process of its own (its own process group, logs and timeout), forked with
 * the tracer's descriptors, which reset it for their run (run_under()). A cell whose workload needs
 * other programs (the zerocopy path, or none of it) gets a tracer loaded for those.
 */
static struct {
	struct zctrace_bpf *obj;
	struct tracer_opts opts;
	struct probe_choice choice[NR_PROBES];
	bool failed;			/* a load with these opts failed: such cells load their own */
	struct tracer_opts failed_opts;
	/* the USDT programs, attached to each workload binary once, for every process that runs it */
	struct {
		char binary[PATH_MAX];
		struct bpf_link *links[TARGET_NR_USDT];
	} usdt[MAX_SHARED_BINARIES];
	int nusdt;
} shared;

static void release_shared(void)
{
	struct bpf_link *links[MAX_SHARED_BINARIES * TARGET_NR_USDT];
	int n = 0;

	for (int b = 0; b < shared.nusdt; b++)
		for (int i = 0; i < TARGET_NR_USDT; i++)
			links[n++] = shared.usdt[b].links[i];
	memset(shared.usdt, 0, sizeof(shared.usdt));
	shared.nusdt = 0;
	/* the detach child is spared by reap_leftovers() and waited for at the sweep's end */
	if (shared.obj)
		tracer_stop_background(shared.obj, links, n);
	shared.obj = NULL;
}

/* Whether @def's binary has the shared tracer's USDT programs, attached now if not yet. */
static bool shared_usdt(const struct workload_def *def)
{
	char binary[PATH_MAX];

	if (target_workload_binary(def->name, binary, sizeof(binary)))
		return false;
	for (int b = 0; b < shared.nusdt; b++)
		if (!strcmp(shared.usdt[b].binary, binary))
			return true;
	if (shared.nusdt == MAX_SHARED_BINARIES)
		return false;
	if (target_attach_usdt(shared.obj, -1, binary, def, shared.usdt[shared.nusdt].links)) {
		tracer_destroy_links(shared.usdt[shared.nusdt].links, TARGET_NR_USDT);
		return false;
	}
	snprintf(shared.usdt[shared.nusdt].binary, PATH_MAX, "%s", binary);
	shared.nusdt++;
	return true;
}

/* The loaded tracer for cell @c, loaded now if the last one does not suit it, or NULL to run alone. */
static struct zctrace_bpf *shared_tracer(const struct sweep_args *a, const struct cell *c)
{
	const struct workload_def *def = find_workload(c->workload);
	enum method cap = METHOD_NONE;
	struct tracer_opts want;
	libbpf_print_fn_t print;
	int err;

	if (!def || (a->method && parse_method(a->method, &cap)))
		return NULL;	/* the run says what is wrong */
	tracer_opts_for(&want, def, cap, false, false);
	if (shared.obj && tracer_opts_same(&shared.opts, &want))
		return shared_usdt(def) ? shared.obj : NULL;
	if (shared.failed && tracer_opts_same(&shared.failed_opts, &want))
		return NULL;
	release_shared();
	memset(shared.choice, 0, sizeof(shared.choice));
	/* libbpf's log as a run shows it (with -v); a refusal's one line says why the runs load their own */
	print = libbpf_set_print(cli_libbpf_print);
	err = tracer_start(&shared.obj, shared.choice, &want);
	libbpf_set_print(print);
	if (err) {
		shared.obj = NULL;
		shared.failed = true;
		shared.failed_opts = want;
		return NULL;
	}
	shared.opts = want;
	return shared_usdt(def) ? shared.obj : NULL;
}

/*
 * Starts @argv (a `zctrace run` line) in a process group of its own, its output to the logs: under
 * @obj in a fork of this process, or else as this zctrace anew.
 */
/*
 * A run's outputs: its ledger, stdout and stderr, each in a file of memory (memfd) no name leads
 * to, so that nothing is left behind whatever ends the sweep, SIGKILL included. The run writes its
 * ledger to /dev/fd/N of the one given to it.
 */
struct run_files {
	int json, out, err;
};

static int run_files_open(struct run_files *f)
{
	f->json = memfd_create("zctrace-sweep-ledger", MFD_CLOEXEC);
	f->out = memfd_create("zctrace-sweep-stdout", MFD_CLOEXEC);
	f->err = memfd_create("zctrace-sweep-stderr", MFD_CLOEXEC);
	return f->json < 0 || f->out < 0 || f->err < 0 ? -errno : 0;
}

static void run_files_close(struct run_files *f)
{
	for (int *fd = &f->json; fd <= &f->err; fd++)
		if (*fd >= 0)
			close(*fd);
}

/* The ledger the run wrote, or NULL. */
static json_object *run_ledger(int fd)
{
	struct stat st;

	if (fstat(fd, &st) || st.st_size == 0 || lseek(fd, 0, SEEK_SET))
		return NULL;
	return json_object_from_fd(fd);
}

static pid_t start_run(const char **argv, const struct run_files *f, struct zctrace_bpf *obj)
{
	pid_t child;

	fflush(NULL);	/* nothing of the sweep's own output is written twice */
	child = fork();
	if (child == 0) {
		int in = open("/dev/null", O_RDONLY), argc = 0;

		/* its own process group, so a timeout can stop the run and everything it started */
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		/* the ledger's file stays open across exec: /dev/fd/N names it */
		if (in < 0 || dup2(in, 0) < 0 || dup2(f->out, 1) < 0 || dup2(f->err, 2) < 0 ||
		    fcntl(f->json, F_SETFD, 0))
			_exit(127);
		if (obj) {
			while (argv[argc])
				argc++;
			/* exit(), not _exit(): the run's output is flushed, and a failed write fails it */
			exit(run_under(argc - 1, (char **)argv + 1, obj, shared.choice));
		}
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

static void run_one(const struct sweep_args *a, const struct cell *c, struct run_outcome *o)
{
	char json_path[32], num[3][24];
	struct run_files f;
	const char **argv;
	double timeout = a->timeout_s ? a->timeout_s
				      : a->duration && !a->micro ? TIMEOUT_BASE_S + 3 * a->duration_s : TIMEOUT_MESSAGES_S;
	enum run_status stopping;
	int wstatus = 0, wait_err = 0;
	bool reaped = false;
	pid_t child;

	memset(o, 0, sizeof(*o));
	o->exit_code = -1;
	if (run_files_open(&f)) {
		o->status = RUN_ERROR;
		snprintf(o->error, sizeof(o->error), "memfd_create: %s", strerror(errno));
		run_files_close(&f);
		return;
	}
	snprintf(json_path, sizeof(json_path), "/dev/fd/%d", f.json);
	argv = run_argv(a, c, json_path, num);
	child = start_run(argv, &f, shared_tracer(a, c));
	free(argv);
	if (child < 0) {
		o->status = RUN_ERROR;
		snprintf(o->error, sizeof(o->error), "fork: %s", strerror(errno));
		run_files_close(&f);
		return;
	}
	stopping = wait_run(child, timeout, &wstatus, &reaped, &wait_err);
	if (reaped)
		o->exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	o->ledger = run_ledger(f.json);
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
		classify(o, f.out, f.err, wstatus);
	}
	run_files_close(&f);
}

/* ---- the sweep ---- */

/* Whether a run's whole ledger could not be kept (--ledgers): the sweep stops, as for its rows. */
static bool ledger_failed;

/* A sweep whose rows, or the ledgers it was asked to keep, cannot be written is not worth running on. */
static bool keep_going(const struct sweep_output *out)
{
	return !stop_signal && !out->failed && !ledger_failed;
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

/* "size=4K file-size=1M": a microbenchmark's point as its axes' values were given. */
static const char *point_label(const struct sweep_args *a, const struct cell *c, char *buf, size_t n)
{
	buf[0] = '\0';
	for (int i = 0; i < a->naxes; i++)
		snprintf(buf + strlen(buf), n - strlen(buf), "%s%s=%s", i ? " " : "", a->axes[i].name,
			 a->axes[i].values[c->point[i]]);
	return buf;
}

/* A microbenchmark's run in brief: its first measurement and how many of its assumptions held. */
static void progress_micro(const struct run_outcome *o)
{
	json_object *results = json_array(o->ledger, "workload.results"), *as = json_array(o->ledger, "assumptions");
	json_object *first = json_object_array_get_idx(results, 0);
	size_t held = 0;

	if (first)
		fprintf(stderr, " %s %.4g %s", json_str(first, "name", "?"), json_double(first, "median"),
			json_str(first, "unit", ""));
	if (json_array_len(results) > 1)
		fprintf(stderr, " (+%zu more)", json_array_len(results) - 1);
	for (size_t i = 0; i < json_array_len(as); i++)
		held += json_object_get_boolean(json_at(json_object_array_get_idx(as, i), "holds"));
	if (json_array_len(as))
		fprintf(stderr, ", %zu of %zu assumptions hold", held, json_array_len(as));
}

static void progress(const struct sweep_args *a, int k, int n, const struct cell *c, long rep,
		     const struct run_outcome *o, double elapsed)
{
	json_object *tput = json_at(o->ledger, "workload.throughput_gbit_s");
	char label[256], sz[24], el[24], eta[24];

	if (c->point)
		fprintf(stderr, "[%d/%d] %s %s%srep=%ld: %s", k, n, c->workload, point_label(a, c, label, sizeof(label)),
			a->naxes ? " " : "", rep, status_names[o->status]);
	else
		fprintf(stderr, "[%d/%d] %s size=%s threads=%" PRIu64 " rep=%ld: %s", k, n, c->workload,
			size_label(c->size, sz, sizeof(sz)), c->threads, rep, status_names[o->status]);
	if (tput)
		fprintf(stderr, " %.1f Gbit/s", json_object_get_double(tput));
	if (c->point && o->ledger)
		progress_micro(o);
	if (o->status != RUN_OK)
		fprintf(stderr, ": %.160s", o->error);
	fprintf(stderr, " (elapsed %s, ETA %s)\n", duration_label(elapsed, el, sizeof(el)),
		duration_label(elapsed / k * (n - k), eta, sizeof(eta)));
}

/* A microbenchmark's point: each axis's value in its column, and the options they set. */
static void put_point(json_object *row, const struct sweep_args *a, const struct cell *c)
{
	const char *argv[2 * MAX_AXIS_OPTIONS * MAX_AXES];
	char args[512] = "";
	int n = point_argv(a, c, argv, 0);

	for (int i = 0; i < a->naxes; i++)
		row_put(row, a->axes[i].column, axis_cell(&a->maps[c->w * a->naxes + i], a->axes[i].values[c->point[i]]));
	for (int i = 0; i < n; i++)
		snprintf(args + strlen(args), sizeof(args) - strlen(args), "%s%s", i ? " " : "", argv[i]);
	row_put(row, "workload_args", json_object_new_string(args));
}

static json_object *make_row(const struct sweep_args *a, const struct columns *cols, int k, long rep,
			     const struct cell *c, const struct run_outcome *o, const struct utsname *u,
			     const struct machine *m)
{
	json_object *row = new_row(cols);

	row_put(row, "run", json_object_new_int(k));
	row_put(row, "rep", json_object_new_int64(rep));
	row_put(row, "workload", json_object_new_string(c->workload));
	if (c->point) {
		put_point(row, a, c);
	} else {
		row_put(row, "size", json_object_new_uint64(c->size));
		row_put(row, "threads", json_object_new_uint64(c->threads));
	}
	row_put(row, "status", json_object_new_string(status_names[o->status]));
	if (o->exit_code >= 0)
		row_put(row, "exit_code", json_object_new_int(o->exit_code));
	if (o->error[0])
		row_put(row, "error", json_object_new_string(o->error));
	row_put(row, "host", json_object_new_string(u->nodename));
	row_put(row, "kernel", json_object_new_string(u->release));
	row_put(row, "machine", json_object_new_string(m->line));
	/* an interrupted or timed-out run keeps the figures of the partial ledger it wrote */
	if (o->ledger)
		fill_from_ledger(row, o->ledger, cols);
	if (a->micro)
		fill_micro(row, o->ledger, a->json);
	if (a->json)
		json_object_object_add(row, "checks", json_object_get(json_at(o->ledger, "checks")));
	return row;
}

/* What every run of a sweep writes to, and how far it has got. */
struct sweep_run {
	const struct sweep_args *a;
	struct sweep_output *out;
	const struct columns *cols;
	const struct utsname *u;
	const struct machine *m;
	int *counts;		/* [NR_RUN_STATUS] */
	int nruns, k;
	double start;
};

/* --ledgers' directory, made if missing, and one this process can write into: 0, or -1 with why on stderr. */
static int ledger_dir_ready(const char *dir)
{
	struct stat st;

	/* room for "/run-K.json" after it */
	if (strlen(dir) > PATH_MAX - 32) {
		fprintf(stderr, "zctrace sweep: the --ledgers directory's path is too long\n");
		return -1;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "zctrace sweep: cannot make the --ledgers directory %s: %s\n", dir, strerror(errno));
		return -1;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "zctrace sweep: --ledgers %s is not a directory\n", dir);
		return -1;
	}
	if (access(dir, W_OK | X_OK)) {
		fprintf(stderr, "zctrace sweep: cannot write into the --ledgers directory %s: %s\n", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Keeps run @k's whole ledger as run-K.json in --ledgers' directory: the JSON `zctrace run --json`
 * wrote, as json-c writes it again. A run that wrote none has no file (its row says why), nor one an earlier sweep left
 * in the same directory. A ledger that cannot be written stops the sweep, as a row would.
 */
static void keep_ledger(struct sweep_run *sr, int k, json_object *ledger)
{
	char path[PATH_MAX];

	if (!sr->a->ledger_dir)
		return;
	snprintf(path, sizeof(path), "%s/run-%d.json", sr->a->ledger_dir, k);
	errno = 0;
	if (!ledger ? unlink(path) && errno != ENOENT
		    : json_object_to_file_ext(path, ledger, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE)) {
		fprintf(stderr, "zctrace sweep: cannot %s %s: %s\n", ledger ? "write" : "remove the stale", path,
			errno ? strerror(errno) : json_util_get_last_err());
		/* half a ledger is worse than none */
		if (ledger)
			unlink(path);
		ledger_failed = true;
	}
}

static void run_point(struct sweep_run *sr, long rep, const struct cell *c)
{
	struct run_outcome o;

	run_one(sr->a, c, &o);
	sr->k++;
	keep_ledger(sr, sr->k, o.ledger);
	sr->counts[o.status]++;
	output_row(sr->out, sr->cols, make_row(sr->a, sr->cols, sr->k, rep, c, &o, sr->u, sr->m));
	progress(sr->a, sr->k, sr->nruns, c, rep, &o, now_s() - sr->start);
	json_object_put(o.ledger);
}

/* Every point of a microbenchmark's axes, the last axis fastest, like nested loops in --param order. */
static void run_axes(struct sweep_run *sr, long rep, int w)
{
	const struct sweep_args *a = sr->a;
	int point[MAX_AXES] = {};
	struct cell c = { .workload = a->workloads[w], .w = w, .point = point };

	while (keep_going(sr->out)) {
		int i = a->naxes - 1;

		run_point(sr, rep, &c);
		/* the odometer: bounded by the product of the axes' lengths */
		for (; i >= 0 && ++point[i] == a->axes[i].nvalues; i--)
			point[i] = 0;
		if (i < 0)
			break;
	}
}

/* Every run of the grid, a row each, the --membw run first in each repetition; how many ran. */
static int run_grid(struct sweep_run *sr)
{
	const struct sweep_args *a = sr->a;
	struct cell membw = { .workload = MEMBW_WORKLOAD, .w = -1, .size = a->membw_size, .threads = 1,
			      .bandwidth = true };

	/* repetitions outermost: slow drift of the machine spreads over every point */
	for (long rep = 1; rep <= a->reps && keep_going(sr->out); rep++) {
		if (a->membw_size)
			run_point(sr, rep, &membw);
		for (int w = 0; w < a->nworkloads && keep_going(sr->out); w++) {
			if (a->micro) {
				run_axes(sr, rep, w);
				continue;
			}
			for (int s = 0; s < a->nsizes && keep_going(sr->out); s++)
				for (int t = 0; t < a->nthreads && keep_going(sr->out); t++)
					run_point(sr, rep, &(struct cell){ .workload = a->workloads[w], .w = w,
									   .size = a->sizes[s],
									   .threads = a->threads[t] });
		}
	}
	return sr->k;
}

/* The stream grid's option given to a microbenchmark sweep, or NULL. */
static const char *stream_option(const struct sweep_args *a)
{
	return a->sizes ? "--sizes" : a->threads ? "--threads" : a->duration ? "--duration"
	       : a->messages ? "--messages" : a->membw_size ? "--membw" : NULL;
}

/* Microbenchmarks and stream workloads are swept apart: their grids have different axes. */
static int check_kind(struct sweep_args *a)
{
	const struct workload_def *first = find_workload(a->workloads[0]);

	for (int i = 1; i < a->nworkloads; i++)
		if (find_workload(a->workloads[i])->micro != first->micro)
			return usage_error("%s is a microbenchmark and %s is not: sweep them apart",
					   first->micro ? first->name : a->workloads[i],
					   first->micro ? a->workloads[i] : first->name);
	a->micro = first->micro;
	if (!a->micro && a->naxes)
		return usage_error("--param is for microbenchmarks: %s takes --sizes and --threads, and its own "
				   "options after --", first->name);
	return 0;
}

/* A microbenchmark sweep: every axis mapped onto each workload's options, every value checked. */
static int check_micro(struct sweep_args *a)
{
	const char *stream = stream_option(a);
	long long runs = (long long)a->nworkloads * a->reps;
	int err;

	if (stream)
		return usage_error("%s is for the stream workloads: a microbenchmark sweeps its own options with "
				   "--param NAME=LIST (e.g. 'zctrace sweep memlat --param size=4K,64K')", stream);
	for (int i = 0; i < a->naxes; i++) {
		for (int j = 0; j < i; j++)
			if (!strcmp(a->axes[i].column, a->axes[j].column))
				return usage_error("--param %s is given twice: one axis per name", a->axes[i].name);
		runs *= a->axes[i].nvalues;
	}
	if (runs > 1000000)
		return usage_error("more than 1000000 runs: make the grid smaller");
	a->maps = cli_xrealloc(NULL, (a->nworkloads * a->naxes + 1) * sizeof(*a->maps));
	for (int w = 0; w < a->nworkloads; w++)
		for (int i = 0; i < a->naxes; i++)
			if ((err = axis_resolve(find_workload(a->workloads[w]), &a->axes[i],
						&a->maps[w * a->naxes + i])))
				return err;
	return 0;
}

/* The options that only make sense together: a usage error (one line) or 0. */
static int check_stream(struct sweep_args *a)
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
		const struct workload_def *def = find_workload(a->workloads[i]);

		if (def->no_threads && (a->nthreads != 1 || a->threads[0] != 1))
			return usage_error("%s copies one file at a time: sweep it with --threads 1", a->workloads[i]);
		for (int s = 0; def->max_size && s < a->nsizes; s++)
			if (a->sizes[s] > def->max_size)
				return usage_error("%s takes --size up to %lu: sweep it with smaller --sizes (the "
						   "default is 64K)", a->workloads[i], def->max_size);
	}
	if ((long long)a->nworkloads * a->nsizes * a->nthreads * a->reps > 1000000)
		return usage_error("more than 1000000 runs: make the grid smaller");
	return 0;
}

static int check_args(struct sweep_args *a)
{
	int err;

	if (a->out_path && strcmp(a->out_path, "-")) {
		const char *ext = strrchr(a->out_path, '.');

		if (ext && !strcasecmp(ext, ".json"))
			a->json = true;
		else if (!ext || strcasecmp(ext, ".csv"))
			return usage_error("cannot tell the format of '%s' from its extension (use .csv or .json)",
					   a->out_path);
	}
	if ((err = check_kind(a)))
		return err;
	return a->micro ? check_micro(a) : check_stream(a);
}

/* The sweep's last line: how many runs ran and how they ended. Returns the exit status. */
static int report_end(const struct sweep_output *out, const int counts[NR_RUN_STATUS], int k, int nruns,
		      double start)
{
	int ret;

	if (out->failed) {
		fprintf(stderr, "zctrace sweep: stopped after %d of %d runs: the rows cannot be written\n", k, nruns);
		ret = 1;
	} else if (ledger_failed) {
		fprintf(stderr, "zctrace sweep: stopped after %d of %d runs: a run's ledger cannot be kept (--ledgers); "
			"%d row%s in %s\n", k, nruns, k, k == 1 ? "" : "s", out->path ? out->path : "stdout");
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

static int axis_points(const struct sweep_args *a)
{
	int n = 1;

	for (int i = 0; i < a->naxes; i++)
		n *= a->axes[i].nvalues;
	return n;
}

/* The sweep's first line: how many runs, over what, and where the rows go. */
static void announce(const struct sweep_args *a, int nruns, const struct sweep_output *out)
{
	const char *to = out->path ? out->path : "CSV to stdout";
	char length[48];

	if (a->micro) {
		fprintf(stderr, "zctrace sweep: %d run%s (%d microbenchmark%s", nruns, nruns > 1 ? "s" : "",
			a->nworkloads, a->nworkloads > 1 ? "s" : "");
		for (int i = 0; i < a->naxes; i++)
			fprintf(stderr, " x %s (%d)", a->axes[i].name, a->axes[i].nvalues);
		fprintf(stderr, " x %ld rep%s); writing %s\n", a->reps, a->reps > 1 ? "s" : "", to);
		return;
	}
	if (a->duration)
		snprintf(length, sizeof(length), "%s s", a->duration);
	else
		snprintf(length, sizeof(length), "%" PRIu64 " messages per connection", a->messages);
	fprintf(stderr, "zctrace sweep: %d run%s (%d workload%s x %d size%s x %d thread count%s%s x %ld rep%s), "
		"%s each; writing %s\n", nruns, nruns > 1 ? "s" : "", a->nworkloads, a->nworkloads > 1 ? "s" : "",
		a->nsizes, a->nsizes > 1 ? "s" : "", a->nthreads, a->nthreads > 1 ? "s" : "",
		a->membw_size ? ", + 1 membw" : "", a->reps, a->reps > 1 ? "s" : "", length, to);
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
	struct machine mach;
	struct sweep_run sr;
	char **meta_argv;
	int nruns = 0, k = 0, counts[NR_RUN_STATUS] = {}, ret = 1;
	double start;

	/* argp rewrites argv[0] for its messages: keep the command line as given for the meta data */
	meta_argv = cli_xrealloc(NULL, (argc + 1) * sizeof(*meta_argv));
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
	if (a.ledger_dir && ledger_dir_ready(a.ledger_dir))
		goto cleanup;
	nruns = a.micro ? a.nworkloads * axis_points(&a) * a.reps
			: (a.nworkloads * a.nsizes * a.nthreads + (a.membw_size ? 1 : 0)) * a.reps;

	uname(&u);
	machine_describe(&mach);
	build_columns(&cols, a.micro, a.axes, a.naxes);
	if (output_open(&out, a.out_path, a.json, &cols, meta_json(argc, meta_argv, &u, &mach)))
		goto cleanup;
	catch_stop_signals();
	sigaction(SIGPIPE, &ign, NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	announce(&a, nruns, &out);

	start = now_s();
	sr = (struct sweep_run){ .a = &a, .out = &out, .cols = &cols, .u = &u, .m = &mach,
				 .counts = counts, .nruns = nruns, .start = start };
	k = run_grid(&sr);
	release_shared();
	ret = report_end(&out, counts, k, nruns, start);
	await_detaching();

cleanup:
	output_close(&out);
	if (out.failed && ret == 0)
		ret = 1;
	free_columns(&cols);
	free(a.sizes);
	free(a.threads);
	free_list(a.workloads);
	for (int i = 0; i < a.naxes; i++)
		axis_free(&a.axes[i]);
	free(a.maps);
	free(meta_argv);
	return ret;
}
