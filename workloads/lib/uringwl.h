/*
 * io_uring senders on the TCP harness (tcpwl.h): a ring per connection, each message sent as one
 * linked request per field, IORING_OP_SEND or IORING_OP_SEND_ZC. Linked with liburing, so built
 * into the uring-* workloads alone.
 */
#ifndef URINGWL_H
#define URINGWL_H

#include "tcpwl.h"

/* The connection's ring, for IORING_OP_SEND (uring_setup) or IORING_OP_SEND_ZC (uring_setup_zc). */
int uring_setup(struct tcp_conn *c);
int uring_setup_zc(struct tcp_conn *c);
/* One message: its fields' requests submitted linked, their completions reaped. 0 or -errno. */
int uring_send_one(struct tcp_conn *c);
/* Waits for the zerocopy notifications still due. */
int uring_finish(struct tcp_conn *c);
void uring_teardown(struct tcp_conn *c);
/* "io_uring": how requests were issued, and the io threads that issued them; "zerocopy". */
void uring_report(json_object *result, struct tcp_conn *conns, int n);

#endif
