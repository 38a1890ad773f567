/*
 * zctrace floor: a workload or a command run with an empty BPF program at every attach point a
 * traced run of it would use, and nothing else: what attaching alone costs, the physical floor
 * that the tracer's own work sits on. The attach points are found by starting the real tracer
 * (its methods chosen, refusals and fallbacks included) and stopping it again before the run.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "trace/census.h"
#include "os/cli.h"
#include "os/clock.h"
#include "cmd/floor.h"
#include "report/output.h"
#include "trace/probes.h"
#include "trace/progstats.h"
#include "report/report_progstats.h"
#include "trace/target.h"
#include "trace/tracer.h"
#include "trace/workloads.h"
#include "contract/report.h"
#include "floor.skel.h"
#include "zctrace.skel.h"

#define MAX_FLOOR_LINKS 128

struct floor_args {
	enum method cap;
	const struct workload_def *def;
	char **cmd;		/* the workload's arguments, or the command and its */
	int ncmd;
	const char *stats_path;	/* -S: the empty programs' run-time statistics, as JSON */
	bool census;		/* --census: the attach points of `zctrace top` and `export` */
	bool complete;		/* --complete: the census's, or a command's run's, with it */
};

enum { FLOOR_OPT_CENSUS = 0x100, FLOOR_OPT_COMPLETE };

static const struct argp_option floor_options[] = {
	{ "method", 'm', "METHOD", 0, "fentry, kprobe or tracepoint: nothing better than it", 0 },
	{ "prog-stats", 'S', "FILE", 0,
	  "What each empty program cost (events, run time, ns per event: kernel.bpf_stats_enabled for "
	  "the run) as JSON to FILE, and as a table on stderr: what the kernel's statistics charge an "
	  "event that does nothing", 0 },
	{ "census", FLOOR_OPT_CENSUS, NULL, 0,
	  "The attach points of the machine-wide census (zctrace top, zctrace export), around a command", 0 },
	{ "complete", FLOOR_OPT_COMPLETE, NULL, 0,
	  "Those of the census with --complete, or of 'zctrace run --complete' around a command", 0 },
	{ 0 }
};

static const char floor_doc[] =
	"Run a workload or a command with an empty BPF program at each attach point 'zctrace run' "
	"would use for it: the cost of attaching alone, the floor under the tracer's own.\v"
	"The workload's figures (or the command's output) go to stdout as without zctrace. The exit "
	"status is the workload's or command's.\n\n"
	"EXAMPLES:\n"
	"    zctrace floor tcp-onecopy --size 1K --duration 3\n"
	"    zctrace floor -- iperf3 -c 127.0.0.1 -t 3\n"
	"    zctrace floor --census -- iperf3 -c 127.0.0.1 -t 3   # what zctrace top/export attach\n"
	"    zctrace floor --complete -- iperf3 -c 127.0.0.1 -t 3 # ... zctrace run --complete\n";

static int floor_parse(int key, char *arg, struct argp_state *state)
{
	struct floor_args *a = state->input;

	switch (key) {
	case 'S':
		a->stats_path = arg;
		break;
	case 'm':
		if (parse_method(arg, &a->cap))
			argp_error(state, "unknown method '%s' (fentry, kprobe or tracepoint)", arg);
		break;
	case FLOOR_OPT_CENSUS:
		a->census = true;
		break;
	case FLOOR_OPT_COMPLETE:
		a->complete = true;
		break;
	case ARGP_KEY_ARG:
		/* the first word names a workload unless '--' came before it */
		if (state->quoted == 0 && !(a->def = find_workload(arg)))
			argp_error(state, "unknown workload '%s' (see 'zctrace list'), or '-- COMMAND'", arg);
		a->cmd = &state->argv[state->next - 1];
		a->ncmd = state->argc - state->next + 1;
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (!a->cmd)
			argp_error(state, "a workload or '-- COMMAND' is needed");
		if (a->census && a->def)
			argp_error(state, "--census runs a command ('-- COMMAND'), not a workload");
		if (a->complete && a->def)
			argp_error(state, "--complete runs a command ('-- COMMAND'), not a workload");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The programs a traced run attaches, by the tracer itself: loaded, attached and stopped again. */
static int choose_like_a_run(const struct floor_args *a, bool *use, int n)
{
	static struct probe_choice choice[NR_PROBES];
	struct census_opts co = { .cap = a->cap, .complete = a->complete };
	struct zctrace_bpf *obj;
	struct tracer_opts to;
	struct bpf_program *p;
	int err, i = 0;

	/* a run's, but counting the whole run: the floor has no phase to gate on */
	tracer_opts_for(&to, a->def, a->cap, true, a->complete);
	/* the sampler is not an attach point of the copies: its cost is make bench's (sampler) */
	to.sample_hz = 0;
	if (a->census)
		census_tracer_opts(&co, &to);
	if ((err = tracer_start(&obj, choice, &to)))
		return err;
	bpf_object__for_each_program(p, obj->obj)
		if (i < n)
			use[i++] = bpf_program__autoload(p);
	if (tracer_stop_wait(obj, 5000))
		fprintf(stderr, "zctrace floor: the tracer's programs were still being freed after 5 s\n");
	return 0;
}

/* The USDT probe a floor program of section "usdt" stands at, as zctrace's own of that name. */
static const char *usdt_name_of(const struct bpf_program *p)
{
	static const char *const names[][2] = {
		{ "phase_begin_usdt", WL_USDT_PHASE_BEGIN }, { "phase_end_usdt", WL_USDT_PHASE_END },
		{ "user_copy_usdt", WL_USDT_USER_COPY }, { "step_usdt", WL_USDT_STEP },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(bpf_program__name(p), names[i][0]))
			return names[i][1];
	return bpf_program__name(p);
}

/* The floor's programs of the same names, loaded and attached (USDT: to @binary, every process). */
static int start_floor(struct floor_bpf **fp, const bool *use, int n, const char *binary, struct bpf_link **links,
		       int *nlinks)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = probes_btf_path());
	struct zctrace_bpf *names = zctrace_bpf__open_opts(&open_opts);
	struct floor_bpf *f = floor_bpf__open_opts(&open_opts);
	struct bpf_program *p;
	int i = 0, err = 0;

	*fp = f;
	if (!names || !f) {
		zctrace_bpf__destroy(names);
		return -errno ? -errno : -ENOMEM;
	}
	bpf_object__for_each_program(p, names->obj) {
		struct bpf_program *q = bpf_object__find_program_by_name(f->obj, bpf_program__name(p));

		if (q)
			bpf_program__set_autoload(q, i < n && use[i]);
		i++;
	}
	zctrace_bpf__destroy(names);
	if ((err = floor_bpf__load(f)))
		return err;
	bpf_object__for_each_program(p, f->obj) {
		struct bpf_link *l;

		if (!bpf_program__autoload(p))
			continue;
		if (!strcmp(bpf_program__section_name(p), "usdt"))
			l = bpf_program__attach_usdt(p, -1, binary, WL_USDT_PROVIDER, usdt_name_of(p), NULL);
		else
			l = bpf_program__attach(p);
		/* a binary without that probe (no user copies) has nothing to attach */
		if (!l && !strcmp(bpf_program__section_name(p), "usdt"))
			continue;
		if (!l)
			return errno ? -errno : -EINVAL;
		if (*nlinks < MAX_FLOOR_LINKS)
			links[(*nlinks)++] = l;
	}
	return 0;
}

/* Runs @argv, waits for it, stops it on a stop signal; its exit status as a shell gives it. */
static int run_command(char **argv, bool path_search)
{
	int status = 0;
	pid_t pid = fork();

	if (pid < 0)
		return 1;
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (path_search)
			execvp(argv[0], argv);
		else
			execv(argv[0], argv);
		fprintf(stderr, "zctrace floor: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return 1;
		if (stop_signal)
			kill(pid, SIGTERM);
		sleep_ms(10);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The empty programs' statistics: a table on stderr (stdout is the workload's), JSON to the file. 0 or -1. */
static int write_stats(struct prog_stats *ps, struct floor_bpf *f, struct json_out *jo)
{
	json_object *o;
	int err;

	prog_stats_end(ps, f->obj);
	prog_stats_print(stderr, ps);
	o = prog_stats_json(ps);
	err = write_json(jo, o);
	json_object_put(o);
	return err;
}

/* libbpf's own lines: a binary without zctrace's USDT probes (a command) is no error here. */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return 0;
}

int cmd_floor(int argc, char **argv)
{
	static const struct argp argp = { floor_options, floor_parse, "WORKLOAD [ARGS] | -- COMMAND [ARGS]", floor_doc };
	struct floor_args a = { .cap = METHOD_NONE };
	struct bpf_link *links[MAX_FLOOR_LINKS];
	char binary[PATH_MAX], **cmd;
	bool use[MAX_FLOOR_LINKS] = {};
	struct floor_bpf *f = NULL;
	struct json_out jo = { .fd = -1 };
	struct prog_stats ps;
	const char *missing;
	int nlinks = 0, err, ret = 1;

	argp_err_exit_status = EXIT_USAGE;
	argv[0] = "zctrace floor";
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &a))
		return EXIT_USAGE;
	if ((missing = cli_missing_capability())) {
		fprintf(stderr, "zctrace floor: %s\n", missing);
		return 1;
	}
	if (a.def) {
		if (target_workload_binary(a.def->name, binary, sizeof(binary))) {
			fprintf(stderr, "zctrace floor: workload binary for '%s' not found (run 'make' first)\n",
				a.def->name);
			return 1;
		}
	} else {
		/* libbpf finds a USDT's binary on PATH as execvp() finds the command */
		snprintf(binary, sizeof(binary), "%s", a.cmd[0]);
	}
	cmd = cli_xrealloc(NULL, (a.ncmd + 1) * sizeof(*cmd));
	memcpy(cmd, a.cmd, a.ncmd * sizeof(*cmd));
	cmd[a.ncmd] = NULL;
	if (a.def)
		cmd[0] = binary;
	prog_stats_init(&ps);
	/* a path that cannot be written is a usage error before anything runs */
	if (a.stats_path && json_open(&jo, a.stats_path)) {
		fprintf(stderr, "zctrace floor: cannot write %s: %s\n", a.stats_path, strerror(errno));
		free(cmd);
		return EXIT_USAGE;
	}
	catch_stop_signals();
	libbpf_set_print(quiet);
	if ((err = choose_like_a_run(&a, use, MAX_FLOOR_LINKS)))
		fprintf(stderr, "zctrace floor: cannot attach the empty programs: %s\n", strerror(-err));
	else if (a.stats_path && prog_stats_enable(&ps))
		fprintf(stderr, "zctrace floor: --prog-stats: %s\n", ps.why);
	else if ((err = start_floor(&f, use, MAX_FLOOR_LINKS, binary, links, &nlinks)))
		fprintf(stderr, "zctrace floor: cannot attach the empty programs: %s\n", strerror(-err));
	else {
		prog_stats_begin(&ps);
		ret = run_command(cmd, !a.def);
		if (a.stats_path && write_stats(&ps, f, &jo) && !ret)
			ret = 1;
	}
	tracer_destroy_links(links, nlinks);
	floor_bpf__destroy(f);
	prog_stats_close(&ps);
	json_close(&jo);
	free(cmd);
	return ret;
}
