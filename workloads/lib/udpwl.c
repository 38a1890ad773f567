/*
 * The UDP harness (udpwl.h). Each pair is two connected UDP sockets: the sender's, bound before
 * the receiving side starts, and the receiver's, made on the receiving side (in its namespace
 * with --netns), which says its port through shared memory. Inside the measured phase no byte
 * but the payload crosses the kernel: the start is a futex gate, the window and the end are
 * counters in shared memory, and a child's results come back through peer.c's shared memory.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <endian.h>
#include "gate.h"
#include "peer.h"
#include "remote.h"
#include "tcpio.h"
#include "udpwl.h"

#define IO_TIMEOUT_S 30		/* no socket call or wait may block longer than this */
#define PEER_TIMEOUT_MS (2 * IO_TIMEOUT_S * 1000)
#define RX_BUF 65536		/* larger than any datagram: none is truncated */
#define RX_POLL_MS 100		/* a receive times out this often to look at the sender's end */
#define LOSS_GRACE_MS 1000	/* after the sender's end, silence this long: the rest was lost */
#define STALL_MS 2000		/* the window not moving this long: its datagrams were lost */
#define WINDOW_BYTES (256 << 10)	/* what a sender may have in flight, in datagrams of its size */
#define REMOTE_WAIT_S 120	/* --listen waits this long for the sending end, --connect for the listener */

/* What sender and receiver of a pair know of each other, in memory both processes map. */
struct udp_flow {
	uint32_t acked;			/* datagrams received, modulo 2^32: a futex word */
	uint32_t sender_waiting;	/* the sender sleeps on acked: wake it */
	uint32_t done;			/* the sender sent its last; datagrams_sent is final */
	uint32_t rx_ended;		/* the receiver stopped */
	uint16_t tx_port, rx_port;	/* the sender's (before the fork) and the receiver's */
	uint64_t datagrams_sent;
};

/* What a receiver hands back, through peer_join() when it ran in a child process. */
struct rx_result {
	uint64_t received, datagrams;
	int err;
	const char *err_what;		/* a string literal: the same address in both processes */
};

static const struct udp_workload *workload;
static struct wl_opts opts;
static struct udp_pair *pairs;
static struct udp_flow *flows;
static struct rx_result *results;
static int *rx_fds;
static struct wl_gate *ready_gate, *start_gate;
static pthread_barrier_t start_line;
/* One end alone (--listen, --connect): its report's "remote", and the other end's counts, summed. */
static json_object *remote_report;
static uint64_t peer_datagrams, peer_bytes;
static bool peer_counted;
static volatile int remote_sender_done;	/* the receiving end: the sending end says it sent its last */
static uint64_t remote_last_rx_ns;	/* ... and when its last datagram came */
static uint32_t window;		/* datagrams a sender may be ahead of its receiver */
static uint64_t window_stalls;	/* sends made past a window that did not move */
static uint64_t deadline_ns;
static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	stop_requested = 1;
}

static int fail(struct udp_pair *p, const char *what, int err)
{
	if (!p->err) {
		p->err = err;
		p->err_what = what;
	}
	return -err;
}

uint64_t udp_datagrams_per_send(const struct wl_opts *o)
{
	return o->gso ? (o->size + o->gso - 1) / o->gso : 1;
}

/* Shared futexes: the two ends may be two processes. */
static void futex_wait_ms(uint32_t *word, uint32_t val, int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The address of one end: 127.0.0.1, ::1, or its veth address with --netns. Its length. */
static socklen_t end_addr(bool receiver, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (opts.remote) {
		/* the receiving end's address (--listen's, --connect's); the sending end's any of this host's */
		*a4 = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port),
					    .sin_addr.s_addr = receiver ? opts.remote_addr.sin_addr.s_addr : INADDR_ANY };
		return sizeof(*a4);
	}
	if (opts.ipv6) {
		*a6 = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = htons(port),
					     .sin6_addr = in6addr_loopback };
		return sizeof(*a6);
	}
	*a4 = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port) };
	if (opts.peer == WL_PEER_NETNS)
		inet_pton(AF_INET, receiver ? WL_NETNS_RECEIVER_ADDR : WL_NETNS_SENDER_ADDR, &a4->sin_addr);
	else
		a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sizeof(*a4);
}

/* A UDP socket bound to one end's address, on a port the kernel chooses (*@port). fd or -errno. */
static int bound_socket(bool receiver, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = end_addr(receiver, 0, &ss);
	int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&ss, len) || getsockname(fd, (struct sockaddr *)&ss, &len)) {
		err = -errno;
		close(fd);
		return err;
	}
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* Connects @fd to the other end's address and @port. 0 or -errno. */
static int connect_to(int fd, bool receiver, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = end_addr(receiver, port, &ss);

	return connect(fd, (struct sockaddr *)&ss, len) ? -errno : 0;
}

/*
 * Room for the whole window, whatever each datagram costs the receiver beyond its bytes (an skb,
 * IP fragments' buffers on veth); past net.core.rmem_max with SO_RCVBUFFORCE where allowed.
 */
static int set_rcvbuf(int fd)
{
	uint64_t dgram = opts.gso ? opts.gso : opts.size;
	uint64_t want = (uint64_t)window * 2 * (dgram + 4096);
	int v = want > INT_MAX / 2 ? INT_MAX / 2 : (int)want;

	if (!setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
		return 0;
	return setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) ? -errno : 0;
}

/* Pair i's receiving socket, connected to its sender; its port published. 0 or -errno. */
static int open_receiver(int i)
{
	struct timeval tv = { .tv_usec = RX_POLL_MS * 1000 };
	uint16_t port;
	int fd = bound_socket(true, &port), err;

	if ((rx_fds[i] = fd) < 0)
		return fd;
	if ((err = set_rcvbuf(fd)) || (err = connect_to(fd, false, flows[i].tx_port)))
		return err;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -errno;
	/*
	 * A datagram of no bytes to the sender, long before the measured phase: it resolves the
	 * link's neighbours both ways (ARP on veth), so that no datagram of the phase waits in a
	 * neighbour's queue and leaves after its send returned.
	 */
	if (send(fd, "", 0, 0))
		return -errno;
	flows[i].rx_port = port;
	return 0;
}

/* One more datagram received: the sender may go on, and is woken if it waits. */
static void ack(struct udp_flow *f, uint64_t datagrams)
{
	__atomic_store_n(&f->acked, (uint32_t)datagrams, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&f->sender_waiting, __ATOMIC_SEQ_CST))
		futex_wake(&f->acked);
}

static bool sender_finished(struct udp_flow *f, uint64_t got)
{
	return __atomic_load_n(&f->done, __ATOMIC_ACQUIRE) && got >= f->datagrams_sent;
}

/*
 * Receives until every datagram the sender sent has come, or the sender is done and nothing more
 * came for LOSS_GRACE_MS (the rest was lost: sent - received says how many).
 */
static void receive_all(struct udp_flow *f, int fd, char *buf, struct rx_result *res)
{
	uint64_t idle_ms = 0;

	while (!sender_finished(f, res->datagrams)) {
		ssize_t n = recv(fd, buf, RX_BUF, 0);

		if (n >= 0) {
			res->received += n;
			res->datagrams++;
			ack(f, res->datagrams);
			idle_ms = 0;
		} else if (errno == EAGAIN) {
			bool done = __atomic_load_n(&f->done, __ATOMIC_ACQUIRE);

			idle_ms += RX_POLL_MS;
			if (done && idle_ms >= LOSS_GRACE_MS)
				break;
			if (!done && idle_ms >= IO_TIMEOUT_S * 1000) {
				*res = (struct rx_result){ res->received, res->datagrams, ETIMEDOUT, "recv" };
				break;
			}
		} else if (errno != EINTR) {
			*res = (struct rx_result){ res->received, res->datagrams, errno, "recv" };
			break;
		}
	}
}

static void *receiver_main(void *arg)
{
	long i = (long)arg;
	struct rx_result *res = &results[i];
	char *buf = malloc(RX_BUF);
	int err;

	if (!buf)
		*res = (struct rx_result){ .err = ENOMEM, .err_what = "malloc" };
	else if ((err = wl_gate_wait(start_gate, PEER_TIMEOUT_MS)) && err != -ECANCELED)
		*res = (struct rx_result){ .err = -err, .err_what = "wait for the start" };
	else if (!err)
		receive_all(&flows[i], rx_fds[i], buf, res);
	__atomic_store_n(&flows[i].rx_ended, 1, __ATOMIC_SEQ_CST);
	futex_wake(&flows[i].acked);
	free(buf);
	return NULL;
}

/*
 * The receiving side, a thread or a child process: every receiving socket, a thread each waiting
 * at the start gate, and the ready gate opened (or turned back, if one could not be made).
 */
static int rx_side_main(void *arg)
{
	pthread_t *tids = calloc(opts.threads, sizeof(*tids));
	int started = 0, err = tids ? 0 : -ENOMEM;

	for (int i = 0; opts.peer != WL_PEER_THREAD && i < opts.threads; i++)
		close(pairs[i].send_fd);	/* the sender's, copied by fork() */
	for (int i = 0; !err && i < opts.threads; i++)
		if ((err = open_receiver(i)))
			results[i] = (struct rx_result){ .err = -err, .err_what = "receiving socket" };
	for (; !err && started < opts.threads; started++)
		if (pthread_create(&tids[started], NULL, receiver_main, (void *)(long)started))
			err = -EAGAIN;
	wl_gate_open(ready_gate, !err);
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	for (int i = 0; i < opts.threads; i++)
		if (rx_fds[i] >= 0)
			close(rx_fds[i]);
	free(tids);
	return err;
}

/*
 * Waits until @k more datagrams fit the window. A window that has not moved for STALL_MS holds
 * datagrams the receiver will never see: they are written off and the sender goes on.
 */
static int wait_window(struct udp_pair *p, uint64_t k, uint32_t *written_off)
{
	struct udp_flow *f = p->flow;
	uint64_t stall_from = 0;

	for (;;) {
		uint32_t acked = __atomic_load_n(&f->acked, __ATOMIC_SEQ_CST);
		int32_t ahead = (int32_t)((uint32_t)p->datagrams - *written_off - acked);
		uint64_t now;

		if (ahead + (int64_t)k <= (int64_t)window)
			return 0;
		if (__atomic_load_n(&f->rx_ended, __ATOMIC_SEQ_CST))
			return -EPIPE;
		now = wl_now_ns();
		if (!stall_from) {
			stall_from = now;
		} else if (now - stall_from >= STALL_MS * 1000000ULL) {
			*written_off += ahead;
			__atomic_fetch_add(&window_stalls, 1, __ATOMIC_RELAXED);
			return 0;
		}
		__atomic_store_n(&f->sender_waiting, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&f->acked, __ATOMIC_SEQ_CST) == acked)
			futex_wait_ms(&f->acked, acked, RX_POLL_MS);
		__atomic_store_n(&f->sender_waiting, 0, __ATOMIC_SEQ_CST);
	}
}

static bool sender_done(const struct udp_pair *p)
{
	if (stop_requested)
		return true;
	if (opts.messages && p->messages >= opts.messages)
		return true;
	if (opts.bytes && p->sent >= opts.bytes)
		return true;
	return deadline_ns && wl_now_ns() >= deadline_ns;
}

static void *sender_main(void *arg)
{
	struct udp_pair *p = arg;
	uint64_t k = udp_datagrams_per_send(&opts);
	uint32_t written_off = 0;
	int err;

	pthread_barrier_wait(&start_line);
	while (!sender_done(p)) {
		uint64_t t0;

		if ((err = wait_window(p, k, &written_off))) {
			fail(p, "wait for the receiver", -err);
			break;
		}
		t0 = wl_now_ns();
		if ((err = workload->send_one(p))) {
			fail(p, "send", -err);
			break;
		}
		lat_record(&p->lat, wl_now_ns() - t0);
		p->messages++;
		p->datagrams += k;
	}
	if (workload->finish && (err = workload->finish(p)))
		fail(p, "completion", -err);
	p->flow->datagrams_sent = p->datagrams;
	__atomic_store_n(&p->flow->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int udp_send(struct udp_pair *p, int flags)
{
	struct iovec iov = { .iov_base = p->msg, .iov_len = opts.size };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	do
		/* send() as most programs call it; MSG_ZEROCOPY with sendmsg(), as its selftest does */
		n = flags & MSG_ZEROCOPY ? sendmsg(p->send_fd, &mh, flags) : send(p->send_fd, p->msg, opts.size, flags);
	while (n < 0 && errno == EINTR && !stop_requested);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	if ((uint64_t)n != opts.size)
		return -EIO;	/* a datagram goes whole or not at all */
	p->sent += n;
	return 0;
}

/* Pair i's sending socket, bound (its port in the flow for the receiver), and its message. */
static int open_sender(const struct udp_workload *w, int i)
{
	struct udp_pair *p = &pairs[i];
	int seg = opts.gso, err;

	*p = (struct udp_pair){ .index = i, .opts = &opts, .flow = &flows[i] };
	p->send_fd = bound_socket(false, &flows[i].tx_port);
	if (p->send_fd < 0)
		return p->send_fd;
	if ((err = wl_socket_timeouts(p->send_fd, IO_TIMEOUT_S)))
		return err;
	if (seg && setsockopt(p->send_fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)))
		return -errno;
	p->msg = malloc(opts.size);
	if (!p->msg)
		return -ENOMEM;
	memset(p->msg, 'a' + i % 26, opts.size);
	return w->setup ? w->setup(p) : 0;
}

/* The sender threads, waiting at the start line; exits if one cannot start: the line cannot be met. */
static void start_senders(pthread_t *tids)
{
	pthread_barrier_init(&start_line, NULL, opts.threads + 1);
	for (int i = 0; i < opts.threads; i++) {
		if (pthread_create(&tids[i], NULL, sender_main, &pairs[i])) {
			fprintf(stderr, "%s: cannot start threads\n", workload->name);
			_exit(1);
		}
	}
}

/* The sending side's measured phase, as it went (wl_join_watching()); watched: it was read. */
static struct wl_progress progress;
static bool watched;

/* The measured phase: from the gate's opening until every receiver has every datagram. */
static uint64_t measured_phase(pthread_t *tids, struct peer_run *peer, int *err)
{
	uint64_t t0, t1;

	WL_PHASE_BEGIN();
	t0 = wl_now_ns();
	if (opts.duration)
		deadline_ns = t0 + (uint64_t)(opts.duration * 1e9);
	wl_gate_open(start_gate, 1);
	pthread_barrier_wait(&start_line);
	wl_join_watching(tids, opts.threads, &pairs[0].sent, sizeof(pairs[0]), opts.threads, t0, &progress);
	watched = true;
	/* the sending end alone (--connect) has reaped its notices: nothing more is due in its phase */
	if (peer->started)
		*err = peer_wait_done(peer, PEER_TIMEOUT_MS);
	t1 = wl_now_ns();
	WL_PHASE_END();
	return t1 - t0;
}

static json_object *datagrams_json(bool *verified)
{
	json_object *o = json_object_new_object();
	uint64_t sent = 0, received = 0;

	*verified = true;
	for (int i = 0; i < opts.threads; i++) {
		sent += pairs[i].datagrams;
		received += results[i].datagrams;
		*verified &= results[i].datagrams == pairs[i].datagrams && results[i].received == pairs[i].sent;
	}
	if (opts.remote) {
		/* one end: the other's count, as it answered (nothing where it did not); a datagram the
		 * network or the receiving end dropped is lost, not an error */
		*verified = true;
		if (opts.remote == WL_REMOTE_CONNECT)
			received = peer_datagrams;
		else
			sent = peer_datagrams;
		if (!peer_counted) {
			json_object_object_add(o, opts.remote == WL_REMOTE_CONNECT ? "sent" : "received",
					       json_object_new_uint64(opts.remote == WL_REMOTE_CONNECT ? sent : received));
			return o;
		}
	}
	json_object_object_add(o, "sent", json_object_new_uint64(sent));
	json_object_object_add(o, "received", json_object_new_uint64(received));
	json_object_object_add(o, "lost", json_object_new_uint64(sent > received ? sent - received : 0));
	/* one end alone sends with no window */
	json_object_object_add(o, "window", opts.remote ? NULL : json_object_new_uint64(window));
	json_object_object_add(o, "window_stalls", json_object_new_uint64(window_stalls));
	return o;
}

static json_object *result_json(uint64_t ns, const struct peer_run *peer, bool *verified)
{
	json_object *r = json_object_new_object();
	struct lat_hist *lat = calloc(1, sizeof(*lat));
	/* the receiving end alone times no send */
	struct wl_stream_sum sum = { .lat = opts.remote == WL_REMOTE_LISTEN ? NULL : lat,
				     .progress = watched ? &progress : NULL };

	for (int i = 0; i < opts.threads; i++) {
		sum.sent += pairs[i].sent;
		sum.received += results[i].received;
		sum.messages += pairs[i].messages;
		if (lat)
			lat_merge(lat, &pairs[i].lat);
	}
	wl_stream_figures(r, workload->name, &opts, &sum, ns);
	free(lat);
	json_object_object_add(r, "datagrams", datagrams_json(verified));
	json_object_object_add(r, "gso_segment", opts.gso ? json_object_new_uint64(opts.gso) : NULL);
	json_object_object_add(r, "ip", json_object_new_string(opts.ipv6 ? "IPv6" : "IPv4"));
	if (remote_report) {
		json_object_object_add(r, WL_KEY_PEER, json_object_new_string("remote"));
		json_object_object_add(r, WL_KEY_PATH, json_object_new_string(json_object_get_string(
			json_object_object_get(remote_report, "dev_kind")) ?: "remote"));
		json_object_object_add(r, opts.remote == WL_REMOTE_LISTEN ? WL_KEY_RECEIVER_PID : WL_KEY_SENDER_PID,
				       json_object_new_int(getpid()));
		json_object_object_add(r, "remote", remote_report);
		remote_report = NULL;
	} else {
		peer_report(r, &opts, peer);
	}
	if (workload->report)
		workload->report(r, pairs, opts.threads);
	/* every receiver got every datagram its sender sent, and nothing else */
	json_object_object_add(r, WL_KEY_VERIFIED, json_object_new_boolean(*verified));
	return r;
}

/* Says what failed, writes the report; the exit code. */
static int write_report(uint64_t ns, const struct peer_run *peer, int peer_err)
{
	json_object *r;
	bool verified;
	int ret = 0;

	for (int i = 0; i < opts.threads; i++)
		ret |= pairs[i].err ? wl_unit_failed(workload->name, "socket pair", i, pairs[i].err_what, pairs[i].err) :
				      wl_unit_failed(workload->name, "socket pair", i, results[i].err_what, results[i].err);
	if (peer_err) {
		fprintf(stderr, "%s: the receivers: %s\n", workload->name, strerror(-peer_err));
		ret = 1;
	}
	r = result_json(ns, peer, &verified);
	if (!verified && !ret)
		fprintf(stderr, "%s: datagrams lost: the receivers did not get every byte sent\n", workload->name);
	return wl_stream_report(r, WL_KIND_STREAM, ret, verified, "a socket pair failed");
}

/* The shared state and every sending socket. 0, or -errno having said what failed. */
static int prepare(const struct udp_workload *w)
{
	uint64_t dgram = opts.gso ? opts.gso : opts.size, k = udp_datagrams_per_send(&opts);
	int err = 0;

	window = WINDOW_BYTES / dgram < 4 ? 4 : WINDOW_BYTES / dgram > 256 ? 256 : WINDOW_BYTES / dgram;
	if (window < 2 * k)
		window = 2 * k;	/* two sends' datagrams: the receiver always has the next to read */
	pairs = calloc(opts.threads, sizeof(*pairs));
	results = calloc(opts.threads, sizeof(*results));
	rx_fds = malloc(opts.threads * sizeof(*rx_fds));
	flows = mmap(NULL, opts.threads * sizeof(*flows), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ready_gate = wl_gate_create();
	start_gate = wl_gate_create();
	if (!pairs || !results || !rx_fds || flows == MAP_FAILED || !ready_gate || !start_gate) {
		flows = flows == MAP_FAILED ? NULL : flows;
		fprintf(stderr, "%s: out of memory\n", w->name);
		return -ENOMEM;
	}
	for (int i = 0; i < opts.threads; i++)
		pairs[i].send_fd = rx_fds[i] = -1;
	for (int i = 0; i < opts.threads && !err; i++)
		if ((err = open_sender(w, i)))
			fprintf(stderr, "%s: sending socket %d: %s\n", w->name, i, strerror(-err));
	return err;
}

/* Reads the receiver's empty datagram (open_receiver()), waiting at most IO_TIMEOUT_S. 0 or -errno. */
static int await_hello(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char byte;
	int n;

	while ((n = poll(&pfd, 1, IO_TIMEOUT_S * 1000)) < 0 && errno == EINTR)
		;
	if (n <= 0)
		return n ? -errno : -ETIMEDOUT;
	return recv(fd, &byte, sizeof(byte), MSG_DONTWAIT) == 0 ? 0 : -EPROTO;
}

/* The receivers made and ready, each sender connected to its receiver. 0 or -errno. */
static int meet_receivers(struct peer_run *peer)
{
	int err;

	if ((err = peer_start(peer, opts.peer, rx_side_main, NULL, results, opts.threads * sizeof(*results)))) {
		fprintf(stderr, "%s: cannot start the receivers: %s\n", workload->name, strerror(-err));
		return err;
	}
	if ((err = wl_gate_wait(ready_gate, PEER_TIMEOUT_MS))) {
		fprintf(stderr, "%s: the receivers are not ready: %s\n", workload->name,
			err == -ECANCELED ? "a receiving socket failed" : strerror(-err));
		return err;
	}
	for (int i = 0; i < opts.threads; i++) {
		if ((err = await_hello(pairs[i].send_fd)) || (err = connect_to(pairs[i].send_fd, true, flows[i].rx_port))) {
			fprintf(stderr, "%s: socket pair %d: connect: %s\n", workload->name, i, strerror(-err));
			return err;
		}
	}
	return 0;
}

static void release_all(void)
{
	for (int i = 0; pairs && i < opts.threads; i++) {
		if (pairs[i].send_fd >= 0)
			close(pairs[i].send_fd);
		free(pairs[i].msg);
	}
	if (flows)
		munmap(flows, opts.threads * sizeof(*flows));
	wl_gate_free(ready_gate);
	wl_gate_free(start_gate);
	free(pairs);
	free(results);
	free(rx_fds);
}

/*
 * A zerocopy datagram larger than one packet is fragmented by IP, which needs it in the skb's own
 * memory: the kernel copies it at the send, and its completions come late. Refused by name.
 */
static int check_whole_packets(const struct udp_workload *w)
{
	int max = wl_udp_max_payload(&opts);

	if (!w->whole_packets || opts.gso || opts.size <= (uint64_t)max)
		return 0;
	fprintf(stderr, "%s: --size %llu does not fit one packet on the %s (at most %d bytes): IP would "
		"fragment it, and the kernel copies what it fragments; use --gso SEGMENT\n", w->name,
		(unsigned long long)opts.size, opts.peer == WL_PEER_NETNS ? "veth link" : "loopback", max);
	return -1;
}

/* ---- two hosts: one end here (--listen, --connect), the other elsewhere (remote.h) ---------- */

/*
 * What one end tells the other of each socket pair over the control connection, after its measured
 * phase: datagrams and bytes, big-endian. The receiving end tells the ports of its sockets before.
 */
struct remote_count {
	uint64_t datagrams, bytes;
};

static int send_counts(int fd, bool received)
{
	struct remote_count *c = calloc(opts.threads, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	for (int i = 0; i < opts.threads; i++)
		c[i] = received ? (struct remote_count){ htobe64(results[i].datagrams), htobe64(results[i].received) }
				: (struct remote_count){ htobe64(pairs[i].datagrams), htobe64(pairs[i].sent) };
	err = remote_send(fd, c, opts.threads * sizeof(*c));
	free(c);
	return err;
}

/* The other end's counts, summed into peer_datagrams and peer_bytes. 0 or -errno. */
static int recv_counts(int fd)
{
	struct remote_count *c = calloc(opts.threads, sizeof(*c));
	int err = c ? remote_recv(fd, c, opts.threads * sizeof(*c)) : -ENOMEM;

	for (int i = 0; !err && i < opts.threads; i++) {
		peer_datagrams += be64toh(c[i].datagrams);
		peer_bytes += be64toh(c[i].bytes);
	}
	peer_counted = !err;
	free(c);
	return err;
}

/* A zerocopy datagram must fit one packet of the path (IP_MTU of the connected socket). */
static int check_remote_packets(const struct udp_workload *w, int fd)
{
	int mtu = 0;
	socklen_t len = sizeof(mtu);

	if (!w->whole_packets || opts.gso || getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &len) ||
	    opts.size <= (uint64_t)mtu - 28)
		return 0;
	fprintf(stderr, "%s: --size %llu does not fit one packet on the path to the receiving end (MTU %d: "
		"at most %d bytes): IP would fragment it, and the kernel copies what it fragments; use --gso "
		"SEGMENT\n", w->name, (unsigned long long)opts.size, mtu, mtu - 28);
	return -1;
}

/*
 * --connect: the sending end. The control connection (TCP, to ADDR:PORT) says hello and learns the
 * receiving end's ports; then every sender sends with no window (the other end is on another host:
 * what it misses is lost) and reaps its notices, so every skb is let go of and every copy made by
 * the phase's end. Then the counts, both ways.
 */
static int remote_sender(const struct udp_workload *w, pthread_t *tids)
{
	uint64_t run = remote_run_id(), ns;
	struct remote_link link;
	uint16_t *ports = NULL;
	int cfd, err = 0;
	char where[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &opts.remote_addr.sin_addr, where, sizeof(where));
	if (prepare(w))
		return 1;
	window = UINT32_MAX;
	cfd = remote_connect(&opts, w->name, run, 0, opts.threads, REMOTE_WAIT_S, IO_TIMEOUT_S);
	if (cfd < 0) {
		fprintf(stderr, "%s: cannot connect to %s:%d (the receiving end, --listen): %s\n", w->name, where,
			ntohs(opts.remote_addr.sin_port), strerror(-cfd));
		return 1;
	}
	ports = calloc(opts.threads, sizeof(*ports));
	if (!ports || (err = remote_recv(cfd, ports, opts.threads * sizeof(*ports)))) {
		fprintf(stderr, "%s: the receiving end's ports: %s\n", w->name, strerror(ports ? -err : ENOMEM));
		goto fail;
	}
	for (int i = 0; i < opts.threads; i++) {
		if ((err = connect_to(pairs[i].send_fd, true, be16toh(ports[i])))) {
			fprintf(stderr, "%s: socket pair %d: connect: %s\n", w->name, i, strerror(-err));
			goto fail;
		}
	}
	if (check_remote_packets(w, pairs[0].send_fd))
		goto fail;
	remote_link_of(cfd, &link);
	start_senders(tids);
	ns = measured_phase(tids, &(struct peer_run){ .pidfd = -1, .pid = -1 }, &err);
	if ((err = send_counts(cfd, false)) || (err = recv_counts(cfd)))
		fprintf(stderr, "%s: the receiving end's answer: %s\n", w->name, strerror(-err));
	remote_report = remote_json(&opts, run, &link, peer_counted, peer_bytes);
	free(ports);
	close(cfd);
	return write_report(ns, NULL, err);
fail:
	free(ports);
	close(cfd);
	return 1;
}

static void *remote_receiver_main(void *arg)
{
	long i = (long)arg;
	struct rx_result *res = &results[i];
	char *buf = malloc(RX_BUF);
	uint64_t idle_ms = 0, last = 0, seen;

	pthread_barrier_wait(&start_line);
	while (buf) {
		ssize_t n = recv(rx_fds[i], buf, RX_BUF, 0);

		if (n >= 0) {
			res->received += n;
			res->datagrams++;
			idle_ms = 0;
			last = wl_now_ns();
		} else if (errno == EAGAIN) {
			idle_ms += RX_POLL_MS;
			/* the sending end is done: what has not come within the grace was lost */
			if (remote_sender_done && idle_ms >= LOSS_GRACE_MS)
				break;
			if (!remote_sender_done && idle_ms >= IO_TIMEOUT_S * 1000) {
				*res = (struct rx_result){ res->received, res->datagrams, ETIMEDOUT, "recv" };
				break;
			}
		} else if (errno != EINTR) {
			*res = (struct rx_result){ res->received, res->datagrams, errno, "recv" };
			break;
		}
	}
	if (!buf)
		*res = (struct rx_result){ .err = ENOMEM, .err_what = "malloc" };
	seen = __atomic_load_n(&remote_last_rx_ns, __ATOMIC_RELAXED);
	while (last > seen && !__atomic_compare_exchange_n(&remote_last_rx_ns, &seen, last, false, __ATOMIC_RELAXED,
							     __ATOMIC_RELAXED))
		;
	free(buf);
	return NULL;
}

/* The receiving end's sockets, one a pair at the --listen address, their ports told. 0 or -errno. */
static int remote_open_receivers(int cfd)
{
	uint16_t *ports = calloc(opts.threads, sizeof(*ports));
	struct timeval tv = { .tv_usec = RX_POLL_MS * 1000 };
	int err = ports ? 0 : -ENOMEM;

	window = 256;	/* the receiving sockets' buffers (set_rcvbuf()) as for the largest window */
	for (int i = 0; !err && i < opts.threads; i++) {
		uint16_t port;

		rx_fds[i] = bound_socket(true, &port);
		if (rx_fds[i] < 0)
			err = rx_fds[i];
		else if (!(err = set_rcvbuf(rx_fds[i])) && setsockopt(rx_fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
			err = -errno;
		ports[i] = htobe16(port);
	}
	if (!err)
		err = remote_send(cfd, ports, opts.threads * sizeof(*ports));
	free(ports);
	return err;
}

/* --listen: waits for the sending end's control connection and its hello. The connection or -1. */
static int remote_meet_sender(const struct udp_workload *w, uint64_t *run)
{
	struct sockaddr_in addr = opts.remote_addr;
	struct remote_hello h;
	char where[INET_ADDRSTRLEN], why[160] = "";
	int lfd, cfd;

	inet_ntop(AF_INET, &addr.sin_addr, where, sizeof(where));
	lfd = tcp_listen(&addr, 1, IO_TIMEOUT_S);
	if (lfd < 0) {
		fprintf(stderr, "%s: cannot listen on %s:%d: %s\n", w->name, where, ntohs(addr.sin_port), strerror(-lfd));
		return -1;
	}
	cfd = remote_accept(lfd, REMOTE_WAIT_S);
	close(lfd);
	if (cfd < 0) {
		fprintf(stderr, "%s: waiting for the sending end (--connect): %s\n", w->name, strerror(-cfd));
		return -1;
	}
	if (remote_read_hello(cfd, &h, why, sizeof(why)) || strcmp(h.workload, w->name)) {
		fprintf(stderr, "%s: %s\n", w->name, why[0] ? why : "");
		if (!why[0])
			fprintf(stderr, "%s: the sending end runs %s: run the same workload at both ends\n", w->name,
				h.workload);
		close(cfd);
		return -1;
	}
	*run = h.run;
	opts.threads = h.conns;
	opts.size = h.size;
	return cfd;
}

/*
 * --listen: the receiving end. Receives on every pair's socket until the sending end says, on the
 * control connection, that it sent its last (seen as the connection turning readable: nothing is
 * read inside the phase), and then LOSS_GRACE_MS more; then the counts, both ways.
 */
static int remote_receiver(const struct udp_workload *w)
{
	struct pollfd p = { .events = POLLIN };
	struct remote_link link;
	uint64_t run = 0, t0, t1;
	pthread_t *tids;
	int cfd, err;

	if ((cfd = remote_meet_sender(w, &run)) < 0)
		return 1;
	p.fd = cfd;
	tids = calloc(opts.threads, sizeof(*tids));
	pairs = calloc(opts.threads, sizeof(*pairs));
	results = calloc(opts.threads, sizeof(*results));
	rx_fds = malloc(opts.threads * sizeof(*rx_fds));
	if (!tids || !pairs || !results || !rx_fds) {
		fprintf(stderr, "%s: out of memory\n", w->name);
		goto fail;
	}
	for (int i = 0; i < opts.threads; i++)
		pairs[i].send_fd = rx_fds[i] = -1;
	if ((err = remote_open_receivers(cfd))) {
		fprintf(stderr, "%s: the receiving sockets: %s\n", w->name, strerror(-err));
		goto fail;
	}
	remote_link_of(cfd, &link);
	pthread_barrier_init(&start_line, NULL, opts.threads + 1);
	for (int i = 0; i < opts.threads; i++) {
		if (pthread_create(&tids[i], NULL, remote_receiver_main, (void *)(long)i)) {
			fprintf(stderr, "%s: cannot start threads\n", w->name);
			_exit(1);
		}
	}
	WL_PHASE_BEGIN();
	t0 = wl_now_ns();
	pthread_barrier_wait(&start_line);
	/* bounded: a receiver thread gives up after IO_TIMEOUT_S of silence, and the sending end's
	 * control connection times out too */
	while (!stop_requested && poll(&p, 1, RX_POLL_MS) == 0)
		;
	remote_sender_done = 1;
	for (int i = 0; i < opts.threads; i++)
		pthread_join(tids[i], NULL);
	t1 = wl_now_ns();
	WL_PHASE_END();
	if ((err = recv_counts(cfd)) || (err = send_counts(cfd, true)))
		fprintf(stderr, "%s: the sending end's counts: %s\n", w->name, strerror(-err));
	remote_report = remote_json(&opts, run, &link, false, 0);
	json_object_object_add(remote_report, "peer_sent", peer_counted ? json_object_new_uint64(peer_bytes) : NULL);
	for (int i = 0; i < opts.threads; i++)
		close(rx_fds[i]);
	close(cfd);
	/* the time it took: to the last datagram, not to the end of the grace after it */
	err = write_report((remote_last_rx_ns > t0 ? remote_last_rx_ns : t1) - t0, NULL, err);
	free(tids);
	return err;
fail:
	for (int i = 0; rx_fds && i < opts.threads; i++)
		if (rx_fds[i] >= 0)
			close(rx_fds[i]);
	free(tids);
	close(cfd);
	return 1;
}

int udp_workload_main(int argc, char **argv, const struct udp_workload *w)
{
	struct peer_run peer = { .mode = WL_PEER_THREAD, .pidfd = -1, .pid = -1 };
	struct sigaction sa = { .sa_handler = on_stop };
	pthread_t *tids = NULL;
	int err = 0, ret = 1;
	uint64_t ns;

	workload = w;
	if (wl_parse_opts(argc, argv, w->name, WL_OPT_UDP_PAIRS, &opts) ||
	    wl_check_netns(w->name, &opts) || check_whole_packets(w))
		return 2;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (opts.remote == WL_REMOTE_LISTEN) {
		ret = remote_receiver(w);
		goto out;
	}
	tids = calloc(opts.threads, sizeof(*tids));
	if (opts.remote == WL_REMOTE_CONNECT) {
		ret = tids ? remote_sender(w, tids) : 1;
		goto out;
	}
	if (!tids || prepare(w) || meet_receivers(&peer))
		goto out;
	start_senders(tids);
	ns = measured_phase(tids, &peer, &err);
	if (!err)
		err = peer_join(&peer, PEER_TIMEOUT_MS);
	ret = write_report(ns, &peer, err);
out:
	if (start_gate)
		wl_gate_open(start_gate, 0);	/* receivers still at the gate: turned back */
	if (peer.started) {
		if (peer.pid > 0)
			kill(peer.pid, SIGKILL);
		peer_join(&peer, PEER_TIMEOUT_MS);
	}
	release_all();
	free(tids);
	return ret;
}
