/*
 * The traced target's lifecycle: a built-in workload or a command started in a process group of
 * its own, or a running process followed (-p); waited for, stopped, reaped. Nothing it started
 * outlives zctrace, even when zctrace is killed.
 */
#ifndef TARGET_H
#define TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include <json-c/json.h>
#include "os/cli.h"

struct zctrace_bpf;
struct bpf_link;
struct perf_set;
struct netns_pair;
struct workload_def;

#define TARGET_NR_USDT 4

struct target {
	/* what to trace: set before target_spawn or target_follow */
	const struct workload_def *def;	/* a built-in workload, or NULL for a command or -p */
	char **argv;			/* the command line, NULL-terminated; a workload's starts with its name */
	pid_t pid;			/* -p's process, or the one started here (its group's leader) */
	double duration;		/* -p: how long to follow it */
	char binary[PATH_MAX];		/* the built-in workload's executable */

	char name[256];			/* what the ledger calls it */
	bool started;			/* started here: stopped and reaped here */
	bool reaped;
	int status;			/* wait status, once reaped */
	int start_pipe[2];		/* the started process waits for its end of file until it is traced */
	int *start_go;			/* shared with it: set before that end of file when it may go */
	int result_pipe[2];		/* the workload's own figures (ZCTRACE_RESULT_FD) */
	struct report_pipe report;
	json_object *result;		/* the report parsed, once the target is gone */
	pid_t guard;			/* kills the target's group if zctrace dies; -1: none */
	int guard_fd;			/* its pipe's only write end */
	struct bpf_link *usdt[TARGET_NR_USDT];
	bool usdt_held;			/* the tracer's owner holds the binary's USDT probes: none per run */
};

/* Nothing started, nothing open. */
void target_init(struct target *t);
/* The executable of built-in workload @name: beside zctrace, or installed, or in $ZCTRACE_WORKLOADS. */
int target_workload_binary(const char *name, char *path, size_t n);
/*
 * Attaches the USDT programs to @binary, for process @pid or every process that runs it (-1), into
 * @links (NULL where not attached). A built-in workload (@def) that is not a microbenchmark gets
 * no step marker. 0 when the phase markers attached; -ENOENT for a binary without zctrace's probes.
 */
int target_attach_usdt(struct zctrace_bpf *obj, pid_t pid, const char *binary, const struct workload_def *def,
		       struct bpf_link **links);
/* -p: traces t->pid and its living descendants, its USDT probes and perf counters. 0. */
int target_follow(struct target *t, struct zctrace_bpf *obj, struct perf_set *perf);
/*
 * Starts t->argv (t->def's binary for a workload) in a process group of its own, in @np's sender
 * namespace when there is one, and lets it run once it is traced: by @obj and counted by @perf,
 * or neither (NULL: an untraced pass). 0, or -1 with one line said.
 */
int target_spawn(struct target *t, struct zctrace_bpf *obj, struct perf_set *perf, const struct netns_pair *np);
/*
 * Until the started target ends (then its group is killed, its report read) or -p's duration is
 * over, or a stop signal (then the target is stopped). @tick, if any, runs every few milliseconds.
 */
void target_wait(struct target *t, void (*tick)(void *arg), void *arg);
/* The traced program's exit status as the ledger records it; -1 for a process not started here. */
int target_exit_status(const struct target *t);
/* A built-in workload that exited EXIT_USAGE before its measured phase: it refused its options. */
bool target_refused_options(const struct target *t, const struct zctrace_bpf *obj);
/* One line on how the started program ended, when it did not succeed. */
void target_report_end(const struct target *t);
/* Detaches the USDT programs from the target. */
void target_detach(struct target *t);
/* Stops and reaps what is still running, dismisses the guard, detaches, closes. */
void target_close(struct target *t);

#endif
