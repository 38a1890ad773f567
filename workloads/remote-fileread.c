/*
 * remote-fileread: read a file from a small TCP file server on the other host, block by block, in
 * sequence or at random, as the classic remote file read measurement does. The server (the
 * sending side: it holds the file) answers each request with pread() + send(); the client (the
 * receiving side) checks the CRC-32 of the file it put together. Time per MiB and copies per byte.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/socket.h>
#include <zlib.h>
#include "filewl.h"
#include "peer.h"
#include "tcpio.h"

#define IO_TIMEOUT_S 30
#define NAME "remote-fileread"

struct request {
	uint64_t off;
	uint64_t len;
};

struct client_result {
	uint64_t requests;
	struct tcp_io io;		/* the requests sent, the answers (the file's bytes) received */
	uint32_t crc;			/* of the file, put together in order */
	int err;
	const char *err_what;		/* a string literal: the same address in both processes */
	struct lat_hist lat;		/* request to last byte of the answer */
};

static struct wl_opts opts;
static struct wl_file file = { .fd = -1 };
static uint64_t nblocks;
static uint64_t *order;			/* the blocks, in the order they are read */
static struct sockaddr_in addr;
/*
 * The client starts when the measured phase has: at the end of file of this pipe, which no byte
 * crosses (a byte would be a pipe copy in the ledger). Its write end closed on a failure says stop.
 */
static int go_pipe[2] = { -1, -1 };
static volatile sig_atomic_t start_cancelled;
static struct client_result cres;
static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	stop_requested = 1;
}

static uint64_t block_len(uint64_t b)
{
	uint64_t off = b * opts.size;

	return file.size - off < opts.size ? file.size - off : opts.size;
}

static int client_fail(const char *what, int err)
{
	cres.err = err;
	cres.err_what = what;
	return -err;
}

/* The receiving side: one request per block, the file put together from the answers' CRCs. */
static int client_main(void *arg)
{
	uint32_t *crcs = calloc(nblocks, sizeof(*crcs));
	char *buf = malloc(opts.size), c;
	int fd, err = 0;
	ssize_t r;

	if (opts.peer != WL_PEER_THREAD)
		close(go_pipe[1]);	/* a child's copy: the end of file comes when the server's goes */
	if (!crcs || !buf)
		return client_fail("malloc", ENOMEM);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    wl_socket_timeouts(fd, IO_TIMEOUT_S))
		return client_fail("connect", errno);
	while ((r = read(go_pipe[0], &c, 1)) < 0 && errno == EINTR)
		;
	if (r != 0 || start_cancelled)
		return client_fail("start", r ? EPROTO : ECANCELED);
	for (uint64_t i = 0; i < nblocks && !stop_requested; i++) {
		uint64_t b = order[i], t0 = wl_now_ns();
		struct request rq = { .off = b * opts.size, .len = block_len(b) };

		if ((err = tcp_send_all(fd, &rq, sizeof(rq), &cres.io)))
			return client_fail("request", -err);
		cres.requests++;
		if ((err = tcp_recv_all(fd, buf, rq.len, &cres.io)))
			return client_fail("answer", err == -ENODATA ? EPIPE : -err);
		lat_record(&cres.lat, wl_now_ns() - t0);
		crcs[b] = crc32(0L, (const Bytef *)buf, rq.len);
	}
	/* the server's end of the stream: it has answered everything */
	err = shutdown(fd, SHUT_WR) ? -errno : tcp_recv_all(fd, &c, 1, &cres.io);
	if (err != -ENODATA)
		return client_fail("close", err ? -err : EPROTO);
	cres.crc = crc32(0L, Z_NULL, 0);
	for (uint64_t b = 0; b < nblocks; b++)
		cres.crc = crc32_combine(cres.crc, crcs[b], block_len(b));
	close(fd);
	free(crcs);
	free(buf);
	return 0;
}

/* Seq: 0, 1, 2, ...; random: a permutation (fixed seed, every block once: the file's size). */
static int make_order(void)
{
	uint64_t x = 0x9E3779B97F4A7C15ULL;

	nblocks = (file.size + opts.size - 1) / opts.size;
	order = malloc(nblocks * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (uint64_t i = 0; i < nblocks; i++)
		order[i] = i;
	for (uint64_t i = nblocks - 1; opts.pattern == WL_PATTERN_RANDOM && i > 0; i--) {
		uint64_t j, t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	return 0;
}

struct server_stats {
	struct tcp_io io;		/* the requests received, the answers sent */
	uint64_t preads, requests_seen;
};

/* The sending side: answers requests until the client closes. */
static int serve(int fd, char *buf, struct server_stats *st)
{
	for (;;) {
		struct request rq;
		uint64_t done = 0;
		int err = tcp_recv_all(fd, &rq, sizeof(rq), &st->io);

		if (err == -ENODATA)	/* the client is done */
			return 0;
		if (err)
			return err;
		st->requests_seen++;
		if (rq.len > opts.size || rq.off > file.size || rq.len > file.size - rq.off)
			return -EPROTO;
		while (done < rq.len) {
			ssize_t n = pread(file.fd, buf + done, rq.len - done, rq.off + done);

			st->preads++;
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			done += n;
		}
		if ((err = tcp_send_all(fd, buf, rq.len, &st->io)))
			return err;
	}
}

static json_object *report(const struct server_stats *st, const struct peer_run *peer, uint64_t ns)
{
	json_object *r = json_object_new_object(), *calls = json_object_new_object();
	json_object *per = json_object_new_object();
	double secs = ns / 1e9, mib = (double)st->io.sent / (1 << 20);
	bool verified = cres.io.received == file.size && cres.crc == file.crc && !cres.err;

	json_object_object_add(r, WL_KEY_WORKLOAD, json_object_new_string(NAME));
	json_object_object_add(r, WL_KEY_SIZE, json_object_new_uint64(opts.size));
	json_object_object_add(r, WL_KEY_THREADS, json_object_new_int(1));
	json_object_object_add(r, WL_KEY_PATTERN, json_object_new_string(opts.pattern == WL_PATTERN_RANDOM ? "random" : "seq"));
	json_object_object_add(r, "blocks", json_object_new_uint64(nblocks));
	json_object_object_add(r, WL_KEY_MESSAGES, json_object_new_uint64(cres.requests));
	json_object_object_add(r, WL_KEY_BYTES, json_object_new_uint64(st->io.sent));
	json_object_object_add(r, WL_KEY_BYTES_RECEIVED, json_object_new_uint64(cres.io.received));
	json_object_object_add(r, WL_KEY_REQUEST_BYTES, json_object_new_uint64(cres.io.sent));
	json_object_object_add(r, WL_KEY_ELAPSED_S, json_object_new_double(secs));
	json_object_object_add(r, "throughput_gbit_s", json_object_new_double(secs > 0 ? st->io.sent * 8 / secs / 1e9 : 0));
	json_object_object_add(r, "ms_per_mib", mib > 0 ? json_object_new_double(secs * 1e3 / mib) : NULL);
	json_object_object_add(r, WL_KEY_LATENCY_NS, lat_json(&cres.lat));
	peer_report(r, &opts, peer);
	wl_file_report(r, &opts, &file);
	/* per block: one pread64 and one send for the answer, one send for the request */
	json_object_object_add(calls, "pread64", json_object_new_uint64(st->preads));
	json_object_object_add(calls, "sendto", json_object_new_uint64(st->io.send_calls + cres.io.send_calls));
	json_object_object_add(per, "pread64", json_object_new_int(1));
	json_object_object_add(per, "sendto", json_object_new_int(2));
	json_object_object_add(r, WL_KEY_CALLS, calls);
	json_object_object_add(r, WL_KEY_PER_CHUNK, per);
	json_object_object_add(r, WL_KEY_CHUNKS, json_object_new_uint64(nblocks));
	json_object_object_add(r, "crc32", json_object_new_uint64(file.crc));
	json_object_object_add(r, WL_KEY_VERIFIED, json_object_new_boolean(verified));
	if (!verified)
		json_object_object_add(r, "error", json_object_new_string("the client did not get the file"));
	return r;
}

/* The file, its blocks' order, the server's buffer and the "go" pipe, and the listener. */
static int setup_server(char **buf, int *lfd)
{
	char where[INET_ADDRSTRLEN] = "?";
	int err;

	if ((err = wl_file_create(&opts, "remote", true, &file)) || (err = wl_file_set_cache(&file, opts.cache)) ||
	    (err = make_order())) {
		fprintf(stderr, "%s: the file: %s\n", NAME, strerror(-err));
		return -1;
	}
	*buf = malloc(opts.size);
	if (!*buf || pipe2(go_pipe, O_CLOEXEC)) {
		fprintf(stderr, "%s: %s\n", NAME, strerror(*buf ? errno : ENOMEM));
		return -1;
	}
	peer_server_addr(&opts, &addr);
	inet_ntop(AF_INET, &addr.sin_addr, where, sizeof(where));
	*lfd = tcp_listen(&addr, 1, IO_TIMEOUT_S);
	if (*lfd < 0) {
		fprintf(stderr, "%s: cannot listen on %s: %s\n", NAME, where, strerror(-*lfd));
		return -1;
	}
	return 0;
}

/* The client started (thread or process) and its connection accepted into *@fd. */
static int start_client(struct peer_run *peer, int lfd, int *fd)
{
	int err;

	if ((err = peer_start(peer, opts.peer, client_main, NULL, &cres, sizeof(cres)))) {
		fprintf(stderr, "%s: cannot start the client: %s\n", NAME, strerror(-err));
		return -1;
	}
	if (opts.peer != WL_PEER_THREAD) {
		close(go_pipe[0]);	/* the child's end; a thread shares this one */
		go_pipe[0] = -1;
	}
	/* the accepted socket has the listener's timeouts */
	if ((err = peer_wait_readable(peer, lfd, IO_TIMEOUT_S * 1000)) ||
	    (*fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
		fprintf(stderr, "%s: the client did not connect: %s\n", NAME, strerror(err ? -err : errno));
		return -1;
	}
	return 0;
}

/*
 * The measured phase: the client let go, the file served on *@fd (closed after), the client's end
 * awaited. *@serve_err: how serving went; *@ns: the phase's length. -1 if the client never started.
 */
static int serve_phase(struct peer_run *peer, int *fd, char *buf, struct server_stats *st,
		       int *serve_err, uint64_t *ns)
{
	uint64_t t0, t1;
	int ret;

	WL_PHASE_BEGIN();
	t0 = wl_now_ns();
	close(go_pipe[1]);	/* go */
	go_pipe[1] = -1;
	*serve_err = serve(*fd, buf, st);
	close(*fd);	/* the client waits for this EOF */
	*fd = -1;
	/* the phase ends when the client has the file; its figures are read after */
	ret = peer_wait_done(peer, 2 * IO_TIMEOUT_S * 1000);
	t1 = wl_now_ns();
	WL_PHASE_END();
	if ((ret = ret ? ret : peer_join(peer, 2 * IO_TIMEOUT_S * 1000)) && !cres.err)
		client_fail("client", -ret);
	*ns = t1 - t0;
	return 0;
}

/* Both sides' errors, then the result written; the exit code. */
static int emit_result(const struct server_stats *st, const struct peer_run *peer, int serve_err,
		       uint64_t ns)
{
	json_object *result;
	int ret = 0;

	if (serve_err) {
		fprintf(stderr, "%s: server: %s\n", NAME, strerror(-serve_err));
		ret = 1;
	}
	if (cres.err) {
		fprintf(stderr, "%s: client: %s: %s\n", NAME, cres.err_what, strerror(cres.err));
		ret = 1;
	}
	result = report(st, peer, ns);
	if (!json_object_get_boolean(json_object_object_get(result, "verified")))
		ret = 1;
	if (wl_emit(WL_KIND_REMOTE_READ, result))
		ret = 1;
	json_object_put(result);
	return ret;
}

/* Ends the client if it is still there, and closes and frees what the run made. */
static void cleanup(struct peer_run *peer, int fd, int lfd, char *buf)
{
	if (peer->started) {
		if (peer->pid > 0)
			kill(peer->pid, SIGKILL);
		else if (go_pipe[1] >= 0) {
			start_cancelled = 1;	/* the thread's wait for "go" ends: in a stop */
			close(go_pipe[1]);
			go_pipe[1] = -1;
		}
		peer_join(peer, 1000);
	}
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	for (int i = 0; i < 2; i++)
		if (go_pipe[i] >= 0)
			close(go_pipe[i]);
	if (file.fd >= 0)
		close(file.fd);
	free(buf);
	free(order);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_stop };
	struct peer_run peer = { .mode = WL_PEER_THREAD, .pid = -1, .result_fd = -1 };
	struct server_stats st = {};
	int lfd = -1, fd = -1, serve_err, ret = 1;
	char *buf = NULL;
	uint64_t ns;

	if (wl_parse_opts(argc, argv, NAME, WL_OPT_FILE | WL_OPT_PEER | WL_OPT_PATTERN, &opts) ||
	    wl_check_netns(NAME, &opts))
		return 2;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!opts.size_set)
		opts.size = 64 << 10;
	if (!setup_server(&buf, &lfd) && !start_client(&peer, lfd, &fd) &&
	    !serve_phase(&peer, &fd, buf, &st, &serve_err, &ns))
		ret = emit_result(&st, &peer, serve_err, ns);
	cleanup(&peer, fd, lfd, buf);
	return ret;
}
