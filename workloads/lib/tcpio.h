/*
 * TCP pieces every network workload needs: a listener whose accept() times out, and whole-buffer
 * send and receive that count their own calls, for the workload to set against the kernel's counts.
 */
#ifndef TCPIO_H
#define TCPIO_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* What one side did through its socket calls, counted by the workload itself. */
struct tcp_io {
	uint64_t send_calls, recv_calls;	/* send() and recv() calls made, failed ones too */
	uint64_t sent, received;		/* bytes they moved */
};

/*
 * Listens at @addr (port 0: one the kernel chooses, written back to @addr). accept(), and every
 * call on the sockets it returns, times out after @timeout_s. Returns the socket or -errno.
 */
int tcp_listen(struct sockaddr_in *addr, int backlog, int timeout_s);
/* Sends all @n bytes with send(), resuming after short writes. Returns 0 or -errno. */
int tcp_send_all(int fd, const void *buf, size_t n, struct tcp_io *io);
/*
 * Receives exactly @n bytes with recv(), resuming after short reads. Returns 0, -ENODATA at the
 * end of the stream before the first byte (the other side is done), -EPIPE within the @n bytes.
 */
int tcp_recv_all(int fd, void *buf, size_t n, struct tcp_io *io);

#endif
