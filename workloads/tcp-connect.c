/*
 * tcp-connect: the cost of setting up and tearing down a TCP connection (lmbench lat_connect; the
 * 2013 report's setup 0.04 ms and teardown 0.01 ms). connect() and close() are timed apart; a
 * server accepts each connection, reads until the client's close reaches it, and closes its end,
 * as lat_connect's server does. The server runs where --peer says: a thread or a child process
 * over loopback, or a child process in its own network namespace across the veth pair. The kernel
 * counts both sides: one connect() and one accept() per connection, one close() on each side.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "mb.h"
#include "mbpeer.h"

/*
 * Each connection the client closes first stays in TIME_WAIT on its side for 60 s, holding its
 * ephemeral port for this listener (ports 32768-60999 by default): a run stays well below that.
 */
#define MAX_CONNECTIONS 20000

struct conn_bench {
	int lfd;			/* the peer's listener: made where it runs */
	struct sockaddr_in addr;	/* where it listens */
	bool reset;			/* close with SO_LINGER {1, 0}: RST, no TIME_WAIT */
	struct mb_samples conn_s, close_s;	/* the client's samples, us per call */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "tcp-connect: %s: %s\n", what, strerror(-err));
	exit(1);	/* the kernel closes the sockets; the peer ends with the process */
}

/* The server's setup: a backlog deep enough that no SYN is dropped while it catches up. */
static int listen_for_clients(struct mb_peer *p)
{
	struct conn_bench *cb = p->state;

	cb->lfd = mb_peer_listen(p, 4096);
	return cb->lfd < 0 ? cb->lfd : 0;
}

static void close_listener(struct mb_peer *p)
{
	struct conn_bench *cb = p->state;

	if (cb->lfd >= 0)
		close(cb->lfd);
	cb->lfd = -1;
}

/* The server: accepts each connection, waits for the client's FIN (or RST), closes its end. */
static int serve(struct mb_peer *p, uint64_t connections)
{
	struct conn_bench *cb = p->state;
	char c;

	for (uint64_t i = 0; i < connections; i++) {
		int fd = accept4(cb->lfd, NULL, NULL, SOCK_CLOEXEC), err;

		if (fd < 0)
			return mb_peer_fail(p, "accept", errno == EAGAIN ? -ETIMEDOUT : -errno);
		/* the accepted socket inherits the listener's receive timeout */
		err = tcp_recv_all(fd, &c, 1, p->io);
		close(fd);
		if (err != -ENODATA && !(cb->reset && err == -ECONNRESET))
			return mb_peer_fail(p, "read of the client's close", err ? err : -EPROTO);
	}
	return 0;
}

/* One sample: @iters connections made and closed; adds the mean connect() and close() in us. */
static void sample(struct conn_bench *cb, uint64_t iters, struct mb_samples *conn_s,
		   struct mb_samples *close_s)
{
	static const struct linger rst = { .l_onoff = 1, .l_linger = 0 };
	uint64_t conn_ns = 0, close_ns = 0;
	int err;

	for (uint64_t i = 0; i < iters; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		uint64_t t0, t1, t2;

		if (fd < 0)
			die("socket", -errno);
		/* SO_SNDTIMEO bounds connect() too */
		if ((err = wl_socket_timeouts(fd, MB_NET_TIMEOUT_S)))
			die("timeouts", err);
		if (cb->reset && setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst)))
			die("SO_LINGER", -errno);
		t0 = mb_now_ns();
		if (connect(fd, (struct sockaddr *)&cb->addr, sizeof(cb->addr)))
			die("connect", errno == EINPROGRESS ? -ETIMEDOUT : -errno);
		t1 = mb_now_ns();
		close(fd);
		t2 = mb_now_ns();
		conn_ns += t1 - t0;
		close_ns += t2 - t1;
	}
	if (conn_s) {
		mb_samples_add(conn_s, (double)conn_ns / iters / 1e3);
		mb_samples_add(close_s, (double)close_ns / iters / 1e3);
	}
}

static struct tcp_connect_cfg {
	uint64_t iters, reps, warmup;
	const char *close_how, *peer;
	int cpu, server_cpu;
} cfg = {
	.iters = 50, .reps = 38, .warmup = 2, .close_how = "fin", .peer = "thread",
};

static const struct mb_opt opts[] = {
	{ "iters", MB_COUNT, &cfg.iters, 1, MAX_CONNECTIONS },
	{ "reps", MB_COUNT, &cfg.reps, 1, MAX_CONNECTIONS },
	{ "warmup", MB_COUNT, &cfg.warmup, 0, MAX_CONNECTIONS },
	{ "close", MB_CHOICE, &cfg.close_how },
	{ "cpu", MB_CPU, &cfg.cpu },
	{ "server-cpu", MB_CPU, &cfg.server_cpu },
	MB_PEER_OPT(&cfg.peer),
	{},
};

/* The options and their checks; 0, or -1 having said why. */
static int parse_options(int argc, char **argv, struct mb_peer *peer)
{
	uint64_t n;

	if (mb_parse(argc, argv, "tcp-connect", "Times connect() and close() of TCP connections "
		     "to a server on this host or, with --peer netns, across a veth pair; the kernel "
		     "counts the connects, accepts and closes of both sides.", opts) ||
	    mb_peer_mode(peer, "tcp-connect", cfg.peer))
		return -1;
	n = (cfg.warmup + cfg.reps) * cfg.iters;
	if (n > MAX_CONNECTIONS) {
		fprintf(stderr, "tcp-connect: invalid --iters x (--warmup + --reps) = %" PRIu64
			" connections (at most %d: each keeps an ephemeral port in TIME_WAIT)\n", n,
			MAX_CONNECTIONS);
		return -1;
	}
	return 0;
}

/* One sample of the client: --iters connections, kept past the warm-up. */
static void connect_sample(void *state, uint64_t rep)
{
	struct conn_bench *cb = state;
	bool kept = rep >= cfg.warmup;

	sample(cb, cfg.iters, kept ? &cb->conn_s : NULL, kept ? &cb->close_s : NULL);
}

/* The one step: @n connections made and closed, --iters per sample; the two results. */
static int time_connections(struct mb *m, struct conn_bench *cb, struct mb_peer *peer, uint64_t n)
{
	int step = mb_peer_step(m, peer, "connect() then close()", n, connect_sample, cb,
				cfg.warmup + cfg.reps);

	mb_result(m, peer->mode == WL_PEER_NETNS ? "connect() over veth" : "connect() over loopback",
		  "us", &cb->conn_s, cfg.iters, cfg.warmup);
	mb_result(m, cb->reset ? "close() with SO_LINGER 0 (RST)" : "close() (FIN)", "us", &cb->close_s,
		  cfg.iters, cfg.warmup);
	mb_samples_free(&cb->conn_s);
	mb_samples_free(&cb->close_s);
	return step;
}

/* What the kernel must have counted in @step: each side's calls, once per connection; a note. */
static void claim_connections(struct mb *m, const struct mb_peer *peer, int step,
			      const struct conn_bench *cb, uint64_t n)
{
	char claim[200];

	snprintf(claim, sizeof(claim), "each of the %" PRIu64 " connections was one socket() by "
		 "the client", n);
	mb_assume_exact(m, step, claim, "syscall:socket", n);
	mb_assume_exact(m, step, "each connection was one connect() by the client (no retry)",
			"syscall:connect", n);
	mb_assume_exact(m, step, "the server accepted each connection once", "syscall:accept4", n);
	snprintf(claim, sizeof(claim), "the client's close reached the server as one %s, before "
		 "the server closed", cb->reset ? "reset read" : "end-of-stream read");
	mb_assume_exact(m, step, claim, "syscall:recvfrom", n);
	mb_assume_exact(m, step, "each connection was closed once on each side", "syscall:close",
			2 * n);
	mb_note(m, "%" PRIu64 " connections; client on CPU %d, %s on CPU %d (-1: not pinned), %s; "
		"the client closes first (%s)", n, cfg.cpu, mb_peer_what(peer), cfg.server_cpu,
		mb_peer_path(peer), cb->reset ? "RST: no TIME_WAIT" : "FIN: its end keeps TIME_WAIT");
}

int main(int argc, char **argv)
{
	struct conn_bench cb = { .lfd = -1 };
	struct mb_peer peer = { .setup = listen_for_clients, .work = serve, .leave = close_listener,
				.state = &cb };
	json_object *extra;
	struct mb m;
	int step;
	uint64_t n;

	if (parse_options(argc, argv, &peer))
		return 2;
	n = (cfg.warmup + cfg.reps) * cfg.iters;
	cb.reset = !strcmp(cfg.close_how, "rst");
	peer.cpu = cfg.server_cpu;
	if (mb_peer_start(&peer, "tcp-connect"))
		return 1;
	cb.addr = *mb_peer_addr(&peer);
	if (mb_peer_begin(&m, &peer, "tcp-connect", cfg.cpu))
		return 1;
	step = time_connections(&m, &cb, &peer, n);
	claim_connections(&m, &peer, step, &cb, n);

	extra = json_object_new_object();
	json_object_object_add(extra, "connections", json_object_new_uint64(n));
	json_object_object_add(extra, "close", json_object_new_string(cfg.close_how));
	json_object_object_add(extra, "server_cpu", json_object_new_int(cfg.server_cpu));
	mb_peer_report(extra, &peer);
	mb_end(&m);
	mb_peer_stop(&peer);
	return mb_finish(&m, extra);
}
