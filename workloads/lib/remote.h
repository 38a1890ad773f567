/*
 * Two hosts: one end of a TCP workload here (--listen: the receiving end; --connect: the sending
 * end), the other on another host or in another namespace, each traced by its own zctrace. Before
 * the measured phase the sending end opens each connection with a hello naming the run (a random
 * id, the workload, the connections); after it, the receiving end answers each connection's end
 * of stream with the bytes it received. Neither crosses the phase markers: each ledger holds the
 * payload alone.
 */
#ifndef REMOTE_H
#define REMOTE_H

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>
#include "wl.h"

#define REMOTE_MAGIC "zctrace1"
#define REMOTE_NAME_MAX 32

struct remote_hello {
	char magic[8];
	uint64_t run;			/* big-endian on the wire, as every field */
	uint32_t index, conns;
	uint64_t size;
	char workload[REMOTE_NAME_MAX];
};

/* The device the sending end's connections leave by, as its ledger needs it. */
struct remote_link {
	char dev[32];			/* "" if not found */
	const char *kind;		/* "loopback", "veth" or "device" */
	int sg;				/* the device takes page frags (scatter-gather): 1, 0, -1 unknown */
	int csum;			/* ... and checksums what it sends (TX checksum offload): 1, 0, -1 */
};

/* The run's id: random. */
uint64_t remote_run_id(void);
/*
 * Connects to @o's --connect address, trying again while nobody listens there yet (at most
 * @wait_s seconds), and sends the hello of connection @index of @conns. The socket or -errno.
 */
int remote_connect(const struct wl_opts *o, const char *workload, uint64_t run, uint32_t index,
		   uint32_t conns, int wait_s, int io_timeout_s);
/* Waits (at most @wait_s) for the first connection to listener @lfd: the socket or -errno. */
int remote_accept(int lfd, int wait_s);
/* Reads one hello from @fd: 0, or -EPROTO with @why set. */
int remote_read_hello(int fd, struct remote_hello *h, char *why, size_t n);
/* The device and offloads of the route @fd's packets leave by. */
void remote_link_of(int fd, struct remote_link *l);
/* Waits (at most @timeout_ms) until the receiving end's answer on @fd can be read. 0 or -errno. */
int remote_wait_answer(int fd, int timeout_ms);
/* The receiving end's answer: the bytes it received. 0 or -errno. */
int remote_read_answer(int fd, uint64_t *received);
int remote_send_answer(int fd, uint64_t received);
/* All @n bytes of @buf to or from the other end's control connection @fd: 0 or -errno. */
int remote_send(int fd, const void *buf, size_t n);
int remote_recv(int fd, void *buf, size_t n);
/* The bytes @fd's connection sent again (TCP_INFO), or -1 where the kernel does not say. */
int64_t remote_retransmitted(int fd);
/* The report's "remote": this end's role, the other's address, the run, the link. */
json_object *remote_json(const struct wl_opts *o, uint64_t run, const struct remote_link *l, bool have_peer_received,
			 uint64_t peer_received);

#endif
