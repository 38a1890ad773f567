/* zctrace: where the bytes of an I/O path are really copied. The CLI: run, list, probes. */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "clock.h"
#include "ledger.h"
#include "live.h"
#include "netns.h"
#include "output.h"
#include "perfcnt.h"
#include "probes.h"
#include "tracer.h"
#include "progstats.h"
#include "sweep.h"
#include "wl.h"
#include "workloads.h"
#include "zctrace.skel.h"

/* The BPF side cannot include uapi headers next to vmlinux.h; hold its copies to them here. */
_Static_assert(ZCT_EE_ORIGIN_ZEROCOPY == SO_EE_ORIGIN_ZEROCOPY, "errqueue origin");
_Static_assert(ZCT_EE_CODE_ZEROCOPY_COPIED == SO_EE_CODE_ZEROCOPY_COPIED, "errqueue code");
_Static_assert(ZCT_MSG_ZEROCOPY == MSG_ZEROCOPY, "MSG_ZEROCOPY");
_Static_assert(ZCT_IPPROTO_TCP == IPPROTO_TCP, "IPPROTO_TCP");

#define KILL_GRACE_MS 5000

static bool verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	if (level == LIBBPF_WARN && !verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

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
	"\n"
	"Exit status: 0 when the traced program succeeded and every check held, 1 when a check\n"
	"failed, 2 on a usage error.";

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
	case 'v':
		verbose = true;
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

/* ---- the traced target ---- */

static int find_workload_binary(const char *name, char *path, size_t n)
{
	char exe[PATH_MAX], *dir;
	const char *env = getenv("ZCTRACE_WORKLOADS");
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (env) {
		snprintf(path, n, "%s/%s", env, name);
		return access(path, X_OK) ? -ENOENT : 0;
	}
	if (len < 0)
		return -errno;
	exe[len] = '\0';
	dir = dirname(exe);
	snprintf(path, n, "%s/.output/workloads/%s", dir, name);
	if (!access(path, X_OK))
		return 0;
	snprintf(path, n, "%s/../libexec/zctrace/%s", dir, name);
	return access(path, X_OK) ? -ENOENT : 0;
}

static int add_target(struct zctrace_bpf *obj, pid_t tgid)
{
	__u32 key = tgid;
	__u8 one = 1;
	int err = bpf_map_update_elem(bpf_map__fd(obj->maps.targets), &key, &one, BPF_ANY);

	/* the programs' memoised verdicts on this tgid are stale now */
	__sync_fetch_and_add(&obj->bss->targets_gen, 1);
	return err;
}

/* -p: the process and its living descendants, found through /proc/<pid>/task/<tid>/children. */
static void add_process_tree(struct zctrace_bpf *obj, pid_t pid, int depth)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	if (depth > 32 || add_target(obj, pid))
		return;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char cpath[300];
		FILE *f;
		int child;

		if (de->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", pid, de->d_name);
		f = fopen(cpath, "r");
		if (!f)
			continue;
		while (fscanf(f, "%d", &child) == 1)
			add_process_tree(obj, child, depth + 1);
		fclose(f);
	}
	closedir(d);
}

#define NR_USDT 4

struct usdt_links {
	struct bpf_link *link[NR_USDT];
};

/*
 * Attaches the USDT programs. Returns 0 when the phase markers attached; a binary without
 * zctrace's probes has none (-ENOENT), one that never copies in user space has no user_copy,
 * and only the microbenchmarks mark numbered steps (segment).
 */
static int attach_usdt(struct zctrace_bpf *obj, pid_t pid, const char *binary, struct usdt_links *ul)
{
	static const char *const names[NR_USDT] = { "phase_begin", "phase_end", "user_copy", "segment" };
	struct bpf_program *progs[NR_USDT] = { obj->progs.phase_begin_usdt, obj->progs.phase_end_usdt,
					       obj->progs.user_copy_usdt, obj->progs.segment_usdt };
	int err = 0;

	if (!bpf_program__autoload(progs[0]))
		return -ENOTSUP;
	for (int i = 0; i < NR_USDT; i++) {
		ul->link[i] = bpf_program__attach_usdt(progs[i], pid, binary, "zctrace", names[i], NULL);
		if (!ul->link[i] && i < 2 && !err)
			err = -errno;
	}
	return err;
}

/* Stops the target's whole process group: TERM first, KILL after a grace period. */
static void stop_group(pid_t pgid, pid_t leader, int *status, bool *reaped)
{
	kill(-pgid, SIGTERM);
	for (int waited = 0; !*reaped && waited < KILL_GRACE_MS; waited += 20) {
		if (waitpid(leader, status, WNOHANG) == leader)
			*reaped = true;
		else
			sleep_ms(20);
	}
	kill(-pgid, SIGKILL);
	if (!*reaped && waitpid(leader, status, 0) == leader)
		*reaped = true;
}

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
 * The capability a run lacks, said in one line, or NULL. Loading programs and making maps needs
 * CAP_BPF; tracing programs, uprobes and perf counters need CAP_PERFMON; CAP_SYS_ADMIN covers
 * both (and is what kernels before 5.8 ask for).
 */
static const char *missing_capability(void)
{
	unsigned long long eff = 0;
	bool found = false, admin;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return NULL;	/* cannot tell: let the kernel answer */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			found = true;
	fclose(f);
	if (!found)
		return NULL;
	admin = eff & (1ULL << CAP_SYS_ADMIN);
	if (!admin && !(eff & (1ULL << CAP_BPF)))
		return "loading BPF programs and maps needs CAP_BPF (or CAP_SYS_ADMIN), which this process "
		       "does not have (run as root)";
	if (!admin && !(eff & (1ULL << CAP_PERFMON)))
		return "attaching tracing programs and opening perf counters needs CAP_PERFMON (or "
		       "CAP_SYS_ADMIN), which this process does not have (run as root)";
	return NULL;
}

/* One line on how the traced program ended, when it did not succeed. */
static void report_end(const char *what, const char *name, int status)
{
	if (WIFSIGNALED(status))
		fprintf(stderr, "zctrace: %s %s killed by signal %d (SIG%s)%s; the ledger covers the run until then\n",
			what, name, WTERMSIG(status), sigabbrev_np(WTERMSIG(status)) ?: "?",
			WCOREDUMP(status) ? ", core dumped" : "");
	else if (WIFEXITED(status) && WEXITSTATUS(status))
		fprintf(stderr, "zctrace: %s %s exited with status %d\n", what, name, WEXITSTATUS(status));
}

static int cmd_run(int argc, char **argv)
{
	static const struct argp argp = { run_options, run_parse, NULL, run_doc };
	struct run_args a = { .histograms = true, .cap = METHOD_NONE };
	static struct probe_choice choice[32];
	struct ledger *l = NULL;
	struct perf_set *perf = NULL;
	struct usdt_links ul = {};
	struct zctrace_bpf *obj = NULL;
	struct live *lv = NULL;
	struct netns_pair np;
	struct wl_opts wo = { .peer = WL_PEER_THREAD };
	struct json_out jo = { .fd = -1 };
	struct prog_stats ps;
	char binary[PATH_MAX] = "", target[256], why[256];
	const char *missing;
	int result_pipe[2] = { -1, -1 }, sync_pipe[2] = { -1, -1 };
	int status = 0, err = 0, ret = 1;
	bool reaped = false;
	pid_t child = -1;
	json_object *result = NULL;
	struct cli_result report = {};

	netns_init(&np);
	prog_stats_init(&ps);
	argp_err_exit_status = EXIT_USAGE;
	argv[0] = "zctrace run";
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &a))
		return EXIT_USAGE;
	if (a.ncmd && !strcmp(a.cmd[0], "--")) {
		a.cmd++;
		a.ncmd--;
	}
	if (a.pid && a.ncmd)
		return usage_error("give either -p PID or a command, not both");
	if (!a.pid && !a.ncmd)
		return usage_error("nothing to trace: give a workload, -- COMMAND, or -p PID -d SECONDS");
	if (a.pid && !a.duration)
		return usage_error("-p needs -d SECONDS");
	if (a.pid && kill(a.pid, 0) && errno == ESRCH) {
		fprintf(stderr, "zctrace: no process with PID %d\n", a.pid);
		return EXIT_USAGE;
	}
	if (a.ncmd && argv[0]) {
		/* "zctrace run NAME" names a built-in workload; "zctrace run -- CMD" a command */
		bool after_dashes = a.cmd > argv && !strcmp(a.cmd[-1], "--");

		if (!after_dashes) {
			a.def = find_workload(a.cmd[0]);
			if (!a.def)
				return usage_error("unknown workload '%s' (try 'zctrace list', or 'zctrace run -- COMMAND')",
						   a.cmd[0]);
			if (find_workload_binary(a.def->name, binary, sizeof(binary))) {
				fprintf(stderr, "zctrace: workload binary for '%s' not found (run 'make' first)\n",
					a.def->name);
				return 1;
			}
			/* 'zctrace run WORKLOAD --help': the workload's own options, nothing traced */
			for (int i = 1; i < a.ncmd; i++) {
				if (!strcmp(a.cmd[i], "--help") || !strcmp(a.cmd[i], "-h")) {
					a.cmd[0] = binary;
					execv(binary, a.cmd);
					fprintf(stderr, "zctrace: cannot run %s: %s\n", binary, strerror(errno));
					return 1;
				}
			}
			if (a.def->opt_groups && scan_peer_options(a.ncmd, a.cmd, a.def, &wo))
				return EXIT_USAGE;
		}
	}
	if ((err = json_open(&jo, a.json_path)))
		return usage_error("cannot write the --json file %s: %s", a.json_path, strerror(-err));
	/* --netns needs the most (CAP_SYS_ADMIN): name that first */
	if (wo.peer == WL_PEER_NETNS) {
		missing = netns_missing_rights();

		if (missing) {
			fprintf(stderr, "zctrace: --netns makes network namespaces and a veth pair: it needs "
				"CAP_SYS_ADMIN and CAP_NET_ADMIN, and %s is missing (run as root)\n", missing);
			json_close(&jo);
			return 1;
		}
	}
	if ((missing = missing_capability())) {
		fprintf(stderr, "zctrace: %s\n", missing);
		json_close(&jo);
		return 1;
	}
	/* the programs are CO-RE: without the kernel's BTF nothing can be relocated, so nothing runs */
	if (probes_check_btf(why, sizeof(why))) {
		fprintf(stderr, "zctrace: %s: zctrace's BPF programs need the kernel's BTF (a kernel built with "
			"CONFIG_DEBUG_INFO_BTF=y, or ZCTRACE_BTF=FILE)\n", why);
		json_close(&jo);
		return 1;
	}
	/* from here a signal stops the run and still cleans up */
	catch_stop_signals();
	if (wo.peer == WL_PEER_NETNS) {
		np.rate = wo.rate;
		np.delay = wo.delay;
		if (netns_setup(&np, &stop_signal)) {
			json_close(&jo);
			return 1;
		}
	}

	libbpf_set_print(libbpf_print);
	l = calloc(1, sizeof(*l));
	perf = calloc(1, sizeof(*perf));
	if (!l || !perf) {
		fprintf(stderr, "zctrace: out of memory\n");
		goto cleanup;
	}

	/* on before load and attach: every invocation of the run is counted */
	if (a.prog_stats && prog_stats_enable(&ps))
		fprintf(stderr, "zctrace: --prog-stats: %s\n", ps.why);
	{
		struct tracer_opts to = {
			.cap = a.cap,
			.skip_zc_path = a.def && !a.def->zc_notices,
			.gate_on_phase = a.def && !a.no_phase,
		};

		if ((err = tracer_start(&obj, choice, &to)))
			goto cleanup;
	}
	prog_stats_begin(&ps);

	if (a.interval && !(lv = live_new(a.interval, stdout, a.def ? a.def->name : a.pid ? "pid" : a.cmd[0],
					   choice))) {
		fprintf(stderr, "zctrace: out of memory\n");
		goto cleanup;
	}

	if (a.pid) {
		char exe[64];
		double waited = 0;

		snprintf(target, sizeof(target), "pid %d", a.pid);
		add_process_tree(obj, a.pid, 0);
		snprintf(exe, sizeof(exe), "/proc/%d/exe", a.pid);
		attach_usdt(obj, a.pid, exe, &ul);
		perf_open_pid(perf, a.pid);
		/* what comes after this line is counted: scripts wait for it before they drive traffic */
		fprintf(stderr, "zctrace: tracing pid %d for %g s\n", a.pid, a.duration);
		while (!stop_signal && waited < a.duration && !(kill(a.pid, 0) && errno == ESRCH)) {
			sleep_ms(50);
			waited += 0.05;
			if (lv)
				live_tick(lv, obj);
		}
		l->exit_status = -1;
	} else {
		snprintf(target, sizeof(target), "%s", a.def ? a.def->name : a.cmd[0]);
		for (int i = 1; !a.def && i < a.ncmd && strlen(target) < sizeof(target) - 32; i++)
			snprintf(target + strlen(target), sizeof(target) - strlen(target), " %s", a.cmd[i]);
		if (pipe2(sync_pipe, O_CLOEXEC) || (a.def && pipe2(result_pipe, O_CLOEXEC))) {
			fprintf(stderr, "zctrace: pipe: %s\n", strerror(errno));
			goto cleanup;
		}
		if (stop_signal) {
			fprintf(stderr, "zctrace: stopped by signal %d (SIG%s) before the target started\n",
				(int)stop_signal, sigabbrev_np(stop_signal) ?: "?");
			goto cleanup;
		}
		child = fork();
		if (child < 0) {
			fprintf(stderr, "zctrace: fork: %s\n", strerror(errno));
			goto cleanup;
		}
		if (child == 0) {
			char c, fdstr[16];

			setpgid(0, 0);
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			signal(SIGHUP, SIG_DFL);
			close(sync_pipe[1]);
			if (read(sync_pipe[0], &c, 1) != 1)
				_exit(127);	/* the tracer went away before starting us */
			if (a.def) {
				int fd = dup(result_pipe[1]);	/* dup drops O_CLOEXEC: it survives exec */

				snprintf(fdstr, sizeof(fdstr), "%d", fd);
				setenv("ZCTRACE_RESULT_FD", fdstr, 1);
				a.cmd[0] = binary;
			}
			if (np.sender_fd >= 0) {
				/* the workload runs as the sender host; its receiver enters the other */
				int fd = dup(np.receiver_fd);

				if (setns(np.sender_fd, CLONE_NEWNET) || fd < 0) {
					fprintf(stderr, "zctrace: cannot enter the sender's network namespace: %s\n",
						strerror(errno));
					_exit(127);
				}
				snprintf(fdstr, sizeof(fdstr), "%d", fd);
				setenv(WL_NETNS_FD_ENV, fdstr, 1);
			}
			execvp(a.cmd[0], a.cmd);
			fprintf(stderr, "zctrace: cannot run '%s': %s\n", a.cmd[0], strerror(errno));
			_exit(127);
		}
		setpgid(child, child);
		close(sync_pipe[0]);
		sync_pipe[0] = -1;
		obj->bss->root_tgid = child;
		if (add_target(obj, child)) {
			fprintf(stderr, "zctrace: cannot add the target: %s\n", strerror(errno));
			goto cleanup;
		}
		perf_open_child(perf, child);
		err = attach_usdt(obj, child, a.def ? binary : a.cmd[0], &ul);
		if (err && a.def) {
			fprintf(stderr, "zctrace: cannot attach the workload's USDT probes: %s\n", strerror(-err));
			goto cleanup;
		}
		if (write(sync_pipe[1], "g", 1) != 1) {
			fprintf(stderr, "zctrace: cannot start the target: %s\n", strerror(errno));
			goto cleanup;
		}
		close(sync_pipe[1]);
		sync_pipe[1] = -1;
		if (result_pipe[1] >= 0) {
			close(result_pipe[1]);
			result_pipe[1] = -1;
			fcntl(result_pipe[0], F_SETFL, O_NONBLOCK);
		}

		while (!reaped) {
			pid_t w = waitpid(child, &status, WNOHANG);

			if (w == child) {
				reaped = true;
				break;
			}
			if (w < 0 && errno != EINTR)
				break;
			if (stop_signal) {
				stop_group(child, child, &status, &reaped);
				break;
			}
			sleep_ms(10);
			if (lv)
				live_tick(lv, obj);
			if (result_pipe[0] >= 0 && cli_drain_result(result_pipe[0], &report)) {
				/* closing it fails the workload's write instead of leaving it blocked */
				fprintf(stderr, "zctrace: the workload's report exceeds %d MiB\n", CLI_MAX_RESULT >> 20);
				close(result_pipe[0]);
				result_pipe[0] = -1;
			}
		}
		/* nothing the target started outlives the run */
		kill(-child, SIGKILL);
		if (result_pipe[0] >= 0 && !cli_drain_result(result_pipe[0], &report))
			result = cli_parse_result(&report);
		l->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		/*
		 * A built-in workload exits 2 on a bad option, having said which in one line; one that
		 * did so before its measured phase began refused its arguments: a usage error, no ledger.
		 */
		if (a.def && reaped && !stop_signal && WIFEXITED(status) && WEXITSTATUS(status) == EXIT_USAGE &&
		    !obj->bss->misc.phase_begins) {
			ret = EXIT_USAGE;
			goto cleanup;
		}
	}

	/* the target is gone: what the programs cost it, before anything else runs them */
	prog_stats_end(&ps, obj->obj);
	perf_read(perf);
	l->target = target;
	l->choice = choice;
	l->def = a.def;
	l->perf = perf;
	l->workload = result;
	l->phase_gated = obj->rodata->gate_on_phase;
	l->net = &np;
	ledger_collect(l, obj);
	ledger_check(l);
	ledger_print(stdout, l, a.histograms);
	if (a.prog_stats)
		prog_stats_print(stdout, &ps);
	ret = ledger_ok(l) ? 0 : 1;
	if (a.json_path) {
		json_object *root = ledger_json(l);

		json_object_object_add(root, "prog_stats", a.prog_stats ? prog_stats_json(&ps) : NULL);

		if (write_json(&jo, root))
			ret = 1;
		json_object_put(root);
	}
	if (stop_signal)
		fprintf(stderr, "zctrace: stopped by signal %d (SIG%s); the ledger covers the run until then\n",
			(int)stop_signal, sigabbrev_np(stop_signal) ?: "?");
	else if (child > 0 && reaped)
		report_end(a.def ? "workload" : "command", a.def ? a.def->name : a.cmd[0], status);

cleanup:
	if (child > 0 && !reaped) {
		stop_group(child, child, &status, &reaped);
	}
	for (int i = 0; i < NR_USDT; i++)
		bpf_link__destroy(ul.link[i]);
	tracer_stop(obj);
	prog_stats_close(&ps);
	live_free(lv);
	if (perf)
		perf_close(perf);
	for (int i = 0; i < 2; i++) {
		if (result_pipe[i] >= 0)
			close(result_pipe[i]);
		if (sync_pipe[i] >= 0)
			close(sync_pipe[i]);
	}
	json_object_put(result);
	free(report.text);
	json_close(&jo);
	free(l);
	free(perf);
	/* after the target is reaped: nothing is left in the namespaces */
	netns_teardown(&np);
	return ret;
}

static int cmd_list(void)
{
	printf("%-16s %s\n", "WORKLOAD", "WHAT IT DOES / EXPECTED LEDGER");
	for (int i = 0; i < nr_workload_defs; i++) {
		const struct workload_def *d = &workload_defs[i];

		if (d->micro && (i == 0 || !workload_defs[i - 1].micro))
			printf("\nMICROBENCHMARKS (a distribution per measurement; each assumption checked by "
			       "the kernel)\n");
		printf("%-16s %s\n%-16s %s: %s\n", d->name, d->summary, "", d->micro ? "checked" : "expected",
		       d->expected);
		if (d->options)
			printf("%-16s options: %s\n", "", d->options);
	}
	printf("\nTCP workload options: --size BYTES (1K, 64K, 1M), --threads N, --messages N | --bytes N |"
	       " --duration SECS, --port P\n"
	       "file-* options: --file-size N (default 1G), --cache cold|warm, --dir DIR, --size BYTES per"
	       " call\n"
	       "serve-* options: --file-size N, --cache cold|warm, --dir DIR, --chunk BYTES (= --size)"
	       " (default 64K), --threads N, --port P\n"
	       "remote-fileread options: --file-size N, --cache cold|warm, --dir DIR, --size BYTES per block"
	       " (default 64K), --pattern seq|random\n"
	       "tcp-*, serve-*, remote-fileread: --peer thread|process|netns (where the receiver runs; default"
	       " thread), --netns (= --peer netns: two network namespaces joined by veth, 198.18.0.1/30 and"
	       " .2/30, made and removed by zctrace; needs CAP_SYS_ADMIN and CAP_NET_ADMIN), --rate RATE"
	       " (tc tbf on the veth link, e.g. 1gbit), --delay TIME (tc netem, e.g. 1ms)\n"
	       "'zctrace run WORKLOAD --help' lists a workload's options.\n");
	return 0;
}

static int cmd_probes(int argc, char **argv)
{
	static struct probe_choice choice[32];
	enum method cap = METHOD_NONE;
	const char *missing;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			verbose = true;
		} else if (!strncmp(argv[i], "--method=", 9)) {
			if (parse_method(argv[i] + 9, &cap))
				return usage_error("unknown method '%s' (fentry, kprobe or tracepoint)", argv[i] + 9);
		} else {
			return usage_error("probes: unknown argument '%s'", argv[i]);
		}
	}
	if ((missing = missing_capability())) {
		fprintf(stderr, "zctrace: %s\n", missing);
		return 1;
	}
	libbpf_set_print(libbpf_print);
	{
		/* what really loads and attaches here, not only what the kernel advertises; without
		 * BTF nothing CO-RE loads, and the candidates' refusals are all there is to show */
		struct tracer_opts to = { .cap = cap };
		struct zctrace_bpf *obj;
		char why[256];

		if (probes_check_btf(why, sizeof(why))) {
			if (choose_probes(NULL, choice, cap))
				return 1;
		} else {
			if (tracer_start(&obj, choice, &to))
				return 1;
			tracer_stop(obj);
		}
	}
	print_probes(stdout, choice);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zctrace run [OPTIONS] WORKLOAD [ARGS] | -- COMMAND [ARGS] | -p PID -d SECONDS\n"
		"       zctrace list       the built-in workloads and their expected ledgers\n"
		"       zctrace probes     the attach method chosen for each probe site, and why\n"
		"       zctrace sweep WORKLOAD[,WORKLOAD...] [--sizes LIST] [--threads LIST] [--reps N]\n"
		"                          [--duration SECS | --messages N] [-o FILE.csv|FILE.json] [-- ARGS]\n"
		"                          a grid of runs, one CSV or JSON row each\n"
		"       zctrace run --help, zctrace sweep --help\n");
}

int main(int argc, char **argv)
{
	check_stdout_at_exit();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list"))
		return argc == 2 ? cmd_list() : usage_error("list takes no arguments");
	if (!strcmp(argv[1], "probes"))
		return cmd_probes(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sweep"))
		return cmd_sweep(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	return usage_error("unknown command '%s' (try 'zctrace --help')", argv[1]);
}
