/*
 * The peer of the network microbenchmarks: the server at the other end of their TCP connections,
 * serving the client one step at a time, so that every call either side makes falls inside the
 * step the kernel counts it in. It runs where --peer says (peer.c): a thread, a child process over
 * loopback, or a child process in the receiver's network namespace, across the veth pair.
 */
#ifndef MBPEER_H
#define MBPEER_H

#include <netinet/in.h>
#include <stdint.h>
#include <json-c/json.h>
#include "peer.h"
#include "tcpio.h"

/* No socket call, and no wait for the peer or for the client, blocks longer than this. */
#define MB_NET_TIMEOUT_S 10

/* The --peer option of a network microbenchmark, into a const char * at @dst. */
#define MB_PEER_OPT(dst) { "peer", MB_CHOICE, (dst) }

struct mb_peer_shared;

/*
 * The server's side, run where the peer runs: @setup makes its sockets before the run (its
 * listener with mb_peer_listen(), which tells the client where to connect), @work serves a step's
 * quota, @leave closes what @setup made. Each returns 0 or -errno (mb_peer_fail() says which call).
 * In a child process the peer has its own copy of @state: what @setup writes there is its own.
 */
struct mb_peer {
	int (*setup)(struct mb_peer *p);
	int (*work)(struct mb_peer *p, uint64_t quota);
	void (*leave)(struct mb_peer *p);
	void *state;
	enum wl_peer mode;
	int cpu;			/* pinned CPU, -1 for none */
	struct tcp_io *io;		/* the peer's own calls, in shared memory; read after a step */
	/* private */
	struct peer_run run;
	struct mb_peer_shared *sh;
};

/* --peer's word into p->mode; --peer netns outside zctrace is refused. 0, or -1 having said why. */
int mb_peer_mode(struct mb_peer *p, const char *name, const char *word);
/*
 * On the peer's side: listens at 127.0.0.1, or at the receiver's veth address in its namespace,
 * on a port the kernel chooses, and tells the client. Returns the socket (accept() times out) or
 * -errno.
 */
int mb_peer_listen(struct mb_peer *p, int backlog);
/* On the peer's side: notes that @what failed with @err; returns @err. */
int mb_peer_fail(struct mb_peer *p, const char *what, int err);
/*
 * Starts the peer pinned to p->cpu and waits until it listens. 0, or 1 having said why (the
 * client then exits: the peer ends with it).
 */
int mb_peer_start(struct mb_peer *p, const char *name);
/* Where the peer listens: valid after mb_peer_start(). */
const struct sockaddr_in *mb_peer_addr(const struct mb_peer *p);
struct mb;
/*
 * Waits until the peer's setup is done (the client has connected by then, if it connects once),
 * pins the client (the caller) to @cpu and begins the microbenchmark @m. 0, or 1 having said why.
 */
int mb_peer_begin(struct mb *m, struct mb_peer *p, const char *name, int cpu);
/*
 * Step @name of the client: the peer, let go after the step's marker, does @quota units of its work
 * while @sample(@state, i) runs for i = 0 .. @samples - 1; the step ends once the peer is done, so
 * no call of either side straddles it. Returns the step; exits, having said why, if the peer failed.
 */
int mb_peer_step(struct mb *m, struct mb_peer *p, const char *name, uint64_t quota,
		 void (*sample)(void *state, uint64_t i), void *state, uint64_t samples);
/*
 * Tells the peer to leave (it closes its sockets) and joins it: after mb_end(), so that neither
 * its closes nor the join are in the measured phase. p->io is gone with it: report it first.
 */
void mb_peer_stop(struct mb_peer *p);
/* "peer", "path", "client_pid" and "server_pid" of the report. */
void mb_peer_report(json_object *extra, const struct mb_peer *p);
/* "the server thread", "the server process", "the server process in its namespace". */
const char *mb_peer_what(const struct mb_peer *p);
/* The way between client and server, in words: over loopback, or across the veth pair. */
const char *mb_peer_path(const struct mb_peer *p);

#endif
