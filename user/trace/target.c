/*
 * The traced target's lifecycle. A built-in workload or a command is forked, waits on a start
 * pipe until its process is a target and its probes are attached (the pipe's end of file and a
 * flag in shared memory say go: a byte would be a pipe copy in the target's ledger, with fexit
 * pipe_read seen whenever the read returns), and runs in a process group of
 * its own, so a stop reaches everything it started. A running process (-p) is followed instead:
 * its tree becomes the targets, and it is left running at the end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "os/clock.h"
#include "os/netns.h"
#include "os/perfcnt.h"
#include "trace/target.h"
#include "trace/tracer.h"
#include "contract/opts.h"
#include "contract/report.h"
#include "trace/workloads.h"
#include "zctrace.skel.h"

#define KILL_GRACE_MS 5000

void target_init(struct target *t)
{
	memset(t, 0, sizeof(*t));
	t->start_pipe[0] = t->start_pipe[1] = -1;
	t->result_pipe[0] = t->result_pipe[1] = -1;
	t->guard = -1;
	t->guard_fd = -1;
}

int target_workload_binary(const char *name, char *path, size_t n)
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

int target_attach_usdt(struct zctrace_bpf *obj, pid_t pid, const char *binary, const struct workload_def *def,
		       struct bpf_link **links)
{
	static const char *const names[TARGET_NR_USDT] = { WL_USDT_PHASE_BEGIN, WL_USDT_PHASE_END,
							   WL_USDT_USER_COPY, WL_USDT_STEP };
	struct bpf_program *progs[TARGET_NR_USDT] = { obj->progs.phase_begin_usdt, obj->progs.phase_end_usdt,
						      obj->progs.user_copy_usdt, obj->progs.step_usdt };
	int err = 0;

	if (!bpf_program__autoload(progs[0]))
		return -ENOTSUP;
	for (int i = 0; i < TARGET_NR_USDT; i++) {
		/* a uprobe costs a grace period at its detach: a built-in workload marks steps only if
		 * it is a microbenchmark */
		if (progs[i] == obj->progs.step_usdt && def && !def->micro)
			continue;
		links[i] = bpf_program__attach_usdt(progs[i], pid, binary, WL_USDT_PROVIDER, names[i], NULL);
		if (!links[i] && i < 2 && !err)
			err = -errno;
	}
	return err;
}

/* The target's own USDT probes; a binary without zctrace's probes has none (-ENOENT). */
static int attach_usdt(struct zctrace_bpf *obj, pid_t pid, const char *binary, struct target *t)
{
	return target_attach_usdt(obj, pid, binary, t->def, t->usdt);
}

int target_follow(struct target *t, struct zctrace_bpf *obj, struct perf_set *perf)
{
	char exe[64];

	snprintf(t->name, sizeof(t->name), "pid %d", t->pid);
	add_process_tree(obj, t->pid, 0);
	snprintf(exe, sizeof(exe), "/proc/%d/exe", t->pid);
	attach_usdt(obj, t->pid, exe, t);
	perf_open_pid(perf, t->pid);
	/* what comes after this line is counted: scripts wait for it before they drive traffic */
	fprintf(stderr, "zctrace: tracing pid %d for %g s\n", t->pid, t->duration);
	return 0;
}

/* ---- the guard: nothing the target started outlives zctrace ---- */

/*
 * zctrace may be killed with SIGKILL and clean up nothing; the kernel still closes its
 * descriptors. The guard, a small process of zctrace's own (not traced, not in the target's
 * group), blocks on a pipe whose only write end zctrace holds: end of file means zctrace is gone,
 * and the guard kills the target's whole group. It keeps nothing else open, so no BPF object,
 * namespace or output lives on because of it, and it ignores the terminal's signals and a
 * group-wide SIGTERM, which are zctrace's to handle.
 */
static void __attribute__((noreturn)) guard_run(int rfd, int wfd, pid_t pgid)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE };
	char c;

	prctl(PR_SET_NAME, "zctrace-guard");	/* in ps: not to be taken for the tracer */
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	close(wfd);	/* by name: the guard must never hold what it waits on, close_range or not */
	if (dup2(rfd, STDIN_FILENO) < 0)
		_exit(1);
	if (close_range(STDOUT_FILENO, ~0U, 0))	/* before Linux 5.9: one by one */
		for (long fd = STDOUT_FILENO, max = sysconf(_SC_OPEN_MAX); fd < max && fd < 65536; fd++)
			close(fd);
	while (read(STDIN_FILENO, &c, 1) < 0 && errno == EINTR)
		;
	kill(-pgid, SIGKILL);
	_exit(0);
}

static int guard_start(struct target *t)
{
	int fds[2], err;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	t->guard = fork();
	if (t->guard == 0)
		guard_run(fds[0], fds[1], t->pid);
	err = t->guard < 0 ? -errno : 0;
	close(fds[0]);
	if (err)
		close(fds[1]);
	else
		t->guard_fd = fds[1];
	return err;
}

/*
 * A normal end: the group is killed and its leader reaped, so the guard goes first, by SIGKILL
 * (zctrace's own child: its pid cannot be another's), and never kills a group number reused since.
 */
static void guard_dismiss(struct target *t)
{
	if (t->guard > 0) {
		kill(t->guard, SIGKILL);
		while (waitpid(t->guard, NULL, 0) < 0 && errno == EINTR)
			;
		t->guard = -1;
	}
	if (t->guard_fd >= 0)
		close(t->guard_fd);
	t->guard_fd = -1;
}

/* ---- a workload or a command, started here ---- */

/*
 * The child: its own process group, the default signals, dead with zctrace, and then nothing until
 * zctrace has made it a target and attached its probes.
 */
static void __attribute__((noreturn)) exec_target(struct target *t, const struct netns_pair *np, pid_t parent)
{
	char c, fdstr[16];

	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/*
	 * Dies with zctrace: covers the moment before the guard stands and a leader that leaves its
	 * group. zctrace may have died before this line; then the parent is another already.
	 */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	close(t->start_pipe[1]);
	while (read(t->start_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	if (!__atomic_load_n(t->start_go, __ATOMIC_ACQUIRE))
		_exit(127);	/* the tracer went away before starting us */
	if (t->def) {
		int fd = dup(t->result_pipe[1]);	/* dup drops O_CLOEXEC: it survives exec */

		snprintf(fdstr, sizeof(fdstr), "%d", fd);
		setenv(WL_RESULT_FD_ENV, fdstr, 1);
		t->argv[0] = t->binary;
	}
	if (np->sender_fd >= 0) {
		/* the workload runs as the sender host; its receiver enters the other */
		int fd = dup(np->receiver_fd);

		if (setns(np->sender_fd, CLONE_NEWNET) || fd < 0) {
			fprintf(stderr, "zctrace: cannot enter the sender's network namespace: %s\n",
				strerror(errno));
			_exit(127);
		}
		snprintf(fdstr, sizeof(fdstr), "%d", fd);
		setenv(WL_NETNS_FD_ENV, fdstr, 1);
	}
	execvp(t->argv[0], t->argv);
	fprintf(stderr, "zctrace: cannot run '%s': %s\n", t->argv[0], strerror(errno));
	_exit(127);
}

/* Forks the target, held on its start pipe, and its guard. 0, or -1 with one line said. */
static int fork_target(struct target *t, const struct netns_pair *np)
{
	pid_t parent = getpid();
	int err;

	t->start_go = mmap(NULL, sizeof(*t->start_go), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			   -1, 0);
	if (t->start_go == MAP_FAILED) {
		t->start_go = NULL;
		fprintf(stderr, "zctrace: mmap: %s\n", strerror(errno));
		return -1;
	}
	if (pipe2(t->start_pipe, O_CLOEXEC) || (t->def && pipe2(t->result_pipe, O_CLOEXEC))) {
		fprintf(stderr, "zctrace: pipe: %s\n", strerror(errno));
		return -1;
	}
	if (stop_signal) {
		fprintf(stderr, "zctrace: stopped by signal %d (SIG%s) before the target started\n",
			(int)stop_signal, sigabbrev_np(stop_signal) ?: "?");
		return -1;
	}
	t->pid = fork();
	if (t->pid < 0) {
		fprintf(stderr, "zctrace: fork: %s\n", strerror(errno));
		return -1;
	}
	if (t->pid == 0)
		exec_target(t, np, parent);
	t->started = true;
	setpgid(t->pid, t->pid);
	close(t->start_pipe[0]);
	t->start_pipe[0] = -1;
	if ((err = guard_start(t))) {
		fprintf(stderr, "zctrace: cannot start the target's guard: %s\n", strerror(-err));
		return -1;
	}
	return 0;
}

int target_spawn(struct target *t, struct zctrace_bpf *obj, struct perf_set *perf, const struct netns_pair *np)
{
	int err;

	snprintf(t->name, sizeof(t->name), "%s", t->def ? t->def->name : t->argv[0]);
	for (int i = 1; !t->def && t->argv[i] && strlen(t->name) < sizeof(t->name) - 32; i++)
		snprintf(t->name + strlen(t->name), sizeof(t->name) - strlen(t->name), " %s", t->argv[i]);
	if (fork_target(t, np))
		return -1;
	if (obj) {
		obj->bss->root_tgid = t->pid;
		if (add_target(obj, t->pid)) {
			fprintf(stderr, "zctrace: cannot add the target: %s\n", strerror(errno));
			return -1;
		}
		err = t->usdt_held ? 0 : attach_usdt(obj, t->pid, t->def ? t->binary : t->argv[0], t);
		if (err && t->def) {
			fprintf(stderr, "zctrace: cannot attach the workload's USDT probes: %s\n", strerror(-err));
			return -1;
		}
	}
	if (perf)
		perf_open_child(perf, t->pid);
	__atomic_store_n(t->start_go, 1, __ATOMIC_RELEASE);
	close(t->start_pipe[1]);	/* go */
	t->start_pipe[1] = -1;
	if (t->result_pipe[1] >= 0) {
		close(t->result_pipe[1]);
		t->result_pipe[1] = -1;
		fcntl(t->result_pipe[0], F_SETFL, O_NONBLOCK);
	}
	return 0;
}

/* ---- waiting, stopping, reaping ---- */

/* Stops the target's whole process group: TERM first, KILL after a grace period. */
static void stop_group(struct target *t)
{
	kill(-t->pid, SIGTERM);
	for (int waited = 0; !t->reaped && waited < KILL_GRACE_MS; waited += 20) {
		if (waitpid(t->pid, &t->status, WNOHANG) == t->pid)
			t->reaped = true;
		else
			sleep_ms(20);
	}
	kill(-t->pid, SIGKILL);
	if (!t->reaped && waitpid(t->pid, &t->status, 0) == t->pid)
		t->reaped = true;
}

/* Nothing the target started outlives the run; then the guard has nothing left to do. */
static void end_group(struct target *t)
{
	kill(-t->pid, SIGKILL);
	guard_dismiss(t);
}

/* What the workload reported so far; a report too large for the reader is dropped, said once. */
static void drain_report(struct target *t)
{
	if (t->result_pipe[0] >= 0 && report_pipe_drain(t->result_pipe[0], &t->report)) {
		/* closing it fails the workload's write instead of leaving it blocked */
		fprintf(stderr, "zctrace: the workload's report exceeds %d MiB\n", REPORT_PIPE_MAX >> 20);
		close(t->result_pipe[0]);
		t->result_pipe[0] = -1;
	}
}

static void wait_started(struct target *t, void (*tick)(void *arg), void *arg)
{
	while (!t->reaped) {
		pid_t w = waitpid(t->pid, &t->status, WNOHANG);

		if (w == t->pid) {
			t->reaped = true;
			break;
		}
		if (w < 0 && errno != EINTR)
			break;
		if (stop_signal) {
			stop_group(t);
			break;
		}
		sleep_ms(10);
		if (tick)
			tick(arg);
		drain_report(t);
	}
	end_group(t);
	if (t->result_pipe[0] >= 0 && !report_pipe_drain(t->result_pipe[0], &t->report))
		t->result = report_pipe_parse(&t->report);
}

static void wait_followed(struct target *t, void (*tick)(void *arg), void *arg)
{
	double waited = 0;

	while (!stop_signal && waited < t->duration && !(kill(t->pid, 0) && errno == ESRCH)) {
		sleep_ms(50);
		waited += 0.05;
		if (tick)
			tick(arg);
	}
}

void target_wait(struct target *t, void (*tick)(void *arg), void *arg)
{
	if (t->started)
		wait_started(t, tick, arg);
	else
		wait_followed(t, tick, arg);
}

int target_exit_status(const struct target *t)
{
	if (!t->started)
		return -1;
	return WIFEXITED(t->status) ? WEXITSTATUS(t->status) : 128 + WTERMSIG(t->status);
}

/*
 * A built-in workload exits 2 on a bad option, having said which in one line; one that did so
 * before its measured phase began refused its arguments: a usage error, no ledger.
 */
bool target_refused_options(const struct target *t, const struct zctrace_bpf *obj)
{
	return t->def && t->reaped && !stop_signal && WIFEXITED(t->status) &&
	       WEXITSTATUS(t->status) == EXIT_USAGE && !(obj && obj->bss->misc.phase_begins);
}

void target_report_end(const struct target *t)
{
	const char *what = t->def ? "workload" : "command", *name;
	int status = t->status;

	if (!t->started || !t->reaped)
		return;
	name = t->def ? t->def->name : t->argv[0];
	if (WIFSIGNALED(status))
		fprintf(stderr, "zctrace: %s %s killed by signal %d (SIG%s)%s; the ledger covers the run until then\n",
			what, name, WTERMSIG(status), sigabbrev_np(WTERMSIG(status)) ?: "?",
			WCOREDUMP(status) ? ", core dumped" : "");
	else if (WIFEXITED(status) && WEXITSTATUS(status))
		fprintf(stderr, "zctrace: %s %s exited with status %d\n", what, name, WEXITSTATUS(status));
}

void target_detach(struct target *t)
{
	tracer_destroy_links(t->usdt, TARGET_NR_USDT);
}

void target_close(struct target *t)
{
	if (t->started) {
		if (!t->reaped)
			stop_group(t);
		end_group(t);
	}
	target_detach(t);
	for (int i = 0; i < 2; i++) {
		if (t->result_pipe[i] >= 0)
			close(t->result_pipe[i]);
		if (t->start_pipe[i] >= 0)
			close(t->start_pipe[i]);
	}
	if (t->start_go)
		munmap(t->start_go, sizeof(*t->start_go));
	json_object_put(t->result);
	free(t->report.text);
	target_init(t);
}
