/* Loopback TCP pieces of the network microbenchmarks: the listener, the peer thread. */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "mbnet.h"

int mbnet_listen(struct sockaddr_in *addr, int backlog)
{
	*addr = (struct sockaddr_in){ .sin_family = AF_INET,
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	return tcp_listen(addr, backlog, MBNET_TIMEOUT_S);
}

/* ---- the peer thread ---- */

static void *peer_main(void *arg)
{
	struct mbnet_peer *p = arg;

	for (;;) {
		while (sem_wait(&p->go) && errno == EINTR)
			;
		if (p->quit)
			break;
		if (!p->err)	/* after a failure the peer only reports it, step after step */
			p->err = p->work(p, p->quota);
		sem_post(&p->done);
	}
	return NULL;
}

int mbnet_peer_start(struct mbnet_peer *p)
{
	int err;

	p->quit = false;
	p->err = 0;
	if (sem_init(&p->go, 0, 0) || sem_init(&p->done, 0, 0))
		return -errno;
	if ((err = pthread_create(&p->tid, NULL, peer_main, p)))
		return -err;
	if (p->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(p->cpu, &set);
		if ((err = pthread_setaffinity_np(p->tid, sizeof(set), &set))) {
			mbnet_peer_stop(p);
			return -err;
		}
	}
	return 0;
}

void mbnet_peer_go(struct mbnet_peer *p, uint64_t quota)
{
	p->quota = quota;
	sem_post(&p->go);
}

int mbnet_peer_wait(struct mbnet_peer *p)
{
	struct timespec deadline;

	/* the peer's own calls time out first: this only bounds a peer that stopped answering */
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += 2 * MBNET_TIMEOUT_S;
	while (sem_clockwait(&p->done, CLOCK_MONOTONIC, &deadline)) {
		if (errno != EINTR)
			return -errno;
	}
	return p->err;
}

void mbnet_peer_stop(struct mbnet_peer *p)
{
	p->quit = true;
	sem_post(&p->go);
	pthread_join(p->tid, NULL);
	sem_destroy(&p->go);
	sem_destroy(&p->done);
}
