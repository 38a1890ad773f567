/*
 * tcp-bw: bulk transfer bandwidth over loopback TCP (lmbench bw_tcp: a server writes 64K at a
 * time, the client reads and times a fixed amount; the 2013 report sent 32 MB). The sending server
 * is a thread of the workload, so the kernel counts both sides: each write must have been accepted
 * whole, the kernel must have seen exactly the reads the client counted, and the copy sites exactly
 * the bytes moved.
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
	int recv_fd, send_fd;
	char *recv_buf, *send_buf;
	size_t size;
	struct tcp_io io;		/* the client's (receiver's) calls */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "tcp-bw: %s: %s\n", what, strerror(-err));
	exit(1);	/* the kernel closes the sockets; the server thread ends with the process */
}

/* The server: sends @bytes in --size writes. */
static int source(struct mb_peer *p, uint64_t bytes)
{
	struct bw *b = p->state;
	int err;

	for (uint64_t left = bytes; left; left -= b->size) {
		if ((err = tcp_send_all(b->send_fd, b->send_buf, b->size, &p->io))) {
			p->err_what = "server send";
			return err;
		}
	}
	return 0;
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

static int set_sockbuf(int fd, int opt, uint64_t bytes)
{
	int v = (int)bytes;

	return setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v)) ? -errno : 0;
}

static void connect_pair(struct bw *b, uint64_t sockbuf)
{
	struct sockaddr_in addr;
	int lfd = mb_peer_listen(&addr, 1), err;

	if (lfd < 0)
		die("listen on 127.0.0.1", lfd);
	b->recv_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (b->recv_fd < 0)
		die("socket", -errno);
	/* set before connect(): the window scale is agreed in the handshake */
	if (sockbuf && ((err = set_sockbuf(b->recv_fd, SO_RCVBUF, sockbuf)) ||
			(err = set_sockbuf(lfd, SO_SNDBUF, sockbuf))))
		die("socket buffer size", err);
	if ((err = wl_socket_timeouts(b->recv_fd, MB_NET_TIMEOUT_S)))
		die("timeouts", err);
	if (connect(b->recv_fd, (struct sockaddr *)&addr, sizeof(addr)))
		die("connect", -errno);
	b->send_fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (b->send_fd < 0)
		die("accept", -errno);
	close(lfd);
}

int main(int argc, char **argv)
{
	uint64_t size = 64 << 10, bytes = 32 << 20, reps = 50, warmup = 5, sockbuf = 0;
	uint64_t writes, recvs_before, recvs, quota;
	int cpu = 0, server_cpu = 0, step, err;
	const struct mb_opt opts[] = {
		{ "size", MB_SIZE, &size, "bytes per write and per read (default 64K)", 1,
		  64 << 20 },
		{ "bytes", MB_SIZE, &bytes, "bytes per sample, rounded up to a multiple of --size "
		  "(default 32M)", 1, 1ULL << 34 },
		{ "reps", MB_COUNT, &reps, "samples kept (default 50)", 1, 100000 },
		{ "warmup", MB_COUNT, &warmup, "samples run first and dropped (default 5)", 0,
		  100000 },
		{ "sockbuf", MB_SIZE, &sockbuf,
		  "SO_SNDBUF/SO_RCVBUF to set, 0 = the kernel's autotuning (default 0)", 0,
		  1 << 30 },
		{ "cpu", MB_CPU, &cpu,
		  "pin the receiving client to this CPU, -1 for none (default 0)" },
		{ "server-cpu", MB_CPU, &server_cpu,
		  "pin the sending server thread to this CPU, -1 for none (default 0)" },
		{},
	};
	struct bw b = {};
	struct mb_peer peer = { .work = source, .state = &b };
	struct mb_samples s = {};
	struct mb m;
	char claim[200], name[64];
	json_object *extra;

	if (mb_parse(argc, argv, "tcp-bw", "Times a bulk transfer over loopback TCP; the kernel "
		     "counts the writes, the reads and the bytes copied.", opts))
		return 2;
	if (bytes % size)	/* as bw_tcp does: whole writes only */
		bytes += size - bytes % size;
	b.size = size;
	b.recv_buf = malloc(size);
	b.send_buf = malloc(size);
	if (!b.recv_buf || !b.send_buf)
		die("buffers", -ENOMEM);
	memset(b.send_buf, 'b', size);
	memset(b.recv_buf, 0, size);	/* faulted in now, not in the first sample */
	connect_pair(&b, sockbuf);
	peer.cpu = server_cpu;
	if (mb_peer_start(&peer, "tcp-bw"))
		return 1;
	if (mb_pin("tcp-bw", cpu))
		return 1;	/* the server thread ends with the process */

	mb_init(&m, "tcp-bw", cpu);
	mb_begin(&m);
	quota = (warmup + reps) * bytes;
	writes = quota / size;
	snprintf(name, sizeof(name), "TCP bandwidth, %" PRIu64 "-byte writes", size);
	step = mb_step_begin(&m, name);
	recvs_before = b.io.recv_calls;
	/* after the marker: the server's first send() is in the step */
	mb_peer_go(&peer, quota);
	for (uint64_t rep = 0; rep < warmup + reps; rep++) {
		uint64_t t0 = mb_now_ns(), t1;

		sink(&b, bytes);
		t1 = mb_now_ns();
		if (rep >= warmup)	/* MB = 10^6 bytes, as lmbench counts them */
			mb_samples_add(&s, (double)bytes / 1e6 / ((double)(t1 - t0) / 1e9));
	}
	/* the last bytes arrived before the server's last send() returned: wait for its counts */
	if ((err = mb_peer_wait(&peer)))
		die(peer.err_what ? peer.err_what : "waiting for the server", err);
	mb_step_end(&m);
	mb_result(&m, name, "MB/s", &s, 1, warmup);
	recvs = b.io.recv_calls - recvs_before;

	snprintf(claim, sizeof(claim), "each %" PRIu64 "-byte write was accepted whole (%" PRIu64
		 " writes, no short writes)", size, writes);
	mb_assume_exact(&m, step, claim, "syscall:sendto", writes);
	snprintf(claim, sizeof(claim), "the kernel saw exactly the reads the client counted (%"
		 PRIu64 ")", recvs);
	mb_assume_exact(&m, step, claim, "syscall:recvfrom", recvs);
	mb_note(&m, "%" PRIu64 " bytes per sample; %" PRIu64 " reads for %" PRIu64 " writes (%.0f "
		"bytes per read); client on CPU %d, server thread on CPU %d (-1: not pinned); "
		"socket buffers %s",
		bytes, recvs, writes, recvs ? (double)quota / recvs : 0, cpu, server_cpu,
		sockbuf ? "set" : "autotuned");
	mb_peer_stop(&peer);

	extra = json_object_new_object();
	json_object_object_add(extra, WL_KEY_SIZE, json_object_new_uint64(size));
	json_object_object_add(extra, "bytes_per_sample", json_object_new_uint64(bytes));
	json_object_object_add(extra, "sockbuf", json_object_new_uint64(sockbuf));
	json_object_object_add(extra, "server_cpu", json_object_new_int(server_cpu));
	json_object_object_add(extra, "send_calls", json_object_new_uint64(peer.io.send_calls));
	json_object_object_add(extra, "recv_calls", json_object_new_uint64(b.io.recv_calls));
	/* what the copy sites must have seen in the measured phase */
	json_object_object_add(extra, WL_KEY_BYTES, json_object_new_uint64(peer.io.sent));
	json_object_object_add(extra, WL_KEY_BYTES_RECEIVED, json_object_new_uint64(b.io.received));
	err = mb_finish(&m, extra);
	close(b.recv_fd);
	close(b.send_fd);
	free(b.recv_buf);
	free(b.send_buf);
	mb_samples_free(&s);
	return err;
}
