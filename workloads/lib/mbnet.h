/*
 * Loopback TCP pieces shared by the network microbenchmarks: a listener on 127.0.0.1, and the peer
 * thread that serves the client one step at a time, so that every call either side makes falls
 * inside the step the kernel counts it in.
 */
#ifndef MBNET_H
#define MBNET_H

#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include "tcpio.h"

/* No socket call, and no wait for the peer, blocks longer than this. */
#define MBNET_TIMEOUT_S 10

/* Listens on 127.0.0.1 at a port the kernel chooses (written to @addr); accept() times out. */
int mbnet_listen(struct sockaddr_in *addr, int backlog);

/*
 * The peer: a thread that waits for the client to start a step, does @work for the step's quota,
 * then reports done. The client posts "go" after the step's marker and waits for "done" before
 * ending the step, so no call of the peer's straddles a step boundary.
 */
struct mbnet_peer {
	int (*work)(struct mbnet_peer *p, uint64_t quota);	/* returns 0 or -errno */
	void *state;
	int cpu;			/* pinned CPU, -1 for none */
	struct tcp_io io;		/* the peer's own calls; read after mbnet_peer_wait() */
	const char *err_what;		/* the call that failed */
	/* private */
	pthread_t tid;
	sem_t go, done;
	uint64_t quota;
	bool quit;
	int err;
};

/* Starts the peer thread (pinned to p->cpu, if any). Returns 0 or -errno. */
int mbnet_peer_start(struct mbnet_peer *p);
/* Lets the peer do @quota units of its work. */
void mbnet_peer_go(struct mbnet_peer *p, uint64_t quota);
/* Waits until the peer has done its quota. Returns 0, the peer's -errno, or -ETIMEDOUT. */
int mbnet_peer_wait(struct mbnet_peer *p);
/* Tells the peer to leave and joins it. */
void mbnet_peer_stop(struct mbnet_peer *p);

#endif
