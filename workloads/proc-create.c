/*
 * proc-create: the cost of creating a process and waiting for its end, three ways: fork() +
 * _exit() + waitpid(), fork() + execve() of a tiny program, and posix_spawn() (glibc's
 * clone3(CLONE_VM | CLONE_VFORK) + execve()). The kernel counts the processes created and ended
 * in each step and the system calls that did it, so "one fork per iteration" is checked, not hoped.
 */
#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "mb.h"

extern char **environ;

/* Small enough to exec quickly, and on every Debian system */
static const char *const tiny_prog = "/bin/true";

/* Waits for @pid; any end but a clean exit 0 is an error the run must not hide. */
static void reap(pid_t pid, const char *how)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "proc-create: waitpid after %s: %s\n", how, strerror(errno));
			exit(1);
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "proc-create: child of %s ended with status 0x%x\n", how, status);
		exit(1);
	}
}

static pid_t must_fork(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, "proc-create: fork: %s\n", strerror(errno));
		exit(1);
	}
	return pid;
}

static void run_fork(uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++) {
		pid_t pid = must_fork();

		if (!pid)
			_exit(0);
		reap(pid, "fork");
	}
}

static void run_fork_exec(uint64_t iters)
{
	char *const argv[] = { (char *)tiny_prog, NULL };

	for (uint64_t i = 0; i < iters; i++) {
		pid_t pid = must_fork();

		if (!pid) {
			execve(tiny_prog, argv, environ);
			_exit(127);	/* reap() reports it */
		}
		reap(pid, "fork+execve");
	}
}

static void run_spawn(uint64_t iters)
{
	char *const argv[] = { (char *)tiny_prog, NULL };

	for (uint64_t i = 0; i < iters; i++) {
		pid_t pid;
		int err = posix_spawn(&pid, tiny_prog, NULL, NULL, argv, environ);

		if (err) {
			fprintf(stderr, "proc-create: posix_spawn %s: %s\n", tiny_prog, strerror(err));
			exit(1);
		}
		reap(pid, "posix_spawn");
	}
}

struct way {
	const char *key;		/* --way name */
	const char *name;
	void (*run)(uint64_t iters);
	const char *create_syscall;	/* how glibc 2.36 asks the kernel for the new process */
	bool execs;
};

static const struct way ways[] = {
	/* fork() is clone(SIGCHLD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID) in glibc */
	{ "fork", "fork+_exit+waitpid", run_fork, "clone", false },
	{ "exec", "fork+execve(/bin/true)+waitpid", run_fork_exec, "clone", true },
	/* posix_spawn is __clone_internal(): clone3 where the kernel has it */
	{ "spawn", "posix_spawn(/bin/true)+waitpid", run_spawn, "clone3", true },
};

/* Times @w: @warmup samples dropped, then @reps kept, each of @iters creations, in one step. */
static int measure_way(struct mb *m, const struct way *w, uint64_t iters, uint64_t warmup, uint64_t reps)
{
	struct mb_samples s = {};
	int step = mb_step_begin(m, w->name);

	for (uint64_t r = 0; r < warmup + reps; r++) {
		uint64_t t0 = mb_now_ns();

		w->run(iters);
		if (r >= warmup)
			mb_samples_add(&s, (double)(mb_now_ns() - t0) / 1e3 / iters);
	}
	mb_step_end(m);
	mb_result(m, w->name, "us", &s, iters, warmup);
	mb_samples_free(&s);
	return step;
}

int main(int argc, char **argv)
{
	uint64_t iters = 10, reps = 50, warmup = 2;
	const char *only = "all";
	int cpu = 0;
	const struct mb_opt opts[] = {
		{ "way", MB_CHOICE, &only },
		{ "iters", MB_COUNT, &iters, 1, 100000 },
		{ "reps", MB_COUNT, &reps, 1, 100000 },
		{ "warmup", MB_COUNT, &warmup, 0, 1000 },
		{ "cpu", MB_CPU, &cpu },
		{},
	};
	struct mb m;

	if (mb_parse(argc, argv, "proc-create", "Times process creation: fork, fork+exec and posix_spawn; "
		     "the kernel counts the processes and syscalls.", opts))
		return 2;
	if ((warmup + reps) * iters > 1000000) {
		fprintf(stderr, "proc-create: (warmup + reps) x iters above 1000000 processes\n");
		return 2;
	}
	if (access(tiny_prog, X_OK)) {
		fprintf(stderr, "proc-create: %s: %s\n", tiny_prog, strerror(errno));
		return 1;
	}
	if (mb_pin("proc-create", cpu))
		return 1;
	mb_init(&m, "proc-create", cpu);
	mb_begin(&m);
	for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		const struct way *w = &ways[i];
		uint64_t n = (warmup + reps) * iters;
		char claim[160], measure[48];
		int step;

		if (strcmp(only, "all") && strcmp(only, w->key))
			continue;
		step = measure_way(&m, w, iters, warmup, reps);
		snprintf(claim, sizeof(claim), "%s: one new process per iteration", w->name);
		mb_assume_exact(&m, step, claim, "forks", n);
		snprintf(claim, sizeof(claim), "%s: every process ended within the iteration", w->name);
		mb_assume_exact(&m, step, claim, "exits", n);
		snprintf(claim, sizeof(claim), "%s: each process created by one %s syscall", w->name,
			 w->create_syscall);
		snprintf(measure, sizeof(measure), "syscall:%s", w->create_syscall);
		mb_assume_exact(&m, step, claim, measure, n);
		snprintf(claim, sizeof(claim), "%s: one wait4 per process (waitpid)", w->name);
		mb_assume_exact(&m, step, claim, "syscall:wait4", n);
		snprintf(claim, sizeof(claim), "%s: each process ended by one exit_group", w->name);
		mb_assume_exact(&m, step, claim, "syscall:exit_group", n);
		snprintf(claim, sizeof(claim), w->execs ? "%s: each child ran one execve" :
			 "%s: no child ran execve", w->name);
		mb_assume_exact(&m, step, claim, "syscall:execve", w->execs ? n : 0);
	}
	return mb_finish(&m, NULL);
}
