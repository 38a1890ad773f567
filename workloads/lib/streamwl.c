/*
 * The local stream harness (streamwl.h): write() of --size messages into a channel, read() on the
 * other end by a thread of this process or of a child process; --threads channels at once, a
 * writer and a reader thread each. Both ends are non-blocking and a wait for room or data is a
 * poll() of at most IO_TIMEOUT_S: no call blocks for ever, whatever the other side does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "peer.h"
#include "streamwl.h"
#include "wl.h"

#define IO_TIMEOUT_S 30
#define PEER_TIMEOUT_MS (2 * IO_TIMEOUT_S * 1000)

/* One channel: its writer's figures here, its reader's in struct reader_result. */
struct chan {
	int fd[2];
	char *msg;
	uint64_t sent, messages;
	struct lat_hist lat;
	int err;
	const char *err_what;	/* a string literal: the same address in both processes */
};

/* What a reader hands back, through peer_join() when it ran in a child process. */
struct reader_result {
	uint64_t received;
	int err;
	const char *err_what;
};

static const struct stream_workload *workload;
static struct wl_opts opts;
static struct chan *chans;
static struct reader_result *results;
static pthread_barrier_t start_line;
static uint64_t deadline_ns;
static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	stop_requested = 1;
}

/* Waits at most IO_TIMEOUT_S for @events on @fd: 0 when they (or the other end's close) came. */
static int wait_io(int fd, short events)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int n;

	while ((n = poll(&pfd, 1, IO_TIMEOUT_S * 1000)) < 0 && errno == EINTR)
		;
	return n < 0 ? -errno : n == 0 ? -ETIMEDOUT : 0;
}

/* Reads channel i to its end of file, counting what came. */
static void *reader_main(void *arg)
{
	struct reader_result *res = &results[(long)arg];
	int fd = chans[(long)arg].fd[0], err;
	char *buf = malloc(opts.size);

	if (!buf) {
		*res = (struct reader_result){ .err = ENOMEM, .err_what = "malloc" };
		return NULL;
	}
	for (;;) {
		ssize_t n = read(fd, buf, opts.size);

		if (n > 0) {
			res->received += n;
		} else if (n == 0) {
			break;	/* the writer closed its end: all there is has come */
		} else if (errno == EAGAIN) {
			if ((err = wait_io(fd, POLLIN))) {
				*res = (struct reader_result){ res->received, -err, "wait for data" };
				break;
			}
		} else if (errno != EINTR) {
			*res = (struct reader_result){ res->received, errno, "read" };
			break;
		}
	}
	free(buf);
	return NULL;
}

/* The reading side, a thread or a child process: a reader thread per channel, all joined. */
static int readers_main(void *arg)
{
	pthread_t *tids = calloc(opts.threads, sizeof(*tids));
	int started = 0;

	if (!tids)
		return -ENOMEM;
	/* a child's copies of the write ends would keep every channel from its end of file */
	for (int i = 0; opts.peer == WL_PEER_PROCESS && i < opts.threads; i++)
		close(chans[i].fd[1]);
	for (; started < opts.threads; started++)
		if (pthread_create(&tids[started], NULL, reader_main, (void *)(long)started))
			break;
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	return started == opts.threads ? 0 : -EAGAIN;
}

/* Writes one message whole, resuming after short writes and waiting for room. 0 or -errno. */
static int write_message(struct chan *c)
{
	uint64_t done = 0;
	int err;

	while (done < opts.size) {
		ssize_t n = write(c->fd[1], c->msg + done, opts.size - done);

		if (n > 0) {
			done += n;
			c->sent += n;
		} else if (n < 0 && errno == EAGAIN) {
			if ((err = wait_io(c->fd[1], POLLOUT)))
				return err;
		} else if (n == 0 || errno != EINTR) {
			return n ? -errno : -EIO;
		}
	}
	return 0;
}

static bool writer_done(const struct chan *c)
{
	if (stop_requested)
		return true;
	if (opts.messages && c->messages >= opts.messages)
		return true;
	if (opts.bytes && c->sent >= opts.bytes)
		return true;
	return deadline_ns && wl_now_ns() >= deadline_ns;
}

/* Writes channel i's messages from the start line on, then closes its end: the reader's end of file. */
static void *writer_main(void *arg)
{
	struct chan *c = &chans[(long)arg];
	int err;

	pthread_barrier_wait(&start_line);
	while (!writer_done(c)) {
		uint64_t t0 = wl_now_ns();

		if ((err = write_message(c))) {
			c->err = -err;
			c->err_what = "write";
			break;
		}
		lat_record(&c->lat, wl_now_ns() - t0);
		c->messages++;
	}
	close(c->fd[1]);
	c->fd[1] = -1;
	return NULL;
}

/* The channels (non-blocking both ends) and each writer's message. 0 or -errno. */
static int make_channels(void)
{
	int err;

	for (int i = 0; i < opts.threads; i++)
		chans[i].fd[0] = chans[i].fd[1] = -1;
	for (int i = 0; i < opts.threads; i++) {
		struct chan *c = &chans[i];

		if ((err = workload->open(c->fd)))
			return err;
		c->msg = malloc(opts.size);
		if (!c->msg)
			return -ENOMEM;
		memset(c->msg, 'a' + i % 26, opts.size);
	}
	return 0;
}

/* The sending side's measured phase, as it went (wl_join_watching()); watched: it was read. */
static struct wl_progress progress;
static bool watched;

/* The measured phase: from the start line until every reader has had its channel's end of file. */
static uint64_t measured_phase(pthread_t *tids, struct peer_run *peer, int *err)
{
	uint64_t t0, t1;

	WL_PHASE_BEGIN();
	t0 = wl_now_ns();
	if (opts.duration)
		deadline_ns = t0 + (uint64_t)(opts.duration * 1e9);
	pthread_barrier_wait(&start_line);
	wl_join_watching(tids, opts.threads, &chans[0].sent, sizeof(chans[0]), opts.threads, t0, &progress);
	watched = true;
	*err = peer_wait_done(peer, PEER_TIMEOUT_MS);
	t1 = wl_now_ns();
	WL_PHASE_END();
	return t1 - t0;
}

static json_object *result_json(uint64_t ns, const struct peer_run *peer, bool *verified)
{
	json_object *r = json_object_new_object();
	struct lat_hist *lat = calloc(1, sizeof(*lat));
	struct wl_stream_sum sum = { .lat = lat, .progress = watched ? &progress : NULL };

	*verified = true;
	for (int i = 0; i < opts.threads; i++) {
		sum.sent += chans[i].sent;
		sum.received += results[i].received;
		sum.messages += chans[i].messages;
		*verified &= results[i].received == chans[i].sent;
		if (lat)
			lat_merge(lat, &chans[i].lat);
	}
	wl_stream_figures(r, workload->name, &opts, &sum, ns);
	free(lat);
	json_object_object_add(r, WL_KEY_PEER, json_object_new_string(wl_peer_name(opts.peer)));
	json_object_object_add(r, WL_KEY_PATH, json_object_new_string(workload->path));
	json_object_object_add(r, WL_KEY_SENDER_PID, json_object_new_int(getpid()));
	json_object_object_add(r, WL_KEY_RECEIVER_PID, json_object_new_int(peer_pid(peer)));
	/* every reader got exactly what its writer wrote */
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
		ret |= chans[i].err ? wl_unit_failed(workload->name, "channel", i, chans[i].err_what, chans[i].err) :
				      wl_unit_failed(workload->name, "channel", i, results[i].err_what, results[i].err);
	if (peer_err) {
		fprintf(stderr, "%s: the readers: %s\n", workload->name, strerror(-peer_err));
		ret = 1;
	}
	r = result_json(ns, peer, &verified);
	return wl_stream_report(r, WL_KIND_STREAM, ret, verified, "a channel failed");
}

/* The writer threads, waiting at the start line; exits if one cannot start: the line cannot be met. */
static void start_writers(pthread_t *tids)
{
	pthread_barrier_init(&start_line, NULL, opts.threads + 1);
	for (int i = 0; i < opts.threads; i++) {
		if (pthread_create(&tids[i], NULL, writer_main, (void *)(long)i)) {
			fprintf(stderr, "%s: cannot start threads\n", workload->name);
			_exit(1);
		}
	}
}

static void close_all(void)
{
	for (int i = 0; chans && i < opts.threads; i++) {
		for (int e = 0; e < 2; e++)
			if (chans[i].fd[e] >= 0)
				close(chans[i].fd[e]);
		free(chans[i].msg);
	}
}

int stream_workload_main(int argc, char **argv, const struct stream_workload *w)
{
	struct peer_run peer = { .mode = WL_PEER_THREAD, .pidfd = -1, .pid = -1 };
	struct sigaction sa = { .sa_handler = on_stop };
	pthread_t *tids = NULL;
	int err = 0, ret = 1;
	uint64_t ns;

	workload = w;
	if (wl_parse_opts(argc, argv, workload->name, WL_OPT_PIPES | WL_OPT_AMOUNT, &opts))
		return 2;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);	/* a reader gone is EPIPE, reported */
	chans = calloc(opts.threads, sizeof(*chans));
	results = calloc(opts.threads, sizeof(*results));
	tids = calloc(opts.threads, sizeof(*tids));
	if (!chans || !results || !tids || (err = make_channels())) {
		fprintf(stderr, "%s: cannot make the channels: %s\n", workload->name, strerror(err ? -err : ENOMEM));
		goto out;
	}
	if ((err = peer_start(&peer, opts.peer, readers_main, NULL, results,
			      opts.threads * sizeof(*results)))) {
		fprintf(stderr, "%s: cannot start the readers: %s\n", workload->name, strerror(-err));
		goto out;
	}
	for (int i = 0; opts.peer == WL_PEER_PROCESS && i < opts.threads; i++) {
		close(chans[i].fd[0]);	/* the child's: a reader gone is then EPIPE here */
		chans[i].fd[0] = -1;
	}
	start_writers(tids);
	ns = measured_phase(tids, &peer, &err);
	if (!err)
		err = peer_join(&peer, PEER_TIMEOUT_MS);
	ret = write_report(ns, &peer, err);
out:
	if (peer.started) {
		/* readers end at their channel's end of file, or with their process */
		if (peer.pid > 0)
			kill(peer.pid, SIGKILL);
		for (int i = 0; i < opts.threads; i++)
			if (chans[i].fd[1] >= 0)
				close(chans[i].fd[1]), chans[i].fd[1] = -1;
		peer_join(&peer, 1000);
	}
	close_all();
	free(chans);
	free(results);
	free(tids);
	return ret;
}
