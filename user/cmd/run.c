/*
 * zctrace run: a workload, a command or a running process traced, its copy ledger checked and
 * reported; for a built-in workload, its timing figures from an untraced pass beside it.
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
#include <bpf/libbpf.h>
#include "os/cli.h"
#include "os/clock.h"
#include "ledger/checks.h"
#include "ledger/effect.h"
#include "ledger/ledger.h"
#include "report/live.h"
#include "ledger/micro.h"
#include "os/netns.h"
#include "report/output.h"
#include "os/perfcnt.h"
#include "trace/probes.h"
#include "trace/progstats.h"
#include "report/report_progstats.h"
#include "report/report_json.h"
#include "report/report_text.h"
#include "cmd/run.h"
#include "trace/target.h"
#include "trace/tracer.h"
#include "trace/cost.h"
#include "contract/opts.h"
#include "trace/workloads.h"
#include "zctrace.skel.h"

/* ---- option parsing ---- */

struct run_args {
	const struct workload_def *def;
	char **cmd;		/* command and its arguments (workload args for built-ins) */
	int ncmd;
	pid_t pid;
	double duration;
	double interval;	/* -i: live view every this many seconds; 0 = off */
	const char *json_path;
	bool histograms;
	bool no_phase;
	bool prog_stats;	/* --prog-stats: the kernel's run-time statistics of each BPF program */
	bool one_pass;		/* --passes traced: a built-in workload's timing from the traced pass alone */
	bool baseline;		/* --baseline: a command run once more untraced, for its wall time */
	bool complete;		/* --complete: a command's every syscall, by the raw syscall tracepoints */
	bool full;		/* --full: the complete report */
	unsigned sample_hz;	/* --sample-hz: the sampler's rate on each CPU, 0 = off */
	bool time_copies;	/* --time-copies: each copy routine's calls timed */
	enum method cap;
};

static const char run_doc[] =
	"Trace the copies of a workload, a command or a running process, and print its copy ledger.\n"
	"\n"
	"USAGE: zctrace run [OPTIONS] WORKLOAD [WORKLOAD ARGS]\n"
	"       zctrace run [OPTIONS] -- COMMAND [ARGS]\n"
	"       zctrace run [OPTIONS] -p PID -d SECONDS\n"
	"\n"
	"EXAMPLES:\n"
	"    zctrace run tcp-twocopy                      # 5000 64 KiB messages over loopback\n"
	"    zctrace run tcp-zerocopy --size 1M --threads 4\n"
	"    zctrace run --json out.json tcp-sendfile --size 4K --duration 2\n"
	"    zctrace run -- python3 -m http.server        # any command and its children\n"
	"    zctrace run -p 1234 -d 5                     # a running process, for 5 seconds\n"
	"    zctrace run -i 1 tcp-onecopy --duration 10   # live rates and histograms every second\n"
	"    zctrace run tcp-zerocopy --netns             # receiver on a second host: veth, namespaces\n"
	"    zctrace run remote-fileread --netns --pattern random --file-size 256M\n"
	"    zctrace run udp-zerocopy --size 60000 --gso 1400 # 43 datagrams a send, pinned\n"
	"\n"
	"Exit status: 0 when the traced program succeeded and every check held, 1 when a check\n"
	"failed, 2 on a usage error.";

#define OPT_SAMPLE_HZ 0x100	/* --sample-hz: a long option alone */
#define OPT_TIME_COPIES 0x101	/* --time-copies: a long option alone */

static const struct argp_option run_options[] = {
	{ "pid", 'p', "PID", 0, "Trace a running process (and the children it forks from now on)", 0 },
	{ "duration", 'd', "SECONDS", 0, "With -p: how long to trace", 0 },
	{ "json", 'j', "FILE", 0, "Also write the ledger as JSON to FILE ('-' for stdout)", 0 },
	{ "interval", 'i', "SECONDS", 0,
	  "Live view: redraw the sites' rates and copy-size histograms every SECONDS", 0 },
	{ "no-hist", 'H', NULL, 0, "Leave the histograms out of the table", 0 },
	{ "no-phase", 'P', NULL, 0, "Count the whole run, not just the workload's measured phase", 0 },
	{ "method", 'm', "METHOD", 0,
	  "Use no method better than METHOD: fentry, kprobe or tracepoint (default: the best that works)", 0 },
	{ "prog-stats", 'S', NULL, 0,
	  "Print what each BPF program cost: events, run time, ns per event, events per second "
	  "(kernel.bpf_stats_enabled for the run)", 0 },
	{ "passes", 'T', "both|traced", 0,
	  "A built-in workload runs twice by default: traced (its ledger) and untraced (its timing "
	  "figures), both shown with their ratio; 'traced' runs the traced pass alone", 0 },
	{ "baseline", 'B', NULL, 0, "With -- COMMAND: run it once more untraced, and show both wall times", 0 },
	{ "complete", 'C', NULL, 0,
	  "With -- COMMAND or -p: also count every syscall by number, through the raw syscall "
	  "tracepoints (they slow every syscall of the machine); where fentry is allowed, the I/O "
	  "syscalls are otherwise followed at their own functions", 0 },
	{ "full", 'F', NULL, 0,
	  "The complete report: every site, the boundary account by call, every perf counter and check, "
	  "the tracer effect's table, the off-CPU histogram", 0 },
	{ "sample-hz", OPT_SAMPLE_HZ, "HZ", 0,
	  "Sample the traced tasks' stacks HZ times a second on each CPU, for the CPU time of each copy "
	  "site (default " COST_DEFAULT_HZ_STR "; 0: no sampler)", 0 },
	{ "time-copies", OPT_TIME_COPIES, NULL, 0,
	  "Also time each socket receive's copy and each deferred copy from entry to return "
	  "(fentry/fexit): a cross-check of the sampler's time for those sites, at a cost per copy "
	  "call", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's log", 0 },
	{},
};

/* -d and -i: at most 30 days */
#define MAX_RUN_SECONDS (86400.0 * 30)

#define usage_error(...) cli_usage_error("zctrace", __VA_ARGS__)

static error_t run_parse(int key, char *arg, struct argp_state *state)
{
	struct run_args *a = state->input;
	char *end;
	long v;

	switch (key) {
	case 'p':
		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || *end || v <= 0 || v > INT_MAX)
			argp_failure(state, EXIT_USAGE, 0, "invalid PID '%s'", arg);
		a->pid = v;
		break;
	case 'd':
		if (wl_parse_seconds(arg, MAX_RUN_SECONDS, &a->duration))
			argp_failure(state, EXIT_USAGE, 0, "invalid duration '%s' (seconds, > 0)", arg);
		break;
	case 'j':
		a->json_path = arg;
		break;
	case 'i':
		if (wl_parse_seconds(arg, MAX_RUN_SECONDS, &a->interval) || a->interval < 0.1)
			argp_failure(state, EXIT_USAGE, 0, "invalid interval '%s' (seconds, >= 0.1)", arg);
		break;
	case 'H':
		a->histograms = false;
		break;
	case 'P':
		a->no_phase = true;
		break;
	case 'm':
		if (parse_method(arg, &a->cap) || a->cap == METHOD_RAW_TP)
			argp_failure(state, EXIT_USAGE, 0,
				     "unknown method '%s' (fentry, kprobe or tracepoint)", arg);
		break;
	case 'S':
		a->prog_stats = true;
		break;
	case 'T':
		if (strcmp(arg, "both") && strcmp(arg, "traced"))
			argp_failure(state, EXIT_USAGE, 0, "unknown --passes '%s' (both or traced)", arg);
		a->one_pass = !strcmp(arg, "traced");
		break;
	case 'B':
		a->baseline = true;
		break;
	case 'C':
		a->complete = true;
		break;
	case 'F':
		a->full = true;
		break;
	case OPT_SAMPLE_HZ:
		if (cost_parse_hz(arg, 0, &a->sample_hz))
			argp_failure(state, EXIT_USAGE, 0, "invalid --sample-hz '%s' (0 to %d)", arg, COST_MAX_HZ);
		break;
	case OPT_TIME_COPIES:
		a->time_copies = true;
		break;
	case 'v':
		cli_verbose = true;
		break;
	case ARGP_KEY_ARG:
		/* the first non-option ends zctrace's options: the rest belongs to the target */
		a->cmd = &state->argv[state->next - 1];
		a->ncmd = state->argc - state->next + 1;
		state->next = state->argc;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ---- the run ---- */

/*
 * The arguments of a network workload, parsed with the workloads' own parser on a copy, before
 * anything is made: zctrace needs --peer, --netns, --rate and --delay, and a bad option is a usage
 * error here, not a failed run with namespaces made for nothing.
 */
static int scan_peer_options(int argc, char **argv, const struct workload_def *def, struct wl_opts *o)
{
	char **copy = calloc(argc + 1, sizeof(*copy));
	int err;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, argv, argc * sizeof(*copy));
	optind = 0;	/* a fresh getopt scan */
	err = wl_parse_opts(argc, copy, def->name, def->opt_groups, o);
	optind = 0;
	free(copy);
	return err;
}

/*
 * A network microbenchmark parses its own options; zctrace needs only where its server runs, to
 * make the namespaces for --peer netns. A value it does not know is the workload's to refuse.
 */
static void scan_micro_peer(int argc, char **argv, struct wl_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *word = cli_opt_value(argv[i], "--peer");

		if (!strcmp(argv[i], "--peer") && i + 1 < argc)
			word = argv[++i];
		else if (!word && !strcmp(argv[i], "--"))
			break;
		if (word && wl_parse_peer(word, &o->peer))
			o->peer = WL_PEER_THREAD;
	}
}

/* Everything one run holds, so that each of its steps is a function of its own. */
struct run {
	struct run_args a;
	struct wl_opts wo;		/* a network workload's options: --netns, --rate, --delay */
	struct target t;
	struct target t0;		/* the untraced pass of the same target, before the traced one */
	struct wl_report *rep0;		/* ... its report, read */
	struct effect effect;		/* ... held against the traced pass */
	bool two_passes;		/* the untraced pass was due: its figures, or why there are none */
	struct json_out jo;
	struct netns_pair np;
	struct prog_stats ps;
	struct probe_choice *choice;
	struct zctrace_bpf *obj;
	bool borrowed;			/* @obj is a sweep's, loaded once for all its runs: reset, not loaded */
	struct perf_set *perf;
	struct ledger *l;
	struct skip_mark skips_from, skips_to;	/* as the target starts and ends */
	struct micro *micro;		/* a microbenchmark's figures per step, or NULL */
	struct live *lv;
};

/* "zctrace run NAME" names a built-in workload: it must exist, and its options must parse. */
static int resolve_workload(struct run *r)
{
	struct run_args *a = &r->a;

	a->def = find_workload(a->cmd[0]);
	if (!a->def)
		return usage_error("unknown workload '%s' (try 'zctrace list', or 'zctrace run -- COMMAND')",
				   a->cmd[0]);
	if (target_workload_binary(a->def->name, r->t.binary, sizeof(r->t.binary))) {
		fprintf(stderr, "zctrace: workload binary for '%s' not found (run 'make' first)\n", a->def->name);
		return 1;
	}
	/* 'zctrace run WORKLOAD --help': the workload's own options, nothing traced */
	for (int i = 1; i < a->ncmd; i++) {
		if (!strcmp(a->cmd[i], "--help") || !strcmp(a->cmd[i], "-h")) {
			a->cmd[0] = r->t.binary;
			execv(r->t.binary, a->cmd);
			fprintf(stderr, "zctrace: cannot run %s: %s\n", r->t.binary, strerror(errno));
			return 1;
		}
	}
	if (a->def->opt_groups && scan_peer_options(a->ncmd, a->cmd, a->def, &r->wo))
		return EXIT_USAGE;
	if (a->def->micro && a->def->net)
		scan_micro_peer(a->ncmd, a->cmd, &r->wo);
	return 0;
}

/* The command line: 0, or the exit status of a usage error (or of a workload's --help). */
static int run_parse_args(struct run *r, int argc, char **argv)
{
	static const struct argp argp = { run_options, run_parse, NULL, run_doc };
	struct run_args *a = &r->a;
	int err;

	argp_err_exit_status = EXIT_USAGE;
	argv[0] = "zctrace run";
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, a))
		return EXIT_USAGE;
	if (a->ncmd && !strcmp(a->cmd[0], "--")) {
		a->cmd++;
		a->ncmd--;
	}
	if (a->pid && a->ncmd)
		return usage_error("give either -p PID or a command, not both");
	if (a->baseline && (a->pid || (a->ncmd && !(a->cmd > argv && !strcmp(a->cmd[-1], "--")))))
		return usage_error("--baseline is for -- COMMAND (a built-in workload runs untraced too by default)");
	if (a->complete && !a->pid && a->ncmd && !(a->cmd > argv && !strcmp(a->cmd[-1], "--")))
		return usage_error("--complete is for -- COMMAND or -p PID (a built-in workload counts every syscall)");
	if (!a->pid && !a->ncmd)
		return usage_error("nothing to trace: give a workload, -- COMMAND, or -p PID -d SECONDS");
	if (a->pid && !a->duration)
		return usage_error("-p needs -d SECONDS");
	if (a->pid && kill(a->pid, 0) && errno == ESRCH) {
		fprintf(stderr, "zctrace: no process with PID %d\n", a->pid);
		return EXIT_USAGE;
	}
	/* "zctrace run NAME" names a built-in workload; "zctrace run -- CMD" a command */
	if (a->ncmd && argv[0] && !(a->cmd > argv && !strcmp(a->cmd[-1], "--")) && (err = resolve_workload(r)))
		return err;
	r->t.def = a->def;
	r->t.argv = a->cmd;
	r->t.pid = a->pid;
	r->t.duration = a->duration;
	return 0;
}

/* What must hold before anything is made: the --json file, the rights, the kernel's BTF. */
static int run_preflight(struct run *r)
{
	const char *missing = NULL;
	char why[256];
	int err;

	if ((err = json_open(&r->jo, r->a.json_path)))
		return usage_error("cannot write the --json file %s: %s", r->a.json_path, strerror(-err));
	/* --netns needs the most (CAP_SYS_ADMIN): name that first */
	if (r->wo.peer == WL_PEER_NETNS && (missing = netns_missing_rights())) {
		fprintf(stderr, "zctrace: --netns makes network namespaces and a veth pair: it needs "
			"CAP_SYS_ADMIN and CAP_NET_ADMIN, and %s is missing (run as root)\n", missing);
	} else if ((missing = cli_missing_capability())) {
		fprintf(stderr, "zctrace: %s\n", missing);
	} else if (probes_check_btf(why, sizeof(why))) {
		/* the programs are CO-RE: without the kernel's BTF nothing can be relocated, so nothing runs */
		fprintf(stderr, "zctrace: %s: zctrace's BPF programs need the kernel's BTF (a kernel built with "
			"CONFIG_DEBUG_INFO_BTF=y, or ZCTRACE_BTF=FILE)\n", why);
		missing = why;
	}
	if (missing) {
		json_close(&r->jo);
		return 1;
	}
	return 0;
}

/* The namespaces, the tracer and the live view: everything up to the target. 0 or 1. */
static int run_start(struct run *r)
{
	struct tracer_opts to;

	tracer_opts_for(&to, r->a.def, r->a.cap, r->a.no_phase, r->a.complete);
	to.sample_hz = r->a.sample_hz;
	to.time_copies = r->a.time_copies;
	/* the sending end alone may send through a device that has the kernel copy its page references */
	if (r->wo.remote == WL_REMOTE_CONNECT && r->a.def && r->a.def->site[SITE_SPLICE_REF] == EXP_SENT)
		to.skip_zc_path = false;
	/* from here a signal stops the run and still cleans up */
	catch_stop_signals();
	if (r->wo.peer == WL_PEER_NETNS) {
		r->np.rate = r->wo.rate;
		r->np.delay = r->wo.delay;
		if (netns_setup(&r->np, &stop_signal))
			return 1;
	}

	libbpf_set_print(cli_libbpf_print);
	r->l = calloc(1, sizeof(*r->l));
	r->perf = calloc(1, sizeof(*r->perf));
	r->rep0 = calloc(1, sizeof(*r->rep0));
	if (r->a.def && r->a.def->micro)
		r->micro = calloc(1, sizeof(*r->micro));
	if (!r->l || !r->perf || !r->rep0 || (r->a.def && r->a.def->micro && !r->micro)) {
		fprintf(stderr, "zctrace: out of memory\n");
		return 1;
	}

	/* on before load and attach: every invocation of the run is counted */
	if (r->a.prog_stats && prog_stats_enable(&r->ps))
		fprintf(stderr, "zctrace: --prog-stats: %s\n", r->ps.why);
	if (r->borrowed ? tracer_reset(r->obj) : tracer_start(&r->obj, r->choice, &to))
		return 1;
	prog_stats_begin(&r->ps);

	if (r->a.interval && !(r->lv = live_new(r->a.interval, stdout, r->a.def ? r->a.def->name :
						r->a.pid ? "pid" : r->a.cmd[0], r->choice))) {
		fprintf(stderr, "zctrace: out of memory\n");
		return 1;
	}
	return 0;
}

static void tick_live(void *arg)
{
	struct run *r = arg;

	live_tick(r->lv, r->obj);
}

/* The target started or followed, and waited for. 0, 1, or EXIT_USAGE for refused options. */
static int run_target(struct run *r)
{
	double t0 = now_s();

	kfigures_mark_skips(&r->skips_from, r->obj);
	if (r->a.pid ? target_follow(&r->t, r->obj, r->perf) : target_spawn(&r->t, r->obj, r->perf, &r->np))
		return 1;
	target_wait(&r->t, r->lv ? tick_live : NULL, r);
	/* before any map is read: the reads hold off kprobe programs (kfigures_mark_skips()) */
	kfigures_mark_skips(&r->skips_to, r->obj);
	r->effect.wall_traced = now_s() - t0;
	return target_refused_options(&r->t, r->obj) ? EXIT_USAGE : 0;
}

/* The traced pass's figures, read from the kernel and checked. */
static void run_collect(struct run *r)
{
	struct ledger *l = r->l;

	/* the target is gone: what the programs cost it, before anything else runs them */
	prog_stats_end(&r->ps, r->obj->obj);
	perf_read(r->perf);
	l->target = r->t.name;
	l->choice = r->choice;
	l->def = r->a.def;
	l->perf = r->perf;
	ledger_set_report(l, r->t.result);
	l->report_bytes = r->t.report.len;
	l->exit_status = target_exit_status(&r->t);
	l->phase_gated = r->obj->rodata->gate_on_phase;
	l->net = &r->np;
	ledger_collect(l, r->obj, &r->skips_from, &r->skips_to);
	ledger_check(l);
	if (r->micro) {
		micro_collect(r->micro, r->obj);
		if (l->workload)
			micro_check(r->micro, l);
	}
}

/*
 * The untraced pass, once the traced one is read: the same workload (or --baseline's command),
 * same parameters and namespaces, run to its end with every BPF program of zctrace's detached
 * and unloaded. Its report is the run's timing figures. Not after a stop signal or a traced pass
 * that failed. 0, or 1 when stopped.
 */
static int run_untraced(struct run *r)
{
	double t0;

	if (r->a.pid || (r->a.def && r->a.one_pass) || (!r->a.def && !r->a.baseline))
		return 0;
	if (r->wo.remote) {
		/* a second pass would need a second run of the other end, traced or not by its own zctrace */
		snprintf(r->effect.why, sizeof(r->effect.why), "one end of a run on two hosts (--%s) "
			 "runs once", r->wo.remote == WL_REMOTE_LISTEN ? "listen" : "connect");
		r->two_passes = true;
		return 0;
	}
	if (stop_signal || target_exit_status(&r->t)) {
		snprintf(r->effect.why, sizeof(r->effect.why), "no untraced pass after a traced pass that %s",
			 stop_signal ? "was stopped" : "failed");
		r->two_passes = r->a.def != NULL;	/* the report says why there is one pass */
		return 0;
	}
	r->two_passes = true;
	target_detach(&r->t);
	if (tracer_stop_wait(r->obj, 5000))
		fprintf(stderr, "zctrace: some BPF programs were still being freed by the kernel after 5 s\n");
	r->obj = NULL;
	r->t0.def = r->t.def;
	r->t0.argv = r->t.argv;
	snprintf(r->t0.binary, sizeof(r->t0.binary), "%s", r->t.binary);
	t0 = now_s();
	if (target_spawn(&r->t0, NULL, NULL, &r->np))
		return 1;
	target_wait(&r->t0, NULL, NULL);
	r->effect.wall_untraced = r->a.baseline ? now_s() - t0 : 0;
	if (stop_signal)
		return 1;
	if (target_exit_status(&r->t0))
		snprintf(r->effect.why, sizeof(r->effect.why), "the untraced pass exited with status %d",
			 target_exit_status(&r->t0));
	return 0;
}

/* The ledger, printed and written. Returns the exit status: 0 when every check held. */
static int run_report(struct run *r)
{
	struct ledger *l = r->l;
	int ret;

	if (r->t0.result && r->t.result) {
		wl_report_parse(r->t0.result, r->rep0);
		effect_compare(&r->effect, &l->rep, r->rep0);
	}
	l->effect = r->two_passes ? &r->effect : NULL;
	l->untraced = r->t0.result;
	ledger_print(stdout, l, r->micro, r->a.histograms, r->a.full);
	if (r->a.prog_stats)
		prog_stats_print(stdout, &r->ps);
	ret = ledger_ok(l) ? 0 : 1;
	if (r->a.json_path) {
		json_object *root = ledger_json(l, r->micro);

		json_object_object_add(root, "prog_stats", r->a.prog_stats ? prog_stats_json(&r->ps) : NULL);

		if (write_json(&r->jo, root))
			ret = 1;
		json_object_put(root);
	}
	if (stop_signal)
		fprintf(stderr, "zctrace: stopped by signal %d (SIG%s); the ledger covers the run until then\n",
			(int)stop_signal, sigabbrev_np(stop_signal) ?: "?");
	else
		target_report_end(&r->t);
	return ret;
}

static void run_cleanup(struct run *r)
{
	/* the report is out: the kernel's slow part of the detach need not keep anyone waiting; a
	 * sweep's tracer stays, held by the sweep for its next run */
	tracer_stop_background(r->borrowed ? NULL : r->obj, r->t.usdt, TARGET_NR_USDT);
	r->obj = NULL;
	target_close(&r->t0);
	target_close(&r->t);
	prog_stats_close(&r->ps);
	live_free(r->lv);
	if (r->perf)
		perf_close(r->perf);
	json_close(&r->jo);
	free(r->l);
	free(r->rep0);
	free(r->micro);
	free(r->perf);
	/* after the target is reaped: nothing is left in the namespaces */
	netns_teardown(&r->np);
}

/* `zctrace run`, under the tracer @obj loaded with @choice (a sweep's), or under one of its own. */
static int run_with(int argc, char **argv, struct zctrace_bpf *obj, struct probe_choice *choice)
{
	struct run r = {
		.a = { .histograms = true, .cap = METHOD_NONE, .sample_hz = COST_DEFAULT_HZ },
		.wo = { .peer = WL_PEER_THREAD },
		.jo = { .fd = -1 },
		.choice = choice,
		.obj = obj,
		.borrowed = obj != NULL,
	};
	int ret;

	netns_init(&r.np);
	prog_stats_init(&r.ps);
	target_init(&r.t);
	target_init(&r.t0);
	r.t.usdt_held = r.borrowed;	/* a sweep attaches them to each workload binary once */
	if ((ret = run_parse_args(&r, argc, argv)) || (ret = run_preflight(&r)))
		return ret;
	/* the untraced pass and the programs' statistics need a tracer of the run's own */
	if (r.borrowed && (!r.a.def || !r.a.one_pass || r.a.prog_stats)) {
		fprintf(stderr, "zctrace: internal: a shared tracer runs a built-in workload's traced pass alone\n");
		return 1;
	}
	if (!(ret = run_start(&r)) && !(ret = run_target(&r))) {
		run_collect(&r);
		if (!(ret = run_untraced(&r)))
			ret = run_report(&r);
	}
	run_cleanup(&r);
	return ret;
}

int cmd_run(int argc, char **argv)
{
	static struct probe_choice choice[NR_PROBES];

	return run_with(argc, argv, NULL, choice);
}

int run_under(int argc, char **argv, struct zctrace_bpf *obj, struct probe_choice *choice)
{
	return run_with(argc, argv, obj, choice);
}

