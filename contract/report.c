/* The workload's report: written by the workloads, read by zctrace (report.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "contract/report.h"

static const char *const kind_names[NR_WL_KINDS] = {
	[WL_KIND_UNKNOWN] = "unknown",
	[WL_KIND_STREAM] = "stream",
	[WL_KIND_FILE_COPY] = "file-copy",
	[WL_KIND_FILE_SERVE] = "file-serve",
	[WL_KIND_REMOTE_READ] = "remote-read",
	[WL_KIND_MICRO] = "micro",
};

const char *wl_kind_name(enum wl_kind k)
{
	return k >= 0 && k < NR_WL_KINDS ? kind_names[k] : kind_names[WL_KIND_UNKNOWN];
}

int wl_emit(enum wl_kind kind, json_object *result)
{
	const char *text, *fdstr = getenv(WL_RESULT_FD_ENV);
	FILE *out = stdout;
	int ret = 0;

	json_object_object_add(result, WL_KEY_KIND, json_object_new_string(wl_kind_name(kind)));
	text = json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN);
	if (fdstr) {
		char *end;
		long fd = strtol(fdstr, &end, 10);

		if (*end || fd < 0 || !(out = fdopen(fd, "w"))) {
			fprintf(stderr, "workload: bad %s '%s'\n", WL_RESULT_FD_ENV, fdstr);
			return -1;
		}
	}
	if (fprintf(out, "%s\n", text) < 0 || fflush(out))
		ret = -1;
	if (out != stdout && fclose(out))
		ret = -1;
	return ret;
}

/* The member @key of object @o, or NULL (for anything that is not an object, too). */
static json_object *member(json_object *o, const char *key)
{
	json_object *v;

	return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static struct wl_count count(json_object *o, const char *key)
{
	json_object *v = member(o, key);

	return (struct wl_count){ .v = v ? json_object_get_uint64(v) : 0, .found = v != NULL };
}

static const char *string(json_object *o, const char *key)
{
	json_object *v = member(o, key);

	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static json_object *object(json_object *o, const char *key)
{
	json_object *v = member(o, key);

	return json_object_is_type(v, json_type_object) ? v : NULL;
}

static json_object *array(json_object *o, const char *key)
{
	json_object *v = member(o, key);

	return json_object_is_type(v, json_type_array) ? v : NULL;
}

static double number(json_object *o, const char *key)
{
	json_object *v = member(o, key);

	return v ? json_object_get_double(v) : NAN;
}

/* The report's counts: each key beside the field it fills. */
struct count_field {
	const char *key;
	size_t off;		/* of its struct wl_count */
};
#define COUNT(key, field) { key, offsetof(struct wl_report, field) }
static const struct count_field report_counts[] = {
	COUNT(WL_KEY_BYTES, bytes), COUNT(WL_KEY_BYTES_RECEIVED, bytes_received),
	COUNT(WL_KEY_REQUEST_BYTES, request_bytes), COUNT(WL_KEY_SENDER_PID, sender_pid),
	COUNT(WL_KEY_RECEIVER_PID, receiver_pid), COUNT(WL_KEY_CLIENT_PID, client_pid),
	COUNT(WL_KEY_SERVER_PID, server_pid), COUNT(WL_KEY_MESSAGES, messages), COUNT(WL_KEY_SIZE, size),
	COUNT(WL_KEY_THREADS, threads), COUNT(WL_KEY_FILE_SIZE, file_size), COUNT(WL_KEY_CHUNKS, chunks),
	COUNT(WL_KEY_BYTES_READ, bytes_read), COUNT(WL_KEY_BYTES_WRITTEN, bytes_written),
}, latency_counts[] = {
	COUNT("p50", p50), COUNT("p90", p90), COUNT("p99", p99), COUNT("max", max),
}, zerocopy_counts[] = {
	COUNT("notices", zc_notices), COUNT("notices_copied", zc_notices_copied), COUNT("completed", zc_completed),
}, file_counts[] = {
	/* in struct wl_file_fig: a source's or a destination's */
	{ WL_KEY_INO, offsetof(struct wl_file_fig, ino) },
	{ WL_KEY_DEV_MAJOR, offsetof(struct wl_file_fig, dev_major) },
	{ WL_KEY_DEV_MINOR, offsetof(struct wl_file_fig, dev_minor) },
	{ WL_KEY_PAGES, offsetof(struct wl_file_fig, pages) },
	{ WL_KEY_RESIDENT_BEFORE, offsetof(struct wl_file_fig, resident_before) },
	{ WL_KEY_SHARED_BYTES, offsetof(struct wl_file_fig, shared_bytes) },
};
#define COUNTS(table, o, base) read_counts(table, sizeof(table) / sizeof(table[0]), o, base)

static void read_counts(const struct count_field *c, size_t n, json_object *o, void *base)
{
	for (size_t i = 0; i < n; i++)
		*(struct wl_count *)((char *)base + c[i].off) = count(o, c[i].key);
}

/* "remote": which end of a network workload this was, and how its bytes left */
static void read_remote(json_object *o, struct wl_report *r)
{
	json_object *v = member(o, "dev_sg");

	r->remote_role = string(o, "role");
	r->remote_addr = string(o, "connect") ?: string(o, "listen");
	r->remote_run = string(o, "run");
	r->remote_dev = string(o, "dev");
	r->remote_dev_kind = string(o, "dev_kind");
	r->remote_dev_sg = json_object_is_type(v, json_type_boolean) ? json_object_get_boolean(v) : -1;
	v = member(o, "dev_csum");
	r->remote_dev_csum = json_object_is_type(v, json_type_boolean) ? json_object_get_boolean(v) : -1;
	r->retransmitted = count(o, "bytes_retransmitted");
	r->peer_received = count(o, "peer_received");
}

/* "calls" and "per_chunk": a file workload's own count of each syscall, and its calls per chunk */
static void read_calls(json_object *calls, json_object *per_chunk, struct wl_report *r)
{
	r->has_calls = calls && per_chunk;
	if (!r->has_calls)
		return;
	r->ncalls_listed = json_object_object_length(calls);
	json_object_object_foreach(calls, name, val) {
		if (r->ncalls == WL_MAX_CALLS)
			break;
		r->calls[r->ncalls++] = (struct wl_call){ .name = name, .calls = json_object_get_uint64(val),
							  .per_chunk = count(per_chunk, name).v };
	}
}

static void read_result(json_object *o, struct wl_result *res)
{
	json_object *hist = array(o, "hist");

	*res = (struct wl_result){
		.name = string(o, "name"), .unit = string(o, "unit"), .samples = count(o, "samples").v,
		.iters_per_sample = count(o, "iters_per_sample").v, .warmup = count(o, "warmup").v,
		.min = number(o, "min"), .median = number(o, "median"), .mean = number(o, "mean"),
		.p99 = number(o, "p99"), .max = number(o, "max"), .nhist = hist ? 0 : -1,
	};
	for (size_t i = 0; hist && i < json_object_array_length(hist) && res->nhist < WL_MAX_HIST_BINS; i++) {
		json_object *b = json_object_array_get_idx(hist, i);

		res->hist[res->nhist++] = (struct wl_bin){ .lo = number(b, "lo"), .hi = number(b, "hi"),
							   .count = count(b, "count").v };
	}
}

/* A microbenchmark's lists: its measurements, notes, numbered steps and assumptions. */
static void read_micro(json_object *json, struct wl_report *r)
{
	json_object *results = array(json, WL_KEY_RESULTS), *notes = array(json, WL_KEY_NOTES);
	json_object *steps = array(json, WL_KEY_STEPS), *as = array(json, WL_KEY_ASSUMPTIONS);
	json_object *cpu = member(json, WL_KEY_CPU);

	r->cpu = cpu ? json_object_get_int(cpu) : -1;
	for (size_t i = 0; results && i < json_object_array_length(results) && i < WL_MAX_RESULTS; i++)
		read_result(json_object_array_get_idx(results, i), &r->results[r->nresults++]);
	for (size_t i = 0; notes && i < json_object_array_length(notes) && i < WL_MAX_NOTES; i++)
		r->notes[r->nnotes++] = json_object_is_type(json_object_array_get_idx(notes, i), json_type_string)
					? json_object_get_string(json_object_array_get_idx(notes, i)) : NULL;
	r->nsteps_listed = steps ? json_object_array_length(steps) : 0;
	for (size_t i = 0; i < r->nsteps_listed && i < WL_MAX_STEPS; i++) {
		json_object *o = json_object_array_get_idx(steps, i);

		r->steps[r->nsteps++] = (struct wl_step){ .id = count(o, "step").v, .name = string(o, "name") };
	}
	r->has_assumptions = as != NULL;
	r->nassumptions_listed = as ? json_object_array_length(as) : 0;
	for (size_t i = 0; i < r->nassumptions_listed && i < WL_MAX_ASSUMPTIONS; i++) {
		json_object *o = json_object_array_get_idx(as, i);

		r->assumptions[r->nassumptions++] = (struct wl_assumption){
			.claim = string(o, "claim"), .measure = string(o, "measure"), .step = count(o, "step").v,
			.expected = count(o, "expected").v, .min = count(o, "min").v, .max = count(o, "max").v,
		};
	}
}

/* "progress": readings in order of time, each with its bytes; anything else is not a progress. */
static void read_progress(json_object *o, struct wl_report *r)
{
	json_object *t = array(o, WL_KEY_PROGRESS_T_NS), *sent = array(o, WL_KEY_PROGRESS_SENT);
	struct wl_count slice = count(o, WL_KEY_PROGRESS_SLICE_NS);
	size_t n = t ? json_object_array_length(t) : 0;

	if (!t || !sent || !slice.found || !slice.v || n != json_object_array_length(sent) || n > WL_MAX_SLICES)
		return;
	for (size_t i = 0; i < n; i++) {
		json_object *ti = json_object_array_get_idx(t, i), *si = json_object_array_get_idx(sent, i);

		if (!json_object_is_type(ti, json_type_int) || !json_object_is_type(si, json_type_int))
			return;
		r->progress.at_ns[i] = json_object_get_uint64(ti);
		r->progress.sent[i] = json_object_get_uint64(si);
		if (r->progress.at_ns[i] <= (i ? r->progress.at_ns[i - 1] : 0) || (i && r->progress.sent[i] < r->progress.sent[i - 1]))
			return;
	}
	r->progress.slice_ns = slice.v;
	r->progress.n = n;
	r->has_progress = true;
}

static enum wl_kind parse_kind(const char *name)
{
	for (int k = 0; name && k < NR_WL_KINDS; k++)
		if (!strcmp(kind_names[k], name))
			return k;
	return WL_KIND_UNKNOWN;
}

void wl_report_parse(json_object *json, struct wl_report *r)
{
	json_object *lat = object(json, WL_KEY_LATENCY_NS), *zc = object(json, WL_KEY_ZEROCOPY), *v;

	memset(r, 0, sizeof(*r));
	r->kind = parse_kind(string(json, WL_KEY_KIND));
	r->workload = string(json, WL_KEY_WORKLOAD);
	COUNTS(report_counts, json, r);
	if (!json_object_is_type(member(json, WL_KEY_CHUNKS), json_type_int))
		r->chunks.found = false;	/* a count of chunks is a whole number, or not one */
	r->elapsed_s = (v = member(json, WL_KEY_ELAPSED_S)) ? json_object_get_double(v) : 0;
	r->has_latency = lat != NULL;
	COUNTS(latency_counts, lat, r);
	r->path = string(json, WL_KEY_PATH);
	r->peer = string(json, WL_KEY_PEER);
	r->method = string(json, WL_KEY_METHOD);
	r->cache = string(json, WL_KEY_CACHE);
	r->fs = string(json, WL_KEY_FS);
	r->pattern = string(json, WL_KEY_PATTERN);
	COUNTS(file_counts, object(json, WL_KEY_SOURCE), &r->source);
	COUNTS(file_counts, object(json, WL_KEY_DEST), &r->dest);
	/* reported but not true (null too) is not verified */
	r->verified = json_object_is_type(json, json_type_object) &&
		      json_object_object_get_ex(json, WL_KEY_VERIFIED, &v) ? json_object_get_boolean(v) : -1;
	r->direct = json_object_is_type(json, json_type_object) &&
		    json_object_object_get_ex(json, WL_KEY_DIRECT, &v) ? json_object_get_boolean(v) : -1;
	COUNTS(zerocopy_counts, zc, r);
	v = member(zc, "usage_reports");
	r->zc_usage_reports = json_object_is_type(v, json_type_boolean) ? json_object_get_boolean(v) : -1;
	read_calls(object(json, WL_KEY_CALLS), member(json, WL_KEY_PER_CHUNK), r);
	read_micro(json, r);
	read_remote(object(json, WL_KEY_REMOTE), r);
	read_progress(object(json, WL_KEY_PROGRESS), r);
}
