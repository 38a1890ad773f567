/*
 * The peer of the network microbenchmarks: the other side of their loopback connections, serving
 * the client one step at a time, so that every call either side makes falls inside the step the
 * kernel counts it in. It runs as a peer_run thread, started, pinned and joined by peer.c.
 */
#ifndef MBPEER_H
#define MBPEER_H

#include <netinet/in.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include "peer.h"
#include "tcpio.h"

/* No socket call, and no wait for the peer or for the client, blocks longer than this. */
#define MB_NET_TIMEOUT_S 10

/* Listens on 127.0.0.1 at a port the kernel chooses (written to @addr); accept() times out. */
int mb_peer_listen(struct sockaddr_in *addr, int backlog);

/*
 * The peer waits for the client to start a step, does @work for the step's quota, then reports
 * done. The client posts "go" after the step's marker and waits for "done" before ending the
 * step, so no call of the peer's straddles a step boundary.
 */
struct mb_peer {
	int (*work)(struct mb_peer *p, uint64_t quota);	/* returns 0 or -errno */
	void *state;
	int cpu;			/* pinned CPU, -1 for none */
	struct tcp_io io;		/* the peer's own calls; read after mb_peer_wait() */
	const char *err_what;		/* the call that failed */
	/* private */
	struct peer_run run;
	sem_t go, done;
	uint64_t quota;
	bool quit;
	int err;
};

/* Starts the peer (pinned to p->cpu, if any). Returns 0, or -errno having said why. */
int mb_peer_start(struct mb_peer *p, const char *name);
/* Lets the peer do @quota units of its work. */
void mb_peer_go(struct mb_peer *p, uint64_t quota);
/* Waits until the peer has done its quota. Returns 0, the peer's -errno, or -ETIMEDOUT. */
int mb_peer_wait(struct mb_peer *p);
struct mb;
/*
 * Starts the peer pinned to @server_cpu, pins the client (the caller) to @cpu, and begins the
 * microbenchmark @m. 0, or 1 having said why.
 */
int mb_peer_begin(struct mb *m, struct mb_peer *p, const char *name, int cpu, int server_cpu);
/*
 * Step @name of the client: the peer, let go after the step's marker, does @quota units of its work
 * while @sample(@state, i) runs for i = 0 .. @samples - 1; the step ends once the peer is done, so
 * no call of either side straddles it. Returns the step; exits, having said why, if the peer failed.
 */
int mb_peer_step(struct mb *m, struct mb_peer *p, const char *name, uint64_t quota,
		 void (*sample)(void *state, uint64_t i), void *state, uint64_t samples);
/* Tells the peer to leave and joins it. */
void mb_peer_stop(struct mb_peer *p);

#endif
