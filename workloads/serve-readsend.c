/* serve-readsend: serve a file over TCP with read() + send() of --size bytes at a time. */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#include "servewl.h"

static int send_one(struct tcp_conn *c)
{
	struct serve_conn *s = c->priv;
	uint64_t left = serve_file.size - s->off, want = left < c->opts->size ? left : c->opts->size;
	ssize_t n, done = 0;

	do {
		n = read(s->fd, s->buf, want);
		s->calls[0]++;
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	while (done < n) {	/* sendall() */
		ssize_t m = send(c->send_fd, s->buf + done, n - done, 0);

		s->calls[1]++;
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			return m < 0 ? -errno : -EIO;
		done += m;
	}
	s->off += n;
	c->sent += n;
	return 0;
}

static void report(json_object *r, struct tcp_conn *conns, int n)
{
	static const char *const names[2] = { "read", "sendto" };
	static const unsigned per_chunk[2] = { 1, 1 };

	serve_report(r, conns, n, names, per_chunk);
}

int main(int argc, char **argv)
{
	static const struct tcp_workload w = {
		.kind = WL_KIND_FILE_SERVE,
		.name = "serve-readsend", .options = WL_OPT_CONN | WL_OPT_FILE | WL_OPT_PEER, .prepare = serve_prepare,
		.setup = serve_setup, .send_one = send_one, .teardown = serve_teardown,
		.on_recv = serve_on_recv, .report = report,
	};

	return tcp_workload_main(argc, argv, &w);
}
