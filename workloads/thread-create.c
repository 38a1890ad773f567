/*
 * thread-create: the cost of creating a thread and joining it, two ways: pthread_create() +
 * pthread_join(), and a bare clone(CLONE_VM | CLONE_THREAD | ...) on a stack of our own, joined by
 * waiting on the futex the kernel clears when the thread is gone (CLONE_CHILD_CLEARTID), as
 * pthread_join() does underneath. The kernel counts each task made and ended and the clone calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "mb.h"

#define CLONE_STACK (64 * 1024)

static void *pthread_body(void *arg)
{
	return arg;
}

static void run_pthread(void *state, uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++) {
		pthread_t t;
		void *ret;
		int err = pthread_create(&t, NULL, pthread_body, NULL);

		if (err) {
			fprintf(stderr, "thread-create: pthread_create: %s\n", strerror(err));
			exit(1);
		}
		err = pthread_join(t, &ret);
		if (err) {
			fprintf(stderr, "thread-create: pthread_join: %s\n", strerror(err));
			exit(1);
		}
	}
}

/*
 * Runs on the bare clone's stack with the creator's TLS: it must touch no TLS (not even errno).
 * glibc's clone() ends the thread with the exit syscall (this task only) when it returns.
 */
static int clone_body(void *arg)
{
	return 0;
}

struct clone_state {
	void *stack;			/* one stack, reused: each thread is joined before the next */
	volatile pid_t tid;		/* set by the kernel at creation, cleared at exit */
};

static void run_clone(void *state, uint64_t iters)
{
	struct clone_state *cs = state;
	const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
			  CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;

	for (uint64_t i = 0; i < iters; i++) {
		pid_t tid = clone(clone_body, (char *)cs->stack + CLONE_STACK, flags, NULL, &cs->tid, NULL,
				  &cs->tid);
		int spins = 0;

		if (tid < 0) {
			fprintf(stderr, "thread-create: clone: %s\n", strerror(errno));
			exit(1);
		}
		/*
		 * CLONE_PARENT_SETTID stored the tid before clone returned; the kernel zeroes it and
		 * wakes its futex once the thread has left the stack. Not a private futex: the
		 * kernel's wake is the shared kind (as pthread_join waits).
		 */
		for (pid_t v; (v = cs->tid) != 0;) {
			if (syscall(SYS_futex, &cs->tid, FUTEX_WAIT, v, NULL, NULL, 0) && errno != EAGAIN &&
			    errno != EINTR) {
				fprintf(stderr, "thread-create: futex wait: %s\n", strerror(errno));
				exit(1);
			}
			if (++spins > 1000000) {
				fprintf(stderr, "thread-create: thread %d never ended\n", tid);
				exit(1);
			}
		}
	}
}

struct way {
	const char *key;		/* --way name */
	const char *create_syscall;	/* what the kernel sees */
	struct mb_bench bench;
};

int main(int argc, char **argv)
{
	uint64_t iters = 100, reps = 100, warmup = 2;
	const char *only = "all";
	int cpu = 0;
	struct clone_state cs = {};
	struct way ways[] = {
		/* glibc 2.34+ creates threads with clone3 */
		{ "pthread", "clone3", { "pthread_create+pthread_join", "ns", run_pthread } },
		/* glibc's public clone() is the clone syscall itself */
		{ "clone", "clone", { "clone(CLONE_VM|CLONE_THREAD)+futex join", "ns", run_clone, &cs } },
	};
	const struct mb_opt opts[] = {
		{ "way", MB_CHOICE, &only },
		{ "iters", MB_COUNT, &iters, 1, 1000000 },
		{ "reps", MB_COUNT, &reps, 1, 100000 },
		{ "warmup", MB_COUNT, &warmup, 0, 1000 },
		{ "cpu", MB_CPU, &cpu },
		{},
	};
	struct mb m;

	if (mb_parse(argc, argv, "thread-create", "Times thread creation and join: pthread_create and a "
		     "bare clone; the kernel counts the threads and syscalls.", opts))
		return 2;
	if ((warmup + reps) * iters > 10000000) {
		fprintf(stderr, "thread-create: (warmup + reps) x iters above 10000000 threads\n");
		return 2;
	}
	if (mb_pin("thread-create", cpu))
		return 1;
	cs.stack = mmap(NULL, CLONE_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
			-1, 0);
	if (cs.stack == MAP_FAILED) {
		perror("thread-create: mmap stack");
		return 1;
	}
	mb_init(&m, "thread-create", cpu);
	mb_begin(&m);
	for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		const struct way *w = &ways[i];
		uint64_t n = (warmup + reps) * iters;
		char claim[160], measure[48];
		int step;

		if (strcmp(only, "all") && strcmp(only, w->key))
			continue;
		step = mb_measure(&m, &w->bench, iters, warmup, reps, NULL);
		snprintf(claim, sizeof(claim), "%s: one new task per iteration", w->bench.name);
		mb_assume_exact(&m, step, claim, "forks", n);
		snprintf(claim, sizeof(claim), "%s: every thread ended before its join returned",
			 w->bench.name);
		mb_assume_exact(&m, step, claim, "exits", n);
		snprintf(claim, sizeof(claim), "%s: each thread made by one %s syscall", w->bench.name,
			 w->create_syscall);
		snprintf(measure, sizeof(measure), "syscall:%s", w->create_syscall);
		mb_assume_exact(&m, step, claim, measure, n);
		snprintf(claim, sizeof(claim), "%s: each thread left by the exit syscall (this task only)",
			 w->bench.name);
		mb_assume_exact(&m, step, claim, "syscall:exit", n);
	}
	munmap(cs.stack, CLONE_STACK);
	return mb_finish(&m, NULL);
}
