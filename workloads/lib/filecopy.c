/*
 * Harness of the file-* workloads: makes a source file of --file-size pseudo-random bytes, sets
 * its cache state, copies it to a new file between the USDT phase markers, then checks the copy
 * (same size, same CRC-32) and reports its own figures as JSON.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "filecopy.h"

#define CALL_MAX 0x7ffff000	/* the most one read/write-like call moves (MAX_RW_COUNT) */

int copy_by_calls(struct copy_job *j, ssize_t (*call)(struct copy_job *j, uint64_t off, size_t want))
{
	while (j->copied < j->file_size) {
		uint64_t left = j->file_size - j->copied, want = j->size && j->size < left ? j->size : left;
		ssize_t n = call(j, j->copied, want > CALL_MAX ? CALL_MAX : want);

		j->calls[0]++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		j->copied += n;
	}
	return 0;
}

/* The workload's report: how the file was copied, how fast, and that the copy is the file. */
static json_object *copy_report(const struct file_copy *w, const struct wl_opts *o, const struct copy_job *j,
				const struct wl_file *src, const struct wl_file *dst, uint64_t ns, bool verified)
{
	double secs = ns / 1e9;
	json_object *r, *calls, *per_chunk;

	r = json_object_new_object();
	json_object_object_add(r, WL_KEY_WORKLOAD, json_object_new_string(w->name));
	json_object_object_add(r, WL_KEY_METHOD, json_object_new_string(w->method));
	json_object_object_add(r, WL_KEY_SIZE, json_object_new_uint64(o->size));
	json_object_object_add(r, WL_KEY_THREADS, json_object_new_int(1));
	json_object_object_add(r, WL_KEY_BYTES, json_object_new_uint64(j->copied));
	json_object_object_add(r, WL_KEY_ELAPSED_S, json_object_new_double(secs));
	json_object_object_add(r, "throughput_gbit_s",
			       json_object_new_double(secs > 0 ? j->copied * 8 / secs / 1e9 : 0));
	json_object_object_add(r, "throughput_mib_s",
			       json_object_new_double(secs > 0 ? j->copied / secs / (1 << 20) : 0));
	wl_file_report(r, o, src);
	{
		json_object *d = wl_file_json(dst);
		int64_t shared = wl_file_shared_bytes(dst->fd);

		/* a clone shares the source's blocks: the filesystem's own word that nothing was copied */
		json_object_object_add(d, WL_KEY_SHARED_BYTES, shared >= 0 ? json_object_new_int64(shared) : NULL);
		json_object_object_add(r, WL_KEY_DEST, d);
	}
	calls = json_object_new_object();
	per_chunk = json_object_new_object();
	for (int i = 0; i < COPY_MAX_CALLS && w->call_names[i]; i++) {
		json_object_object_add(calls, w->call_names[i], json_object_new_uint64(j->calls[i]));
		json_object_object_add(per_chunk, w->call_names[i], json_object_new_int(w->per_chunk[i]));
	}
	json_object_object_add(r, WL_KEY_CALLS, calls);
	json_object_object_add(r, WL_KEY_PER_CHUNK, per_chunk);
	/* chunks of --size bytes; with --size 0 the kernel decides how much each call moves */
	json_object_object_add(r, WL_KEY_CHUNKS, o->size ? json_object_new_uint64((src->size + o->size - 1) / o->size) : NULL);
	json_object_object_add(r, "crc32", json_object_new_uint64(src->crc));
	json_object_object_add(r, WL_KEY_VERIFIED, json_object_new_boolean(verified));
	return r;
}

int file_copy_main(int argc, char **argv, const struct file_copy *w)
{
	struct wl_file src = { .fd = -1 }, dst = { .fd = -1 };
	struct copy_job j = {};
	struct wl_opts o;
	json_object *r;
	struct stat st;
	uint64_t t0, t1;
	uint32_t crc = 0;
	int err, ret = 1;
	bool verified;

	if (wl_parse_opts(argc, argv, w->name, WL_OPT_FILE | w->options, &o))
		return 2;
	if (!o.size_set)
		o.size = w->default_size;
	if ((err = wl_file_create(&o, "src", true, &src)) || (err = wl_file_create(&o, "dst", false, &dst))) {
		fprintf(stderr, "%s: cannot make the files in %s: %s\n", w->name, o.dir, strerror(-err));
		goto out;
	}
	if ((err = wl_file_set_cache(&src, o.cache))) {
		fprintf(stderr, "%s: cannot set the cache state: %s\n", w->name, strerror(-err));
		goto out;
	}
	j = (struct copy_job){ .in = src.fd, .out = dst.fd, .file_size = src.size, .size = o.size, .opts = &o };
	if (lseek(src.fd, 0, SEEK_SET) || (w->setup && (err = w->setup(&j)))) {
		fprintf(stderr, "%s: setup: %s\n", w->name, strerror(err ? -err : errno));
		goto out;
	}
	o.size = j.size;	/* as setup settled it, e.g. the pipe's capacity */

	WL_PHASE_BEGIN();
	t0 = wl_now_ns();
	err = w->copy(&j);
	t1 = wl_now_ns();
	WL_PHASE_END();
	if (err) {
		fprintf(stderr, "%s: copy failed after %llu bytes: %s\n", w->name,
			(unsigned long long)j.copied, strerror(-err));
		goto out;
	}

	/* the copy must be the file: same size, same contents */
	if (fstat(dst.fd, &st) || (err = wl_file_crc(dst.fd, st.st_size, &crc))) {
		fprintf(stderr, "%s: cannot read the copy back: %s\n", w->name, strerror(err ? -err : errno));
		goto out;
	}
	verified = (uint64_t)st.st_size == src.size && crc == src.crc && j.copied == src.size;
	if (!verified)
		fprintf(stderr, "%s: the copy differs: %llu of %llu bytes, CRC %08x vs %08x\n", w->name,
			(unsigned long long)st.st_size, (unsigned long long)src.size, crc, src.crc);

	r = copy_report(w, &o, &j, &src, &dst, t1 - t0, verified);
	if (w->report)
		w->report(&j, r);
	ret = wl_emit(WL_KIND_FILE_COPY, r) || !verified;
	json_object_put(r);
out:
	if (w->teardown)
		w->teardown(&j);
	if (src.fd >= 0)
		close(src.fd);
	if (dst.fd >= 0)
		close(dst.fd);
	return ret;
}
