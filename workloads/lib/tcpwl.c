/*
 * TCP harness for the tcp-* and serve-* workloads: a server sends messages to N client
 * connections, one sender and one receiver thread per connection. The receivers are threads of
 * this process, or of a child process (--peer process), in the receiver's network namespace with
 * --netns. Setup happens before the USDT phase marker, so the ledger covers the transfer alone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "remote.h"
#include "tcpio.h"
#include "tcpwl.h"

#define RECV_BUF (256 << 10)
#define IO_TIMEOUT_S 30		/* no socket call may block longer than this */

#define PEER_TIMEOUT_MS (2 * IO_TIMEOUT_S * 1000)
#define REMOTE_WAIT_S 120	/* --listen waits this long for the sending end, --connect for the listener */
#define REMOTE_MAX_CONNS 256	/* as --threads */

static pthread_barrier_t start_line;
static uint64_t deadline_ns;
static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	stop_requested = 1;
}

static int fail(struct tcp_conn *c, const char *what, int err)
{
	if (!c->err) {
		c->err = err;
		c->err_what = what;
	}
	return -err;
}

int send_all_iov(int fd, struct iovec *iov, int iovcnt, int flags, uint64_t *sent, uint64_t *calls)
{
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = iovcnt };

	while (mh.msg_iovlen) {
		ssize_t n = sendmsg(fd, &mh, flags);

		if (n < 0) {
			if (errno == EINTR && !stop_requested)
				continue;
			return -errno;
		}
		*sent += n;
		if (calls && n > 0)
			(*calls)++;
		while (n > 0 && mh.msg_iovlen) {
			if ((size_t)n >= mh.msg_iov->iov_len) {
				n -= mh.msg_iov->iov_len;
				mh.msg_iov++;
				mh.msg_iovlen--;
			} else {
				mh.msg_iov->iov_base = (char *)mh.msg_iov->iov_base + n;
				mh.msg_iov->iov_len -= n;
				n = 0;
			}
		}
	}
	return 0;
}

static int message_alloc(struct message *m, uint64_t size)
{
	size_t each = size / MSG_FIELDS;

	m->size = size;
	for (int i = 0; i < MSG_FIELDS; i++) {
		m->len[i] = i == MSG_FIELDS - 1 ? size - each * (MSG_FIELDS - 1) : each;
		/* at least one byte so every field is its own allocation */
		m->field[i] = malloc(m->len[i] ? m->len[i] : 1);
		if (!m->field[i])
			return -ENOMEM;
		memset(m->field[i], 'a' + i, m->len[i]);
	}
	return 0;
}

static void message_free(struct message *m)
{
	for (int i = 0; i < MSG_FIELDS; i++)
		free(m->field[i]);
}

static bool sender_done(const struct tcp_conn *c)
{
	const struct wl_opts *o = c->opts;

	if (stop_requested)
		return true;
	if (o->messages && c->messages >= o->messages)
		return true;
	if (o->bytes && c->sent >= o->bytes)
		return true;
	return deadline_ns && wl_now_ns() >= deadline_ns;
}

static const struct tcp_workload *workload;

static void *sender_main(void *arg)
{
	struct tcp_conn *c = arg;
	int err;

	pthread_barrier_wait(&start_line);
	while (!sender_done(c)) {
		uint64_t t0 = wl_now_ns();

		err = workload->send_one(c);
		if (err) {
			fail(c, "send", -err);
			break;
		}
		lat_record(&c->lat, wl_now_ns() - t0);
		c->messages++;
	}
	if (workload->finish && (err = workload->finish(c)))
		fail(c, "completion", -err);
	if (shutdown(c->send_fd, SHUT_WR))
		fail(c, "shutdown", errno);
	return NULL;
}

static void *receiver_main(void *arg)
{
	struct tcp_conn *c = arg;
	char *buf = malloc(RECV_BUF);

	if (!buf) {
		fail(c, "malloc", ENOMEM);
		return NULL;
	}
	pthread_barrier_wait(&start_line);
	for (;;) {
		ssize_t n = recv(c->recv_fd, buf, RECV_BUF, 0);

		if (n > 0) {
			c->received += n;
			if (workload->on_recv)
				workload->on_recv(c, buf, n);
		} else if (n == 0) {
			break;
		} else if (errno != EINTR) {
			fail(c, "recv", errno);
			break;
		}
	}
	free(buf);
	return NULL;
}

/* Connects one client to the listener; the accepted side sends, the client side receives. */
static int connect_pair(int lfd, const struct sockaddr_in *addr, struct tcp_conn *c)
{
	c->recv_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->recv_fd < 0)
		return -errno;
	if (connect(c->recv_fd, (const struct sockaddr *)addr, sizeof(*addr)))
		return -errno;
	c->send_fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c->send_fd < 0)
		return -errno;
	/* the accepted end has the listener's timeouts */
	return wl_socket_timeouts(c->recv_fd, IO_TIMEOUT_S);
}

/* What a receiver in another process hands back, per connection. */
struct rx_result {
	uint64_t received;
	uint64_t rx_digest;
	int err;
	const char *err_what;	/* a string literal: the same address in both processes */
};

struct rx_side {
	struct tcp_conn *conns;
	int n;
	struct sockaddr_in addr;
	struct rx_result *out;
};

/* The receiving side as its own process: connect every client, then receive until each EOF. */
static int rx_side_main(void *arg)
{
	struct rx_side *rx = arg;
	pthread_t *tids = calloc(rx->n, sizeof(*tids));
	int started = 0, err = 0;

	if (!tids)
		return -ENOMEM;
	for (int i = 0; i < rx->n; i++) {
		struct tcp_conn *c = &rx->conns[i];

		c->recv_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->recv_fd < 0 || connect(c->recv_fd, (struct sockaddr *)&rx->addr, sizeof(rx->addr)) ||
		    wl_socket_timeouts(c->recv_fd, IO_TIMEOUT_S)) {
			err = fail(c, "connect", errno);
			break;
		}
	}
	pthread_barrier_init(&start_line, NULL, rx->n + 1);
	for (int i = 0; !err && i < rx->n; i++) {
		if (pthread_create(&tids[i], NULL, receiver_main, &rx->conns[i])) {
			/* the barrier cannot be met */
			fprintf(stderr, "receiver: cannot start threads\n");
			_exit(1);
		}
		started++;
	}
	if (!err)
		pthread_barrier_wait(&start_line);
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	for (int i = 0; i < rx->n; i++) {
		struct tcp_conn *c = &rx->conns[i];

		rx->out[i] = (struct rx_result){ .received = c->received, .rx_digest = c->rx_digest,
						 .err = c->err, .err_what = c->err_what };
	}
	free(tids);
	return err;
}

/* Accepts the receiver process's connections in the order it made them, watching it meanwhile. */
static int accept_peer(int lfd, struct peer_run *peer, struct tcp_conn *c)
{
	int err = peer_wait_readable(peer, lfd, IO_TIMEOUT_S * 1000);

	if (err)
		return err == -ECHILD ? -ECONNREFUSED : err;
	/* it has the listener's timeouts */
	c->send_fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	return c->send_fd < 0 ? -errno : 0;
}

/* The sending side's measured phase, as it went (wl_join_watching()); watched: it was read. */
static struct wl_progress progress;
static bool watched;

static json_object *result_json(const struct tcp_workload *w, const struct wl_opts *o,
				 struct tcp_conn *conns, uint64_t elapsed_ns, const struct peer_run *peer,
				 json_object *remote)
{
	json_object *r = json_object_new_object();
	struct lat_hist *lat = calloc(1, sizeof(*lat));
	/* the receiving end alone times no message */
	struct wl_stream_sum sum = { .lat = o->remote == WL_REMOTE_LISTEN ? NULL : lat,
				     .progress = watched ? &progress : NULL };

	for (int i = 0; i < o->threads; i++) {
		sum.sent += conns[i].sent;
		sum.received += conns[i].received;
		sum.messages += conns[i].messages;
		if (lat)
			lat_merge(lat, &conns[i].lat);
	}
	wl_stream_figures(r, w->name, o, &sum, elapsed_ns);
	free(lat);
	if (remote) {
		/* one end: the other's process is on another host, or in another zctrace's run */
		json_object_object_add(r, WL_KEY_PEER, json_object_new_string("remote"));
		json_object_object_add(r, WL_KEY_PATH, json_object_new_string(json_object_get_string(
			json_object_object_get(remote, "dev_kind")) ?: "remote"));
		json_object_object_add(r, o->remote == WL_REMOTE_LISTEN ? WL_KEY_RECEIVER_PID : WL_KEY_SENDER_PID,
				       json_object_new_int(getpid()));
		json_object_object_add(r, "remote", remote);
	} else {
		peer_report(r, o, peer);
	}
	if (w->report)
		w->report(r, conns, o->threads);
	return r;
}

/* Connects every connection, to a local receiver thread or to the peer's, and sets it up. */
static int connect_all(const struct tcp_workload *w, struct tcp_conn *conns, int n, int lfd,
		       struct sockaddr_in *addr, struct peer_run *peer)
{
	int err;

	for (int i = 0; i < n; i++) {
		struct tcp_conn *c = &conns[i];

		if ((err = peer->started ? accept_peer(lfd, peer, c) : connect_pair(lfd, addr, c))) {
			fprintf(stderr, "%s: connection %d: %s\n", w->name, i, strerror(-err));
			return err;
		}
		if ((err = message_alloc(&c->msg, c->opts->size)) || (w->setup && (err = w->setup(c)))) {
			fprintf(stderr, "%s: setup of connection %d: %s\n", w->name, i, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* A sender thread per connection, and a receiver thread unless the peer receives; how many. */
static int start_threads(const struct tcp_workload *w, struct tcp_conn *conns, int n, bool remote_rx,
			 pthread_t *tids)
{
	int nthreads = 0;

	pthread_barrier_init(&start_line, NULL, (remote_rx ? 1 : 2) * n + 1);
	for (int i = 0; i < n; i++) {
		if (!remote_rx && pthread_create(&tids[nthreads++], NULL, receiver_main, &conns[i]))
			break;
		if (pthread_create(&tids[nthreads], NULL, sender_main, &conns[i]))
			break;
		nthreads++;
	}
	if (nthreads != (remote_rx ? 1 : 2) * n) {
		/* the barrier cannot be met: leave without waiting for the started threads */
		fprintf(stderr, "%s: cannot start threads\n", w->name);
		_exit(1);
	}
	return nthreads;
}

/* The measured phase: from the start line until every byte is received. Its length in ns. */
static uint64_t measured_phase(const struct wl_opts *o, struct tcp_conn *conns, pthread_t *tids, int nthreads,
			       struct peer_run *peer, int *err)
{
	uint64_t t0, t1;

	WL_PHASE_BEGIN();
	t0 = wl_now_ns();
	if (o->duration)
		deadline_ns = t0 + (uint64_t)(o->duration * 1e9);
	pthread_barrier_wait(&start_line);
	wl_join_watching(tids, nthreads, &conns[0].sent, sizeof(conns[0]), o->threads, t0, &progress);
	watched = true;
	/* the phase ends when the receiver has everything; its figures are read after */
	if (peer->started)
		*err = peer_wait_done(peer, PEER_TIMEOUT_MS);
	/* ... and at the receiving end alone (--connect), when it has answered each end of stream */
	for (int i = 0; o->remote == WL_REMOTE_CONNECT && i < o->threads; i++)
		if (!conns[i].err && (*err = remote_wait_answer(conns[i].send_fd, PEER_TIMEOUT_MS)))
			fail(&conns[i], "the receiving end's answer", -*err);
	t1 = wl_now_ns();
	WL_PHASE_END();
	return t1 - t0;
}

/* The receiver process's figures, into the connections. */
static void collect_peer(struct peer_run *peer, struct tcp_conn *conns, int n, const struct rx_result *rx_out,
			 int err)
{
	int jerr = peer_join(peer, PEER_TIMEOUT_MS);

	for (int i = 0; i < n; i++) {
		conns[i].received = rx_out[i].received;
		conns[i].rx_digest = rx_out[i].rx_digest;
		if (rx_out[i].err)
			fail(&conns[i], rx_out[i].err_what, rx_out[i].err);
	}
	if (err || jerr)
		fail(&conns[0], "receiver process", err ? -err : -jerr);
}

/* Says what failed, and writes the report. 0 when every connection moved its bytes intact. */
static int write_report(const struct tcp_workload *w, const struct wl_opts *o, struct tcp_conn *conns,
			uint64_t ns, struct peer_run *peer, json_object *remote)
{
	json_object *result, *verified;
	int ret = 0;

	for (int i = 0; i < o->threads; i++)
		ret |= wl_unit_failed(w->name, "connection", i, conns[i].err_what, conns[i].err);
	result = result_json(w, o, conns, ns, peer, remote);
	return wl_stream_report(result, w->kind ? w->kind : WL_KIND_STREAM, ret,
				!json_object_object_get_ex(result, WL_KEY_VERIFIED, &verified) ||
				json_object_get_boolean(verified), "a connection failed");
}

static void close_all(const struct tcp_workload *w, struct tcp_conn *conns, int n)
{
	for (int i = 0; conns && i < n; i++) {
		if (w->teardown)
			w->teardown(&conns[i]);
		message_free(&conns[i].msg);
		if (conns[i].send_fd >= 0)
			close(conns[i].send_fd);
		if (conns[i].recv_fd >= 0)
			close(conns[i].recv_fd);
	}
}

/*
 * --connect: the sending end. Each connection opens with the run's hello; the measured phase ends
 * when the receiving end has answered every connection's end of stream, so that what the kernel
 * does with the bytes on delivery falls inside it. The answers (the bytes received) are read after.
 */
static int remote_sender(const struct tcp_workload *w, struct wl_opts *o, struct tcp_conn *conns, pthread_t *tids)
{
	uint64_t run = remote_run_id(), peer_received = 0, ns;
	struct remote_link link;
	json_object *remote;
	int64_t retrans = 0;
	char where[INET_ADDRSTRLEN];
	int nthreads, err;
	bool short_count = false;

	inet_ntop(AF_INET, &o->remote_addr.sin_addr, where, sizeof(where));
	for (int i = 0; i < o->threads; i++) {
		struct tcp_conn *c = &conns[i];

		c->send_fd = remote_connect(o, w->name, run, i, o->threads, REMOTE_WAIT_S, IO_TIMEOUT_S);
		if (c->send_fd < 0) {
			fprintf(stderr, "%s: cannot connect to %s:%d (the receiving end, --listen): %s\n", w->name,
				where, ntohs(o->remote_addr.sin_port), strerror(-c->send_fd));
			c->send_fd = -1;
			return 1;
		}
		if ((err = message_alloc(&c->msg, o->size)) || (w->setup && (err = w->setup(c)))) {
			fprintf(stderr, "%s: setup of connection %d: %s\n", w->name, i, strerror(-err));
			return 1;
		}
	}
	remote_link_of(conns[0].send_fd, &link);
	nthreads = start_threads(w, conns, o->threads, true, tids);
	ns = measured_phase(o, conns, tids, nthreads, &(struct peer_run){ .pidfd = -1, .pid = -1 }, &err);
	for (int i = 0; i < o->threads; i++) {
		struct tcp_conn *c = &conns[i];
		uint64_t got = 0;

		if (c->err)
			continue;
		if ((err = remote_read_answer(c->send_fd, &got))) {
			fail(c, "the receiving end's answer", -err);
			continue;
		}
		peer_received += got;
		if (got != c->sent) {
			fprintf(stderr, "%s: connection %d: the receiving end got %llu bytes of %llu sent\n", w->name,
				i, (unsigned long long)got, (unsigned long long)c->sent);
			short_count = true;
		}
	}
	remote = remote_json(o, run, &link, true, peer_received);
	for (int i = 0; i < o->threads && retrans >= 0; i++) {
		int64_t r = remote_retransmitted(conns[i].send_fd);

		retrans = r < 0 ? -1 : retrans + r;
	}
	/* what a device without scatter-gather has the kernel copy again (tx_copy) */
	json_object_object_add(remote, "bytes_retransmitted", retrans < 0 ? NULL : json_object_new_int64(retrans));
	return write_report(w, o, conns, ns, NULL, remote) | short_count;
}

/* --listen: the connections of one run, each in its place by its hello. The count, or -1. */
static int accept_run(const struct tcp_workload *w, int lfd, struct tcp_conn *conns, uint64_t *run,
		      struct wl_opts *o)
{
	struct remote_hello h;
	char why[160] = "";
	int n = 1;

	for (int got = 0; got < n; got++) {
		int fd = got ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : remote_accept(lfd, REMOTE_WAIT_S);

		if (fd < 0) {
			fprintf(stderr, "%s: waiting for the sending end (--connect): %s\n", w->name,
				strerror(fd == -1 ? errno : -fd));
			return -1;
		}
		if (remote_read_hello(fd, &h, why, sizeof(why)) ||
		    (got && (h.run != *run || h.conns != (uint32_t)n || conns[h.index].recv_fd >= 0))) {
			fprintf(stderr, "%s: %s\n", w->name, got && !why[0] ? "a connection of another run" : why);
			close(fd);
			return -1;
		}
		if (!got) {
			if (strcmp(h.workload, w->name)) {
				fprintf(stderr, "%s: the sending end runs %s: run the same workload at both ends\n",
					w->name, h.workload);
				close(fd);
				return -1;
			}
			*run = h.run;
			n = h.conns;
			o->size = h.size;
		}
		conns[h.index].recv_fd = fd;
		why[0] = '\0';
	}
	return n;
}

/* --listen: the receiving end. Receives every connection to its end, then answers each with its count. */
static int remote_receiver(const struct tcp_workload *w, struct wl_opts *o, struct tcp_conn *conns, pthread_t *tids)
{
	struct sockaddr_in addr = o->remote_addr;
	struct remote_link link;
	char where[INET_ADDRSTRLEN];
	uint64_t run = 0, t0, t1;
	int lfd, n, err;

	inet_ntop(AF_INET, &addr.sin_addr, where, sizeof(where));
	lfd = tcp_listen(&addr, REMOTE_MAX_CONNS, IO_TIMEOUT_S);
	if (lfd < 0) {
		fprintf(stderr, "%s: cannot listen on %s:%d: %s\n", w->name, where, ntohs(addr.sin_port), strerror(-lfd));
		return 1;
	}
	n = accept_run(w, lfd, conns, &run, o);
	close(lfd);
	if (n < 0)
		return 1;
	remote_link_of(conns[0].recv_fd, &link);
	o->threads = n;
	pthread_barrier_init(&start_line, NULL, n + 1);
	for (int i = 0; i < n; i++) {
		if (pthread_create(&tids[i], NULL, receiver_main, &conns[i])) {
			fprintf(stderr, "%s: cannot start threads\n", w->name);
			_exit(1);
		}
	}
	WL_PHASE_BEGIN();
	t0 = wl_now_ns();
	pthread_barrier_wait(&start_line);
	for (int i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	t1 = wl_now_ns();
	WL_PHASE_END();
	for (int i = 0; i < n; i++)
		if (!conns[i].err && (err = remote_send_answer(conns[i].recv_fd, conns[i].received)))
			fail(&conns[i], "the answer to the sending end", -err);
	return write_report(w, o, conns, t1 - t0, NULL, remote_json(o, run, &link, false, 0));
}

int tcp_workload_main(int argc, char **argv, const struct tcp_workload *w)
{
	struct sockaddr_in addr;
	struct peer_run peer = { .mode = WL_PEER_THREAD, .pidfd = -1, .pid = -1 };
	struct rx_result *rx_out = NULL;
	struct rx_side rx;
	struct sigaction sa = { .sa_handler = on_stop };
	struct tcp_conn *conns = NULL;
	pthread_t *tids = NULL;
	struct wl_opts o;
	int lfd = -1, nthreads, err = 0, ret = 1;
	char where[INET_ADDRSTRLEN] = "?";
	uint64_t ns;

	if (wl_parse_opts(argc, argv, w->name, w->options ? w->options : WL_OPT_TCP, &o) ||
	    wl_check_netns(w->name, &o))
		return 2;
	workload = w;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (o.remote == WL_REMOTE_LISTEN)
		o.threads = REMOTE_MAX_CONNS;	/* as many as the sending end makes */
	conns = calloc(o.threads, sizeof(*conns));
	tids = calloc(2 * o.threads, sizeof(*tids));
	rx_out = calloc(o.threads, sizeof(*rx_out));
	if (!conns || !tids || !rx_out) {
		fprintf(stderr, "%s: out of memory\n", w->name);
		goto out;
	}
	if (w->prepare && (err = w->prepare(&o))) {
		fprintf(stderr, "%s: %s\n", w->name, strerror(-err));
		goto out;
	}
	for (int i = 0; i < o.threads; i++)
		conns[i] = (struct tcp_conn){ .index = i, .send_fd = -1, .recv_fd = -1, .opts = &o };
	if (o.remote) {
		ret = o.remote == WL_REMOTE_LISTEN ? remote_receiver(w, &o, conns, tids) : remote_sender(w, &o, conns, tids);
		goto out;
	}

	peer_server_addr(&o, &addr);
	inet_ntop(AF_INET, &addr.sin_addr, where, sizeof(where));
	lfd = tcp_listen(&addr, o.threads, IO_TIMEOUT_S);
	if (lfd < 0) {
		fprintf(stderr, "%s: cannot listen on %s:%d: %s\n", w->name, where, o.port, strerror(-lfd));
		goto out;
	}
	if (o.peer != WL_PEER_THREAD) {
		rx = (struct rx_side){ .conns = conns, .n = o.threads, .addr = addr, .out = rx_out };
		if ((err = peer_start(&peer, o.peer, rx_side_main, &rx, rx_out, o.threads * sizeof(*rx_out)))) {
			fprintf(stderr, "%s: cannot start the receiver: %s\n", w->name, strerror(-err));
			goto out;
		}
	}
	if (connect_all(w, conns, o.threads, lfd, &addr, &peer))
		goto out;
	nthreads = start_threads(w, conns, o.threads, peer.started, tids);
	ns = measured_phase(&o, conns, tids, nthreads, &peer, &err);
	if (peer.started)
		collect_peer(&peer, conns, o.threads, rx_out, err);
	ret = write_report(w, &o, conns, ns, &peer, NULL);
out:
	if (peer.started) {
		kill(peer.pid, SIGKILL);
		peer_join(&peer, 1000);
	}
	close_all(w, conns, o.threads);
	if (lfd >= 0)
		close(lfd);
	free(conns);
	free(tids);
	free(rx_out);
	return ret;
}
