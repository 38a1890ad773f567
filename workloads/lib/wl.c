/* Timing, latency histograms, result output and the phase markers shared by the workloads. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "wl.h"

int wl_socket_timeouts(int fd, int seconds)
{
	struct timeval tv = { .tv_sec = seconds };

	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -errno;
	return 0;
}

uint64_t wl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static unsigned lat_index(uint64_t ns)
{
	unsigned msb;

	if (ns < LAT_SUB)
		return ns;
	msb = 63 - __builtin_clzll(ns);
	/* the LAT_SUB values below the leading bit pick the sub-bucket */
	return (msb - 3) * LAT_SUB + ((ns >> (msb - 4)) & (LAT_SUB - 1));
}

static uint64_t lat_bucket_low(unsigned idx)
{
	unsigned msb;

	if (idx < LAT_SUB)
		return idx;
	msb = idx / LAT_SUB + 3;
	return (1ULL << msb) | ((uint64_t)(idx % LAT_SUB) << (msb - 4));
}

void lat_record(struct lat_hist *h, uint64_t ns)
{
	if (!h->count || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->sum_ns += ns;
	h->bucket[lat_index(ns)]++;
}

void lat_merge(struct lat_hist *into, const struct lat_hist *from)
{
	if (!from->count)
		return;
	if (!into->count || from->min_ns < into->min_ns)
		into->min_ns = from->min_ns;
	if (from->max_ns > into->max_ns)
		into->max_ns = from->max_ns;
	into->count += from->count;
	into->sum_ns += from->sum_ns;
	for (int i = 0; i < LAT_BUCKETS; i++)
		into->bucket[i] += from->bucket[i];
}

/* The low edge of the bucket holding the p-th sample, clamped to the observed range. */
uint64_t lat_percentile(const struct lat_hist *h, double p)
{
	uint64_t rank, seen = 0;

	if (!h->count)
		return 0;
	if (p >= 100)
		return h->max_ns;
	rank = (uint64_t)(p / 100.0 * (h->count - 1)) + 1;
	for (unsigned i = 0; i < LAT_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint64_t v = lat_bucket_low(i);

			return v < h->min_ns ? h->min_ns : v > h->max_ns ? h->max_ns : v;
		}
	}
	return h->max_ns;
}

json_object *lat_json(const struct lat_hist *h)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "samples", json_object_new_uint64(h->count));
	json_object_object_add(o, "min", json_object_new_uint64(h->min_ns));
	json_object_object_add(o, "p50", json_object_new_uint64(lat_percentile(h, 50)));
	json_object_object_add(o, "p90", json_object_new_uint64(lat_percentile(h, 90)));
	json_object_object_add(o, "p99", json_object_new_uint64(lat_percentile(h, 99)));
	json_object_object_add(o, "max", json_object_new_uint64(h->max_ns));
	json_object_object_add(o, "mean", json_object_new_double(h->count ? (double)h->sum_ns / h->count : 0));
	return o;
}

/* { "slice_ns": N, "t_ns": [each reading's time into the phase], "sent": [the bytes sent by then] } */
static json_object *progress_json(const struct wl_progress *p)
{
	json_object *o = json_object_new_object(), *t = json_object_new_array(), *sent = json_object_new_array();

	for (size_t i = 0; i < p->n; i++) {
		json_object_array_add(t, json_object_new_uint64(p->at_ns[i]));
		json_object_array_add(sent, json_object_new_uint64(p->sent[i]));
	}
	json_object_object_add(o, WL_KEY_PROGRESS_SLICE_NS, json_object_new_uint64(p->slice_ns));
	json_object_object_add(o, WL_KEY_PROGRESS_T_NS, t);
	json_object_object_add(o, WL_KEY_PROGRESS_SENT, sent);
	return o;
}

static uint64_t units_sent(const uint64_t *first, size_t stride, int n)
{
	uint64_t sum = 0;

	for (int i = 0; i < n; i++)
		sum += __atomic_load_n((const uint64_t *)((const char *)first + i * stride), __ATOMIC_RELAXED);
	return sum;
}

/* The array is full: every second reading is kept, and the slices are twice as long from now on. */
static void progress_halve(struct wl_progress *p)
{
	for (size_t i = 0; i < p->n / 2; i++) {
		p->at_ns[i] = p->at_ns[2 * i + 1];
		p->sent[i] = p->sent[2 * i + 1];
	}
	p->n /= 2;
	p->slice_ns *= 2;
}

void wl_join_watching(pthread_t *tids, int nthreads, const uint64_t *first, size_t stride, int n, uint64_t t0,
		      struct wl_progress *p)
{
	uint64_t next;

	p->slice_ns = WL_SLICE_NS;
	p->n = 0;
	next = t0 + p->slice_ns;
	for (int i = 0; i < nthreads; i++) {
		for (;;) {
			struct timespec until;
			uint64_t mono = wl_now_ns(), real;

			/* pthread_timedjoin_np() waits until a CLOCK_REALTIME time */
			clock_gettime(CLOCK_REALTIME, &until);
			real = until.tv_sec * 1000000000ull + until.tv_nsec + (next > mono ? next - mono : 0);
			until = (struct timespec){ .tv_sec = real / 1000000000ull, .tv_nsec = real % 1000000000ull };
			if (pthread_timedjoin_np(tids[i], NULL, &until) != ETIMEDOUT)
				break;
			if ((mono = wl_now_ns()) < next)
				continue;
			if (p->n == WL_MAX_SLICES)
				progress_halve(p);
			p->at_ns[p->n] = mono - t0;
			p->sent[p->n++] = units_sent(first, stride, n);
			/* the next boundary after now: a wake late by more than a slice skips one */
			next = t0 + ((mono - t0) / p->slice_ns + 1) * p->slice_ns;
		}
	}
}

void wl_stream_figures(json_object *r, const char *name, const struct wl_opts *o, const struct wl_stream_sum *s,
		       uint64_t ns)
{
	double secs = ns / 1e9;

	json_object_object_add(r, WL_KEY_WORKLOAD, json_object_new_string(name));
	json_object_object_add(r, WL_KEY_SIZE, json_object_new_uint64(o->size));
	json_object_object_add(r, WL_KEY_THREADS, json_object_new_int(o->threads));
	json_object_object_add(r, WL_KEY_MESSAGES, json_object_new_uint64(s->messages));
	json_object_object_add(r, WL_KEY_BYTES, json_object_new_uint64(s->sent));
	json_object_object_add(r, WL_KEY_BYTES_RECEIVED, json_object_new_uint64(s->received));
	json_object_object_add(r, WL_KEY_ELAPSED_S, json_object_new_double(secs));
	json_object_object_add(r, "throughput_gbit_s", json_object_new_double(secs > 0 ? s->sent * 8 / secs / 1e9 : 0));
	json_object_object_add(r, "messages_per_s", json_object_new_double(secs > 0 ? s->messages / secs : 0));
	if (s->lat)
		json_object_object_add(r, WL_KEY_LATENCY_NS, lat_json(s->lat));
	if (s->progress)
		json_object_object_add(r, WL_KEY_PROGRESS, progress_json(s->progress));
}

int wl_unit_failed(const char *name, const char *unit, int i, const char *what, int err)
{
	if (!err)
		return 0;
	fprintf(stderr, "%s: %s %d: %s: %s\n", name, unit, i, what, strerror(err));
	return 1;
}

int wl_stream_report(json_object *r, enum wl_kind kind, int ret, bool verified, const char *error)
{
	if (!verified)
		ret = 1;
	if (ret && !json_object_object_get_ex(r, "error", NULL))
		json_object_object_add(r, "error", json_object_new_string(error));
	if (wl_emit(kind, r))
		ret = 1;
	json_object_put(r);
	return ret;
}

__attribute__((noinline)) void wl_phase_begin(void)
{
	DTRACE_PROBE(WL_USDT_PROVIDER_T, WL_USDT_PHASE_BEGIN_T);
}

__attribute__((noinline)) void wl_phase_end(void)
{
	DTRACE_PROBE(WL_USDT_PROVIDER_T, WL_USDT_PHASE_END_T);
}
