/* serve-sendfile: serve a file over TCP with sendfile() of --size bytes at a time. */
#include <errno.h>
#include <sys/sendfile.h>
#include "servewl.h"

static int send_one(struct tcp_conn *c)
{
	struct serve_conn *s = c->priv;
	uint64_t left = serve_file.size - s->off, want = left < c->opts->size ? left : c->opts->size;
	off_t off = s->off;
	ssize_t n;

	do {
		n = sendfile(c->send_fd, s->fd, &off, want);
		s->calls[0]++;
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	s->off += n;
	c->sent += n;
	return 0;
}

static void report(json_object *r, struct tcp_conn *conns, int n)
{
	static const char *const names[2] = { "sendfile", NULL };
	static const unsigned per_chunk[2] = { 1, 0 };

	serve_report(r, conns, n, names, per_chunk);
}

int main(int argc, char **argv)
{
	static const struct tcp_workload w = {
		.kind = WL_KIND_FILE_SERVE,
		.name = "serve-sendfile", .options = WL_OPT_CONN | WL_OPT_FILE | WL_OPT_PEER, .prepare = serve_prepare,
		.setup = serve_setup, .send_one = send_one, .teardown = serve_teardown,
		.on_recv = serve_on_recv, .report = report,
	};

	return tcp_workload_main(argc, argv, &w);
}
