/* The two ends of a network workload on two hosts (remote.h). */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/tcp.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include "remote.h"
#include "tcpio.h"

uint64_t remote_run_id(void)
{
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = wl_now_ns() ^ ((uint64_t)getpid() << 32);
	return id;
}

int remote_send(int fd, const void *buf, size_t n)
{
	struct tcp_io io = {};

	return tcp_send_all(fd, buf, n, &io);
}

int remote_recv(int fd, void *buf, size_t n)
{
	struct tcp_io io = {};
	int err = tcp_recv_all(fd, buf, n, &io);

	return err == -ENODATA ? -ECONNRESET : err;
}

static int send_exact(int fd, const void *buf, size_t n)
{
	struct tcp_io io = {};

	return tcp_send_all(fd, buf, n, &io);
}

static int recv_exact(int fd, void *buf, size_t n)
{
	struct tcp_io io = {};

	return tcp_recv_all(fd, buf, n, &io);
}

int remote_connect(const struct wl_opts *o, const char *workload, uint64_t run, uint32_t index,
		   uint32_t conns, int wait_s, int io_timeout_s)
{
	struct remote_hello h = { .run = htobe64(run), .index = htobe32(index), .conns = htobe32(conns),
				  .size = htobe64(o->size) };
	uint64_t until = wl_now_ns() + (uint64_t)wait_s * 1000000000ULL;
	int fd, err;

	memcpy(h.magic, REMOTE_MAGIC, sizeof(h.magic));
	snprintf(h.workload, sizeof(h.workload), "%s", workload);
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if ((err = wl_socket_timeouts(fd, io_timeout_s))) {
			close(fd);
			return err;
		}
		if (!connect(fd, (const struct sockaddr *)&o->remote_addr, sizeof(o->remote_addr)))
			break;
		err = -errno;
		close(fd);
		/* the receiving end may not listen yet: it is started by hand, or by another zctrace */
		if ((err != -ECONNREFUSED && err != -ENETUNREACH && err != -EHOSTUNREACH) || wl_now_ns() >= until)
			return err;
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	}
	if ((err = send_exact(fd, &h, sizeof(h)))) {
		close(fd);
		return err;
	}
	return fd;
}

int remote_accept(int lfd, int wait_s)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int n = poll(&p, 1, wait_s * 1000);

	if (n <= 0)
		return n == 0 ? -ETIMEDOUT : -errno;
	n = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	return n < 0 ? -errno : n;
}

int remote_read_hello(int fd, struct remote_hello *h, char *why, size_t n)
{
	int err = recv_exact(fd, h, sizeof(*h));

	if (err) {
		snprintf(why, n, "no hello from the sending end: %s", strerror(-err));
		return -EPROTO;
	}
	if (memcmp(h->magic, REMOTE_MAGIC, sizeof(h->magic))) {
		snprintf(why, n, "the peer is not a zctrace workload's sending end (--connect)");
		return -EPROTO;
	}
	h->run = be64toh(h->run);
	h->index = be32toh(h->index);
	h->conns = be32toh(h->conns);
	h->size = be64toh(h->size);
	h->workload[sizeof(h->workload) - 1] = '\0';
	if (h->conns == 0 || h->conns > 256 || h->index >= h->conns) {
		snprintf(why, n, "a hello of connection %u of %u", h->index, h->conns);
		return -EPROTO;
	}
	return 0;
}

/* Whether @a is an address of this host: its connections then stay on loopback. */
static bool local_address(const struct ifaddrs *all, const struct in_addr *a)
{
	if ((ntohl(a->s_addr) >> 24) == 127)
		return true;
	for (const struct ifaddrs *i = all; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a->s_addr)
			return true;
	return false;
}

static void link_offloads(const char *dev, struct remote_link *l)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ethtool_value sg = { .cmd = ETHTOOL_GSG }, csum = { .cmd = ETHTOOL_GTXCSUM };
	struct ifreq ifr = {};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	ifr.ifr_data = (void *)&info;
	if (!ioctl(s, SIOCETHTOOL, &ifr) && !strcmp(info.driver, "veth"))
		l->kind = "veth";
	ifr.ifr_data = (void *)&sg;
	if (!ioctl(s, SIOCETHTOOL, &ifr))
		l->sg = !!sg.data;
	ifr.ifr_data = (void *)&csum;
	if (!ioctl(s, SIOCETHTOOL, &ifr))
		l->csum = !!csum.data;
	close(s);
}

void remote_link_of(int fd, struct remote_link *l)
{
	struct sockaddr_in self, peer;
	socklen_t len = sizeof(self), plen = sizeof(peer);
	struct ifaddrs *all = NULL;

	*l = (struct remote_link){ .kind = "device", .sg = -1, .csum = -1 };
	if (getsockname(fd, (struct sockaddr *)&self, &len) || getpeername(fd, (struct sockaddr *)&peer, &plen) ||
	    getifaddrs(&all))
		return;
	if (local_address(all, &peer.sin_addr)) {
		/* to an address of this host: the kernel routes it through lo */
		snprintf(l->dev, sizeof(l->dev), "lo");
		l->kind = "loopback";
		l->sg = l->csum = 1;
		freeifaddrs(all);
		return;
	}
	/* the device of the address the connection leaves from */
	for (struct ifaddrs *i = all; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr != self.sin_addr.s_addr)
			continue;
		snprintf(l->dev, sizeof(l->dev), "%s", i->ifa_name);
		link_offloads(i->ifa_name, l);
		break;
	}
	freeifaddrs(all);
}

int64_t remote_retransmitted(int fd)
{
	struct tcp_info ti = {};
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) ||
	    len < offsetof(struct tcp_info, tcpi_bytes_retrans) + sizeof(ti.tcpi_bytes_retrans))
		return -1;
	return ti.tcpi_bytes_retrans;
}

int remote_wait_answer(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n == 0 ? -ETIMEDOUT : 0;
}

int remote_read_answer(int fd, uint64_t *received)
{
	uint64_t be;
	int err = recv_exact(fd, &be, sizeof(be));

	if (err)
		return err == -ENODATA ? -ECONNRESET : err;
	*received = be64toh(be);
	return 0;
}

int remote_send_answer(int fd, uint64_t received)
{
	uint64_t be = htobe64(received);

	return send_exact(fd, &be, sizeof(be));
}

json_object *remote_json(const struct wl_opts *o, uint64_t run, const struct remote_link *l, bool have_peer_received,
			 uint64_t peer_received)
{
	json_object *r = json_object_new_object();
	char addr[INET_ADDRSTRLEN + 8], id[20];

	inet_ntop(AF_INET, &o->remote_addr.sin_addr, addr, INET_ADDRSTRLEN);
	snprintf(addr + strlen(addr), 8, ":%u", ntohs(o->remote_addr.sin_port));
	snprintf(id, sizeof(id), "%016llx", (unsigned long long)run);
	json_object_object_add(r, "role", json_object_new_string(o->remote == WL_REMOTE_LISTEN ? "receiver" : "sender"));
	json_object_object_add(r, o->remote == WL_REMOTE_LISTEN ? "listen" : "connect", json_object_new_string(addr));
	json_object_object_add(r, "run", json_object_new_string(id));
	if (l) {
		json_object_object_add(r, "dev", l->dev[0] ? json_object_new_string(l->dev) : NULL);
		json_object_object_add(r, "dev_kind", json_object_new_string(l->kind));
		json_object_object_add(r, "dev_sg", l->sg < 0 ? NULL : json_object_new_boolean(l->sg));
		json_object_object_add(r, "dev_csum", l->csum < 0 ? NULL : json_object_new_boolean(l->csum));
	}
	if (have_peer_received)
		json_object_object_add(r, "peer_received", json_object_new_uint64(peer_received));
	return r;
}
