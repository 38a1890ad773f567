/*
 * The microbenchmarks' peer: a server that makes its own sockets where it runs and serves a quota
 * of work per step. Client and peer meet in memory both map (a process's copy of the rest is its
 * own), through process-shared semaphores. Every wait on either side is bounded, so a side that
 * stops answering fails the run instead of hanging it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "mb.h"
#include "mbpeer.h"

struct mb_peer_shared {
	sem_t go, done;
	uint64_t quota;
	bool quit;
	bool listening;			/* addr is set, and the client told */
	int err;
	char err_what[64];		/* the call that failed */
	struct sockaddr_in addr;
	struct tcp_io io;
};

int mb_peer_mode(struct mb_peer *p, const char *name, const char *word)
{
	if (wl_parse_peer(word, &p->mode)) {
		fprintf(stderr, "%s: invalid --peer '%s' (thread|process|netns)\n", name, word);
		return -1;
	}
	if (p->mode == WL_PEER_NETNS && !getenv(WL_NETNS_FD_ENV)) {
		fprintf(stderr, "%s: --peer netns: the namespaces are made by 'zctrace run' (run it "
			"there)\n", name);
		return -1;
	}
	return 0;
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

int mb_peer_fail(struct mb_peer *p, const char *what, int err)
{
	if (!p->sh->err_what[0])
		snprintf(p->sh->err_what, sizeof(p->sh->err_what), "%s", what);
	return err;
}

int mb_peer_listen(struct mb_peer *p, int backlog)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	int lfd;

	/* in the receiver's namespace, 127.0.0.1 would be its own loopback: the veth end it is */
	if (p->mode == WL_PEER_NETNS)
		inet_pton(AF_INET, WL_NETNS_RECEIVER_ADDR, &addr.sin_addr);
	else
		addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = tcp_listen(&addr, backlog, MB_NET_TIMEOUT_S);
	if (lfd < 0)
		return mb_peer_fail(p, "listen", lfd);
	p->sh->addr = addr;
	p->sh->listening = true;
	sem_post(&p->sh->done);
	return lfd;
}

/*
 * The peer's steps: the quota of each step the client starts, until it says quit. Like a server
 * between requests it waits for the next step no longer than a socket call may block, and it
 * serves no more steps than a run can have.
 */
static int serve_steps(struct mb_peer *p)
{
	struct mb_peer_shared *sh = p->sh;

	for (int step = 0; step < MB_MAX_STEPS; step++) {
		int err = sem_wait_s(&sh->go, MB_NET_TIMEOUT_S);

		if (!err && sh->quit)
			break;
		if (err && !sh->err) {
			sh->err = err;
			mb_peer_fail(p, "waiting for the client's next step", err);
		}
		if (!sh->err)	/* after a failure the peer only reports it, step after step */
			sh->err = p->work(p, sh->quota);
		sem_post(&sh->done);
		if (err)	/* the client's next wait ends at once, with the timeout */
			return err;
	}
	return 0;
}

/* The peer, where it runs: its setup (the client waits for its listener, then for its end), then
 * the steps, then its sockets closed. */
static int serve(void *arg)
{
	struct mb_peer *p = arg;
	struct mb_peer_shared *sh = p->sh;
	int err = p->setup(p);

	sh->err = err;
	if (!sh->listening)	/* failed before it listened: the client's first wait ends too */
		sem_post(&sh->done);
	sem_post(&sh->done);
	if (!err)
		err = serve_steps(p);
	if (p->leave)
		p->leave(p);
	return err;
}

/* Waits for the peer's next "done". Returns 0, the peer's -errno, or -ETIMEDOUT. */
static int peer_done(struct mb_peer *p)
{
	/* the peer's own calls time out first: this only bounds a peer that stopped answering */
	int err = sem_wait_s(&p->sh->done, 2 * MB_NET_TIMEOUT_S);

	return err ? err : p->sh->err;
}

/* Says what failed on the peer's side, or while waiting for it. */
static void peer_error(const struct mb_peer *p, const char *name, int err)
{
	if (p->sh->err_what[0])
		fprintf(stderr, "%s: server %s: %s\n", name, p->sh->err_what, strerror(-err));
	else
		fprintf(stderr, "%s: waiting for %s: %s\n", name, mb_peer_what(p), strerror(-err));
}

static int map_shared(struct mb_peer *p)
{
	void *sh = mmap(NULL, sizeof(*p->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (sh == MAP_FAILED)
		return -errno;
	p->sh = sh;
	memset(p->sh, 0, sizeof(*p->sh));
	p->io = &p->sh->io;
	if (sem_init(&p->sh->go, 1, 0) || sem_init(&p->sh->done, 1, 0)) {
		munmap(p->sh, sizeof(*p->sh));
		p->sh = NULL;
		return -errno;
	}
	return 0;
}

int mb_peer_start(struct mb_peer *p, const char *name)
{
	int err;

	if ((err = map_shared(p))) {
		fprintf(stderr, "%s: shared memory for the server: %s\n", name, strerror(-err));
		return 1;
	}
	/* a child's result is in the shared memory already: peer.c copies nothing back */
	if ((err = peer_start(&p->run, p->mode, serve, p, p->sh, 0)) ||
	    (err = peer_pin(&p->run, p->cpu))) {
		fprintf(stderr, "%s: cannot start %s on CPU %d: %s\n", name, mb_peer_what(p), p->cpu,
			strerror(-err));
		return 1;	/* a started peer ends with the process */
	}
	if ((err = peer_done(p))) {
		peer_error(p, name, err);
		return 1;
	}
	return 0;
}

const struct sockaddr_in *mb_peer_addr(const struct mb_peer *p)
{
	return &p->sh->addr;
}

int mb_peer_begin(struct mb *m, struct mb_peer *p, const char *name, int cpu)
{
	int err = peer_done(p);

	if (err) {
		peer_error(p, name, err);
		return 1;
	}
	if (mb_pin(name, cpu))
		return 1;
	mb_init(m, name, cpu);
	mb_begin(m);
	return 0;
}

int mb_peer_step(struct mb *m, struct mb_peer *p, const char *name, uint64_t quota,
		 void (*sample)(void *state, uint64_t i), void *state, uint64_t samples)
{
	int step = mb_step_begin(m, name), err;

	/* after the marker: the peer's first call is in the step */
	p->sh->quota = quota;
	sem_post(&p->sh->go);
	for (uint64_t i = 0; i < samples; i++)
		sample(state, i);
	/* the peer may still be finishing its last call: it belongs to this step */
	if ((err = peer_done(p))) {
		peer_error(p, m->name, err);
		exit(1);	/* the kernel closes the sockets; the peer ends with the process */
	}
	mb_step_end(m);
	return step;
}

void mb_peer_stop(struct mb_peer *p)
{
	p->sh->quit = true;
	sem_post(&p->sh->go);
	/* the peer leaves serve_steps() at the quit, or by its own timeouts: the join is bounded */
	peer_join(&p->run, 2 * MB_NET_TIMEOUT_S * 1000);
	sem_destroy(&p->sh->go);
	sem_destroy(&p->sh->done);
	munmap(p->sh, sizeof(*p->sh));
	p->sh = NULL;
	p->io = NULL;
}

void mb_peer_report(json_object *extra, const struct mb_peer *p)
{
	json_object_object_add(extra, WL_KEY_PEER, json_object_new_string(wl_peer_name(p->mode)));
	json_object_object_add(extra, WL_KEY_PATH,
			       json_object_new_string(p->mode == WL_PEER_NETNS ? "veth" : "loopback"));
	json_object_object_add(extra, WL_KEY_CLIENT_PID, json_object_new_int(getpid()));
	json_object_object_add(extra, WL_KEY_SERVER_PID, json_object_new_int(peer_pid(&p->run)));
}

const char *mb_peer_what(const struct mb_peer *p)
{
	return p->mode == WL_PEER_NETNS ? "the server process in its namespace"
	       : p->mode == WL_PEER_PROCESS ? "the server process" : "the server thread";
}

const char *mb_peer_path(const struct mb_peer *p)
{
	return p->mode == WL_PEER_NETNS ? "over veth, " WL_NETNS_SENDER_ADDR " to " WL_NETNS_RECEIVER_ADDR
					  " between two network namespaces"
					: "over loopback";
}
