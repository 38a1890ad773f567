/*
 * tcp-rtt: the round trip of a small message echoed over TCP with TCP_NODELAY (lmbench lat_tcp;
 * the 2013 report's 32-byte echo, measured to a remote host). The server runs where --peer says:
 * a thread or a child process over loopback, or a child process in its own network namespace
 * across the veth pair, the remote case. The kernel counts both sides: each round trip must have
 * been one send() and one recv() per side, which is what "one round trip" means to the classic
 * method, and the copy sites must see exactly the bytes both sides counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "mb.h"
#include "mbpeer.h"

struct rtt {
	int client_fd;
	int server_fd;			/* the peer's: made where it runs */
	char *client_buf, *server_buf;
	size_t size;
	struct tcp_io io;		/* the client's calls */
	struct mb_samples s;		/* the client's samples, us per round trip */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "tcp-rtt: %s: %s\n", what, strerror(-err));
	exit(1);	/* the kernel closes the sockets; the peer ends with the process */
}

/* no Nagle delay: each message leaves at once, as a round trip assumes */
static int no_delay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ? -errno : 0;
}

/* The server's setup: listens, accepts the client, closes the listener. */
static int accept_client(struct mb_peer *p)
{
	struct rtt *r = p->state;
	int lfd = mb_peer_listen(p, 1), err = 0;

	if (lfd < 0)
		return lfd;
	r->server_fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (r->server_fd < 0)
		err = mb_peer_fail(p, "accept", errno == EAGAIN ? -ETIMEDOUT : -errno);
	close(lfd);
	if (!err && (err = no_delay(r->server_fd)))
		mb_peer_fail(p, "TCP_NODELAY", err);
	return err;
}

/* The server: receives each message whole, sends it back. */
static int echo(struct mb_peer *p, uint64_t round_trips)
{
	struct rtt *r = p->state;
	int err;

	for (uint64_t i = 0; i < round_trips; i++) {
		if ((err = tcp_recv_all(r->server_fd, r->server_buf, r->size, p->io)))
			return mb_peer_fail(p, "recv", err);
		if ((err = tcp_send_all(r->server_fd, r->server_buf, r->size, p->io)))
			return mb_peer_fail(p, "send", err);
	}
	return 0;
}

static void close_server(struct mb_peer *p)
{
	struct rtt *r = p->state;

	if (r->server_fd >= 0)
		close(r->server_fd);
	r->server_fd = -1;
}

/* Connects the client to the server at @addr, with TCP_NODELAY and timeouts. */
static void connect_client(struct rtt *r, const struct sockaddr_in *addr)
{
	int err;

	r->client_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->client_fd < 0 || (err = wl_socket_timeouts(r->client_fd, MB_NET_TIMEOUT_S)) ||
	    connect(r->client_fd, (const struct sockaddr *)addr, sizeof(*addr)))
		die("connect", -errno);
	if ((err = no_delay(r->client_fd)))
		die("TCP_NODELAY", err);
}

static struct tcp_rtt_cfg {
	uint64_t size, iters, reps, warmup;
	int cpu, server_cpu;
	const char *peer;
} cfg = {
	.size = 32, .iters = 500, .reps = 100, .warmup = 10, .peer = "thread",
};

static const struct mb_opt opts[] = {
	{ "size", MB_SIZE, &cfg.size, 1, 64 << 20 },
	{ "iters", MB_COUNT, &cfg.iters, 1, 10000000 },
	{ "reps", MB_COUNT, &cfg.reps, 1, 1000000 },
	{ "warmup", MB_COUNT, &cfg.warmup, 0, 1000000 },
	{ "cpu", MB_CPU, &cfg.cpu },
	{ "server-cpu", MB_CPU, &cfg.server_cpu },
	MB_PEER_OPT(&cfg.peer),
	{},
};

/* Both ends' buffers; exits if there is no memory. */
static void alloc_buffers(struct rtt *r)
{
	r->size = cfg.size;
	r->client_buf = malloc(cfg.size);
	r->server_buf = malloc(cfg.size);
	if (!r->client_buf || !r->server_buf)
		die("buffers", -ENOMEM);
	memset(r->client_buf, 'r', cfg.size);
}

/* One sample of the client: --iters round trips, timed, kept past the warm-up. */
static void round_trip_sample(void *state, uint64_t rep)
{
	struct rtt *r = state;
	uint64_t t0 = mb_now_ns();
	int err;

	for (uint64_t i = 0; i < cfg.iters; i++) {
		if ((err = tcp_send_all(r->client_fd, r->client_buf, cfg.size, &r->io)))
			die("client send", err);
		if ((err = tcp_recv_all(r->client_fd, r->client_buf, cfg.size, &r->io)))
			die("client recv", err);
	}
	if (rep >= cfg.warmup)
		mb_samples_add(&r->s, (double)(mb_now_ns() - t0) / cfg.iters / 1e3);
}

/* The one step: @n round trips, --iters per sample; its result. Returns the step. */
static int time_round_trips(struct mb *m, struct rtt *r, struct mb_peer *peer, uint64_t n,
			    uint64_t *recvs)
{
	uint64_t recvs_before = r->io.recv_calls;
	char name[64];
	int step;

	snprintf(name, sizeof(name), "TCP round trip, %" PRIu64 " bytes each way", cfg.size);
	step = mb_peer_step(m, peer, name, n, round_trip_sample, r, cfg.warmup + cfg.reps);
	mb_result(m, name, "us", &r->s, cfg.iters, cfg.warmup);
	mb_samples_free(&r->s);
	/* the server's last send() returned before the client's recv() did: its counts are in */
	*recvs = r->io.recv_calls - recvs_before + peer->io->recv_calls;
	return step;
}

/* What the kernel must have counted in @step: one send() and one recv() per message; a note. */
static void claim_round_trips(struct mb *m, const struct mb_peer *peer, int step, uint64_t n,
			      uint64_t recvs)
{
	char claim[200];

	snprintf(claim, sizeof(claim), "each round trip was one send() per side (%" PRIu64
		 " round trips, no short writes)", n);
	mb_assume_exact(m, step, claim, "syscall:sendto", 2 * n);
	snprintf(claim, sizeof(claim), "each %" PRIu64 "-byte message arrived whole in one recv() "
		 "(no short reads)", cfg.size);
	mb_assume_exact(m, step, claim, "syscall:recvfrom", 2 * n);
	snprintf(claim, sizeof(claim), "the kernel saw exactly the recv() calls both sides counted "
		 "(%" PRIu64 ")", recvs);
	mb_assume_exact(m, step, claim, "syscall:recvfrom", recvs);
	mb_note(m, "client on CPU %d, %s on CPU %d (-1: not pinned), %s; %" PRIu64 " recv() "
		"calls for %" PRIu64 " messages", cfg.cpu, mb_peer_what(peer), cfg.server_cpu,
		mb_peer_path(peer), recvs, 2 * n);
}

/* The report's extras: both sides' calls, and the bytes the copy sites must see. */
static json_object *report_extras(const struct rtt *r, const struct mb_peer *peer, uint64_t n)
{
	json_object *extra = json_object_new_object();

	json_object_object_add(extra, WL_KEY_SIZE, json_object_new_uint64(cfg.size));
	json_object_object_add(extra, "round_trips", json_object_new_uint64(n));
	json_object_object_add(extra, "server_cpu", json_object_new_int(cfg.server_cpu));
	json_object_object_add(extra, "send_calls",
			       json_object_new_uint64(r->io.send_calls + peer->io->send_calls));
	json_object_object_add(extra, "recv_calls",
			       json_object_new_uint64(r->io.recv_calls + peer->io->recv_calls));
	/* both directions: what the copy sites must have seen in the measured phase */
	json_object_object_add(extra, WL_KEY_BYTES, json_object_new_uint64(r->io.sent + peer->io->sent));
	json_object_object_add(extra, WL_KEY_BYTES_RECEIVED,
			       json_object_new_uint64(r->io.received + peer->io->received));
	mb_peer_report(extra, peer);
	return extra;
}

int main(int argc, char **argv)
{
	struct rtt r = { .client_fd = -1, .server_fd = -1 };
	struct mb_peer peer = { .setup = accept_client, .work = echo, .leave = close_server,
				.state = &r };
	json_object *extra;
	uint64_t n, recvs;
	struct mb m;
	int step, err;

	if (mb_parse(argc, argv, "tcp-rtt", "Times a message echoed over TCP (TCP_NODELAY) to a "
		     "server on this host or, with --peer netns, across a veth pair; the kernel "
		     "counts the sends and receives of both sides.", opts) ||
	    mb_peer_mode(&peer, "tcp-rtt", cfg.peer))
		return 2;
	alloc_buffers(&r);
	peer.cpu = cfg.server_cpu;
	if (mb_peer_start(&peer, "tcp-rtt"))
		return 1;
	connect_client(&r, mb_peer_addr(&peer));
	if (mb_peer_begin(&m, &peer, "tcp-rtt", cfg.cpu))
		return 1;
	n = (cfg.warmup + cfg.reps) * cfg.iters;
	step = time_round_trips(&m, &r, &peer, n, &recvs);
	claim_round_trips(&m, &peer, step, n, recvs);
	extra = report_extras(&r, &peer, n);
	mb_end(&m);
	mb_peer_stop(&peer);
	err = mb_finish(&m, extra);
	close(r.client_fd);
	free(r.client_buf);
	free(r.server_buf);
	return err;
}
