/*
 * The microbenchmarks' peer: a peer_run thread that serves a quota of work per step. Every wait on
 * either side is bounded, so a side that stops answering fails the run instead of hanging it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mb.h"
#include "mbpeer.h"

int mb_peer_listen(struct sockaddr_in *addr, int backlog)
{
	*addr = (struct sockaddr_in){ .sin_family = AF_INET,
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	return tcp_listen(addr, backlog, MB_NET_TIMEOUT_S);
}

/* Waits for @sem at most @seconds. Returns 0 or -ETIMEDOUT. */
static int sem_wait_s(sem_t *sem, int seconds)
{
	struct timespec deadline;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += seconds;
	while (sem_clockwait(sem, CLOCK_MONOTONIC, &deadline)) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/*
 * The peer's side: the quota of each step the client starts, until it says quit. Like a server
 * between requests it waits for the next step no longer than a socket call may block, and it
 * serves no more steps than a run can have.
 */
static int serve_steps(void *arg)
{
	struct mb_peer *p = arg;

	for (int step = 0; step < MB_MAX_STEPS; step++) {
		int err = sem_wait_s(&p->go, MB_NET_TIMEOUT_S);

		if (!err && p->quit)
			break;
		if (err && !p->err) {
			p->err = err;
			p->err_what = "waiting for the client's next step";
		}
		if (!p->err)	/* after a failure the peer only reports it, step after step */
			p->err = p->work(p, p->quota);
		sem_post(&p->done);
		if (err)	/* the client's next wait ends at once, with the timeout */
			return err;
	}
	return 0;
}

int mb_peer_start(struct mb_peer *p, const char *name)
{
	int err;

	p->quit = false;
	p->err = 0;
	if (sem_init(&p->go, 0, 0) || sem_init(&p->done, 0, 0)) {
		err = -errno;
		goto fail;
	}
	if ((err = peer_start(&p->run, WL_PEER_THREAD, serve_steps, p, NULL, 0))) {
		sem_destroy(&p->go);
		sem_destroy(&p->done);
		goto fail;
	}
	if ((err = peer_pin(&p->run, p->cpu))) {
		mb_peer_stop(p);
		goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "%s: cannot start the server thread on CPU %d: %s\n", name, p->cpu,
		strerror(-err));
	return err;
}

void mb_peer_go(struct mb_peer *p, uint64_t quota)
{
	p->quota = quota;
	sem_post(&p->go);
}

int mb_peer_wait(struct mb_peer *p)
{
	/* the peer's own calls time out first: this only bounds a peer that stopped answering */
	int err = sem_wait_s(&p->done, 2 * MB_NET_TIMEOUT_S);

	return err ? err : p->err;
}

int mb_peer_begin(struct mb *m, struct mb_peer *p, const char *name, int cpu, int server_cpu)
{
	/* the peer first: it is pinned on its own, not by inheriting the client's CPU */
	p->cpu = server_cpu;
	if (mb_peer_start(p, name))
		return 1;
	if (mb_pin(name, cpu))
		return 1;	/* the server thread ends with the process */
	mb_init(m, name, cpu);
	mb_begin(m);
	return 0;
}

int mb_peer_step(struct mb *m, struct mb_peer *p, const char *name, uint64_t quota,
		 void (*sample)(void *state, uint64_t i), void *state, uint64_t samples)
{
	int step = mb_step_begin(m, name), err;

	/* after the marker: the peer's first call is in the step */
	mb_peer_go(p, quota);
	for (uint64_t i = 0; i < samples; i++)
		sample(state, i);
	/* the peer may still be finishing its last call: it belongs to this step */
	if ((err = mb_peer_wait(p))) {
		fprintf(stderr, "%s: %s: %s\n", m->name, p->err_what ? p->err_what : "waiting for the server",
			strerror(-err));
		exit(1);	/* the kernel closes the sockets; the peer thread ends with the process */
	}
	mb_step_end(m);
	return step;
}

void mb_peer_stop(struct mb_peer *p)
{
	p->quit = true;
	sem_post(&p->go);
	/* the thread leaves serve_steps() at the quit, or by its own timeouts: the join is bounded */
	peer_join(&p->run, 2 * MB_NET_TIMEOUT_S * 1000);
	sem_destroy(&p->go);
	sem_destroy(&p->done);
}
