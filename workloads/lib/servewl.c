/*
 * The serve-* workloads: a file of --file-size bytes, in the chosen cache state, served to each
 * connection in --size chunks; each receiver checks the CRC-32 of the stream it got.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>
#include "servewl.h"

struct wl_file serve_file = { .fd = -1 };
static const struct wl_opts *opts;

int serve_prepare(struct wl_opts *o)
{
	int err;

	opts = o;
	if ((err = wl_file_create(o, "serve", true, &serve_file)))
		return err;
	if ((err = wl_file_set_cache(&serve_file, o->cache)))
		return err;
	o->bytes = o->file_size;	/* each connection gets the whole file, once */
	o->messages = 0;
	return 0;
}

int serve_setup(struct tcp_conn *c)
{
	struct serve_conn *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	c->priv = s;
	s->fd = wl_file_reopen(&serve_file);
	if (s->fd < 0)
		return -errno;
	s->buf = malloc(c->opts->size);
	return s->buf ? 0 : -ENOMEM;
}

void serve_teardown(struct tcp_conn *c)
{
	struct serve_conn *s = c->priv;

	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
	free(s);
}

/* Runs where the receiver runs, maybe another process: the CRC travels in the connection. */
void serve_on_recv(struct tcp_conn *c, const char *buf, size_t n)
{
	c->rx_digest = crc32(c->rx_digest, (const Bytef *)buf, n);	/* crc32(0, NULL, 0) is 0 */
}

void serve_report(json_object *r, struct tcp_conn *conns, int n, const char *const names[2],
		  const unsigned per_chunk[2])
{
	json_object *calls = json_object_new_object(), *per = json_object_new_object();
	uint64_t total[2] = { 0, 0 };
	bool verified = true;

	for (int i = 0; i < n; i++) {
		struct serve_conn *s = conns[i].priv;

		for (int k = 0; k < 2; k++)
			total[k] += s->calls[k];
		if (conns[i].received != serve_file.size || conns[i].rx_digest != serve_file.crc)
			verified = false;
	}
	for (int k = 0; k < 2 && names[k]; k++) {
		json_object_object_add(calls, names[k], json_object_new_uint64(total[k]));
		json_object_object_add(per, names[k], json_object_new_int(per_chunk[k]));
	}
	wl_file_report(r, opts, &serve_file);
	json_object_object_add(r, WL_KEY_CALLS, calls);
	json_object_object_add(r, WL_KEY_PER_CHUNK, per);
	json_object_object_add(r, WL_KEY_CHUNKS,
			       json_object_new_uint64(n * ((serve_file.size + opts->size - 1) / opts->size)));
	json_object_object_add(r, "crc32", json_object_new_uint64(serve_file.crc));
	json_object_object_add(r, WL_KEY_VERIFIED, json_object_new_boolean(verified));
	if (!verified)
		json_object_object_add(r, "error", json_object_new_string("a receiver did not get the file"));
}
