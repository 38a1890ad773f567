/* The TCP sender/receiver harness shared by the tcp-* workloads. */
#ifndef TCPWL_H
#define TCPWL_H

#include <pthread.h>
#include <sys/uio.h>
#include "peer.h"
#include "wl.h"
#include "zcnotice.h"

#define MSG_FIELDS 8	/* a message is a struct of 8 separately allocated fields */

struct message {
	char *field[MSG_FIELDS];
	size_t len[MSG_FIELDS];
	size_t size;
};

struct tcp_conn {
	int index;
	int send_fd, recv_fd;
	const struct wl_opts *opts;
	struct message msg;
	void *priv;			/* the workload's per-connection state */
	uint64_t sent, received, messages;
	uint64_t rx_digest;		/* what on_recv keeps of the stream (serve-*: its CRC-32) */
	struct lat_hist lat;
	struct zc_stats zc;
	int err;			/* first errno seen, 0 if none */
	const char *err_what;
};

struct tcp_workload {
	const char *name;
	enum wl_kind kind;			/* what its report holds; 0: WL_KIND_STREAM */
	unsigned options;			/* WL_OPT_* groups accepted; 0 = WL_OPT_TCP */
	int (*prepare)(struct wl_opts *o);	/* once, before the connections; may bound the run */
	int (*setup)(struct tcp_conn *c);	/* before the measured phase */
	int (*send_one)(struct tcp_conn *c);	/* one message; returns 0 or -errno */
	int (*finish)(struct tcp_conn *c);	/* after the last message, before shutdown */
	void (*teardown)(struct tcp_conn *c);
	void (*on_recv)(struct tcp_conn *c, const char *buf, size_t n);	/* what the receiver got */
	void (*report)(json_object *result, struct tcp_conn *conns, int n);
};

int tcp_workload_main(int argc, char **argv, const struct tcp_workload *w);

/* Sends every byte of an iovec array, resuming after short writes. */
int send_all_iov(int fd, struct iovec *iov, int iovcnt, int flags, uint64_t *sent, uint64_t *calls);

#endif
