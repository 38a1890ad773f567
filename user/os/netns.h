/* Two hosts on one machine: network namespaces joined by a veth pair, made and removed by zctrace. */
#ifndef NETNS_H
#define NETNS_H

#include <signal.h>
#include <stdbool.h>
#include <linux/types.h>

struct netns_pair {
	char sender[32], receiver[32];		/* namespace names, while zctrace sets them up */
	char sender_dev[16], receiver_dev[16];	/* the veth ends */
	int sender_fd, receiver_fd;		/* the namespaces, held open: they live as long as these */
	__u32 sender_ino, receiver_ino, host_ino;	/* namespace inode numbers, as BPF sees them */
	bool sender_named, receiver_named;
	const char *rate, *delay;		/* tc shaping of the sender's end, or NULL */
};

/* No namespaces yet; notes the one zctrace runs in (the host's). */
void netns_init(struct netns_pair *np);
/* The capability this process lacks to make namespaces (CAP_SYS_ADMIN, CAP_NET_ADMIN), or NULL. */
const char *netns_missing_rights(void);
/*
 * Makes the two namespaces and the veth pair (addresses 198.18.0.1/30 and .2/30), shapes the
 * link, then removes the names: the namespaces live on in open descriptors, so nothing can be
 * left behind, even if zctrace is killed. Stops early when *@stop is set. 0, or -1 with a
 * one-line message printed.
 */
int netns_setup(struct netns_pair *np, volatile sig_atomic_t *stop);
/* Closes the namespaces (the veth pair goes with them) and removes any name still there. */
void netns_teardown(struct netns_pair *np);
/* "sender", "receiver", "host" or NULL for a namespace inode number. */
const char *netns_role(const struct netns_pair *np, __u32 ino);

#endif
