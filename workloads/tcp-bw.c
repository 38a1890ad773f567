/*
 * tcp-bw: bulk transfer bandwidth over TCP (lmbench bw_tcp: a server writes 64K at a time, the
 * client reads and times a fixed amount; the 2013 report sent 32 MB, to a remote host too). The
 * sending server runs where --peer says: a thread or a child process over loopback, or a child
 * process in its own network namespace across the veth pair. The kernel counts both sides: each
 * write must have been accepted whole, the kernel must have seen exactly the reads the client
 * counted, and the copy sites exactly the bytes moved.
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

struct bw {
	int recv_fd;
	int send_fd;			/* the peer's: made where it runs */
	char *recv_buf, *send_buf;
	size_t size;
	uint64_t sockbuf;		/* SO_SNDBUF/SO_RCVBUF, 0: autotuned */
	struct tcp_io io;		/* the client's (receiver's) calls */
	struct mb_samples s;		/* the client's samples, MB/s */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "tcp-bw: %s: %s\n", what, strerror(-err));
	exit(1);	/* the kernel closes the sockets; the peer ends with the process */
}

static int set_sockbuf(int fd, int opt, uint64_t bytes)
{
	int v = (int)bytes;

	return setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v)) ? -errno : 0;
}

/*
 * The server's setup: listens, accepts the client, closes the listener. Its send buffer may be
 * sized after the handshake: only the receive buffer's size goes into the window scale.
 */
static int accept_client(struct mb_peer *p)
{
	struct bw *b = p->state;
	int lfd = mb_peer_listen(p, 1), err = 0;

	if (lfd < 0)
		return lfd;
	b->send_fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (b->send_fd < 0)
		err = mb_peer_fail(p, "accept", errno == EAGAIN ? -ETIMEDOUT : -errno);
	close(lfd);
	if (!err && b->sockbuf && (err = set_sockbuf(b->send_fd, SO_SNDBUF, b->sockbuf)))
		mb_peer_fail(p, "SO_SNDBUF", err);
	return err;
}

/* The server: sends @bytes in --size writes. */
static int source(struct mb_peer *p, uint64_t bytes)
{
	struct bw *b = p->state;
	int err;

	for (uint64_t left = bytes; left; left -= b->size) {
		if ((err = tcp_send_all(b->send_fd, b->send_buf, b->size, p->io)))
			return mb_peer_fail(p, "send", err);
	}
	return 0;
}

static void close_server(struct mb_peer *p)
{
	struct bw *b = p->state;

	if (b->send_fd >= 0)
		close(b->send_fd);
	b->send_fd = -1;
}

/* Receives exactly @bytes in reads of at most --size, so no read takes the next sample's bytes. */
static void sink(struct bw *b, uint64_t bytes)
{
	for (uint64_t left = bytes; left; ) {
		size_t want = left < b->size ? left : b->size;
		ssize_t n = recv(b->recv_fd, b->recv_buf, want, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("client recv", n ? (errno == EAGAIN ? -ETIMEDOUT : -errno) : -EPIPE);
		b->io.recv_calls++;
		b->io.received += n;
		left -= n;
	}
}

/* Connects the client to the server at @addr. */
static void connect_client(struct bw *b, const struct sockaddr_in *addr)
{
	int err;

	b->recv_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (b->recv_fd < 0)
		die("socket", -errno);
	/* set before connect(): the window scale is agreed in the handshake */
	if (b->sockbuf && (err = set_sockbuf(b->recv_fd, SO_RCVBUF, b->sockbuf)))
		die("socket buffer size", err);
	if ((err = wl_socket_timeouts(b->recv_fd, MB_NET_TIMEOUT_S)))
		die("timeouts", err);
	if (connect(b->recv_fd, (const struct sockaddr *)addr, sizeof(*addr)))
		die("connect", -errno);
}

static struct tcp_bw_cfg {
	uint64_t size, bytes, reps, warmup, sockbuf;
	int cpu, server_cpu;
	const char *peer;
} cfg = {
	.size = 64 << 10, .bytes = 32 << 20, .reps = 50, .warmup = 5, .peer = "thread",
};

static const struct mb_opt opts[] = {
	{ "size", MB_SIZE, &cfg.size, 1, 64 << 20 },
	{ "bytes", MB_SIZE, &cfg.bytes, 1, 1ULL << 34 },
	{ "reps", MB_COUNT, &cfg.reps, 1, 100000 },
	{ "warmup", MB_COUNT, &cfg.warmup, 0, 100000 },
	{ "sockbuf", MB_SIZE, &cfg.sockbuf, 0, 1 << 30 },
	{ "cpu", MB_CPU, &cfg.cpu },
	{ "server-cpu", MB_CPU, &cfg.server_cpu },
	MB_PEER_OPT(&cfg.peer),
	{},
};

/* Both ends' buffers, faulted in now and not in the first sample; exits if there is no memory. */
static void alloc_buffers(struct bw *b)
{
	b->size = cfg.size;
	b->recv_buf = malloc(cfg.size);
	b->send_buf = malloc(cfg.size);
	if (!b->recv_buf || !b->send_buf)
		die("buffers", -ENOMEM);
	memset(b->send_buf, 'b', cfg.size);
	memset(b->recv_buf, 0, cfg.size);
}

/* One sample of the client: --bytes received and timed, kept past the warm-up. */
static void receive_sample(void *state, uint64_t rep)
{
	struct bw *b = state;
	uint64_t t0 = mb_now_ns(), t1;

	sink(b, cfg.bytes);
	t1 = mb_now_ns();
	if (rep >= cfg.warmup)	/* MB = 10^6 bytes, as lmbench counts them */
		mb_samples_add(&b->s, (double)cfg.bytes / 1e6 / ((double)(t1 - t0) / 1e9));
}

/* The one step: the server sends @quota bytes, the client times --bytes at a time; its result. */
static int time_transfer(struct mb *m, struct bw *b, struct mb_peer *peer, uint64_t quota,
			 uint64_t *recvs)
{
	uint64_t recvs_before = b->io.recv_calls;
	char name[64];
	int step;

	snprintf(name, sizeof(name), "TCP bandwidth, %" PRIu64 "-byte writes", cfg.size);
	step = mb_peer_step(m, peer, name, quota, receive_sample, b, cfg.warmup + cfg.reps);
	mb_result(m, name, "MB/s", &b->s, 1, cfg.warmup);
	mb_samples_free(&b->s);
	*recvs = b->io.recv_calls - recvs_before;
	return step;
}

/* What the kernel must have counted in @step: whole writes, and the client's reads; a note. */
static void claim_transfer(struct mb *m, const struct mb_peer *peer, int step, uint64_t quota,
			   uint64_t recvs)
{
	uint64_t writes = quota / cfg.size;
	char claim[200];

	snprintf(claim, sizeof(claim), "each %" PRIu64 "-byte write was accepted whole (%" PRIu64
		 " writes, no short writes)", cfg.size, writes);
	mb_assume_exact(m, step, claim, "syscall:sendto", writes);
	snprintf(claim, sizeof(claim), "the kernel saw exactly the reads the client counted (%"
		 PRIu64 ")", recvs);
	mb_assume_exact(m, step, claim, "syscall:recvfrom", recvs);
	mb_note(m, "%" PRIu64 " bytes per sample; %" PRIu64 " reads for %" PRIu64 " writes (%.0f "
		"bytes per read); client on CPU %d, %s on CPU %d (-1: not pinned), %s; socket "
		"buffers %s", cfg.bytes, recvs, writes, recvs ? (double)quota / recvs : 0, cfg.cpu,
		mb_peer_what(peer), cfg.server_cpu, mb_peer_path(peer),
		cfg.sockbuf ? "set" : "autotuned");
}

/* The report's extras: the options, both sides' calls, and the bytes the copy sites must see. */
static json_object *report_extras(const struct bw *b, const struct mb_peer *peer)
{
	json_object *extra = json_object_new_object();

	json_object_object_add(extra, WL_KEY_SIZE, json_object_new_uint64(cfg.size));
	json_object_object_add(extra, "bytes_per_sample", json_object_new_uint64(cfg.bytes));
	json_object_object_add(extra, "sockbuf", json_object_new_uint64(cfg.sockbuf));
	json_object_object_add(extra, "server_cpu", json_object_new_int(cfg.server_cpu));
	json_object_object_add(extra, "send_calls", json_object_new_uint64(peer->io->send_calls));
	json_object_object_add(extra, "recv_calls", json_object_new_uint64(b->io.recv_calls));
	/* what the copy sites must have seen in the measured phase */
	json_object_object_add(extra, WL_KEY_BYTES, json_object_new_uint64(peer->io->sent));
	json_object_object_add(extra, WL_KEY_BYTES_RECEIVED, json_object_new_uint64(b->io.received));
	mb_peer_report(extra, peer);
	return extra;
}

int main(int argc, char **argv)
{
	struct bw b = { .recv_fd = -1, .send_fd = -1 };
	struct mb_peer peer = { .setup = accept_client, .work = source, .leave = close_server,
				.state = &b };
	uint64_t recvs, quota;
	json_object *extra;
	struct mb m;
	int step, err;

	if (mb_parse(argc, argv, "tcp-bw", "Times a bulk transfer over TCP from a server on this "
		     "host or, with --peer netns, across a veth pair; the kernel counts the writes, "
		     "the reads and the bytes copied.", opts) ||
	    mb_peer_mode(&peer, "tcp-bw", cfg.peer))
		return 2;
	if (cfg.bytes % cfg.size)	/* as bw_tcp does: whole writes only */
		cfg.bytes += cfg.size - cfg.bytes % cfg.size;
	alloc_buffers(&b);
	b.sockbuf = cfg.sockbuf;
	peer.cpu = cfg.server_cpu;
	if (mb_peer_start(&peer, "tcp-bw"))
		return 1;
	connect_client(&b, mb_peer_addr(&peer));
	if (mb_peer_begin(&m, &peer, "tcp-bw", cfg.cpu))
		return 1;
	quota = (cfg.warmup + cfg.reps) * cfg.bytes;
	step = time_transfer(&m, &b, &peer, quota, &recvs);
	claim_transfer(&m, &peer, step, quota, recvs);
	extra = report_extras(&b, &peer);
	mb_end(&m);
	mb_peer_stop(&peer);
	err = mb_finish(&m, extra);
	close(b.recv_fd);
	free(b.recv_buf);
	free(b.send_buf);
	return err;
}
