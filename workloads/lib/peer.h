/* The receiving side of a network workload: a thread, a child process, or a child process in the
 * receiver's network namespace (--peer thread|process|netns). */
#ifndef PEER_H
#define PEER_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>
#include <netinet/in.h>
#include "wl.h"

/* What a child process leaves in memory it shares with its parent: no byte of it crosses a pipe. */
struct peer_result {
	int ret;			/* what fn returned */
	int done;			/* set once ret and out are written */
	char out[];			/* the caller's @size bytes */
};

struct peer_run {
	enum wl_peer mode;
	int (*fn)(void *arg);		/* the receiving side; returns 0 or -errno */
	void *arg;
	void *out;			/* what fn leaves for the caller: @size bytes */
	size_t size;
	pthread_t tid;
	pid_t pid;
	struct peer_result *shared;	/* a child's result, in memory shared with it */
	int result_fd;			/* read end of a pipe only the child holds open: EOF when it ends */
	int ret;
	bool started;
	bool joined;			/* the thread is joined */
};

/* Where the sender listens and the receiver connects: 127.0.0.1, or the sender's veth address. */
void peer_server_addr(const struct wl_opts *o, struct sockaddr_in *addr);
/* Starts fn(arg) on the other side; with a child process, @out reaches the caller in peer_join. */
int peer_start(struct peer_run *p, enum wl_peer mode, int (*fn)(void *arg), void *arg, void *out,
	       size_t size);
/* Pins the other side to @cpu (-1: leaves it where it is). Returns 0 or -errno. */
int peer_pin(struct peer_run *p, int cpu);
/* Polls @fd for POLLIN while watching the peer: -ECHILD if it ended first, -ETIMEDOUT. */
int peer_wait_readable(struct peer_run *p, int fd, int timeout_ms);
/*
 * Waits until the receiving side has finished (at most @timeout_ms), without read(): inside the
 * measured phase the workload's own syscall counts stay its own. 0 or -errno.
 */
int peer_wait_done(struct peer_run *p, int timeout_ms);
/* Collects the receiving side's result (at most @timeout_ms) and reaps it: 0 or -errno. */
int peer_join(struct peer_run *p, int timeout_ms);
/* The process that runs the receiving side. */
pid_t peer_pid(const struct peer_run *p);
/* "peer", "path", "sender_pid", "receiver_pid", "link" of the workload's report. */
void peer_report(json_object *r, const struct wl_opts *o, const struct peer_run *p);

#endif
