/*
 * udp-copy: send() of --size datagrams (default 1400) over connected UDP sockets, recv() on the
 * other end; --threads socket pairs, the receivers in a thread, a child process or the receiver's
 * network namespace (--peer thread|process|netns). Every byte is copied twice: user->skb on the
 * send, skb->user on the receive.
 */
#include "udpwl.h"

static int send_one(struct udp_pair *p)
{
	return udp_send(p, 0);
}

int main(int argc, char **argv)
{
	static const struct udp_workload w = { .name = "udp-copy", .send_one = send_one };

	return udp_workload_main(argc, argv, &w);
}
