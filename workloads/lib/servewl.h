/* Serving one file over TCP to every connection: the serve-* workloads. */
#ifndef SERVEWL_H
#define SERVEWL_H

#include "filewl.h"
#include "tcpwl.h"

struct serve_conn {
	int fd;			/* the connection's own open file description */
	uint64_t off;		/* next byte to serve */
	uint64_t calls[2];	/* syscalls made, by the workload's call names */
	char *buf;		/* read()+send(): the user buffer */
};

extern struct wl_file serve_file;

int serve_prepare(struct wl_opts *o);
int serve_setup(struct tcp_conn *c);
void serve_teardown(struct tcp_conn *c);
void serve_on_recv(struct tcp_conn *c, const char *buf, size_t n);
/* Adds the file, the calls made (named @names, @per_chunk of each per chunk) and the verdict. */
void serve_report(json_object *r, struct tcp_conn *conns, int n, const char *const names[2],
		  const unsigned per_chunk[2]);

#endif
