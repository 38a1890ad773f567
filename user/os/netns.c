/*
 * Two hosts on one machine, as the kernel's msg_zerocopy.sh does it: two network namespaces
 * joined by a veth pair. iproute2 makes them (ip, tc); zctrace keeps each namespace by an open
 * descriptor and drops the names at once, so an interrupted or killed run leaves nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "os/netns.h"
#include "contract/opts.h"

#define IP_TIMEOUT_MS 10000	/* one ip or tc command */
#define CAP_NET_ADMIN_BIT 12
#define CAP_SYS_ADMIN_BIT 21

const char *netns_missing_rights(void)
{
	char line[256];
	unsigned long long eff = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return "cannot read /proc/self/status";
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			found = true;
	fclose(f);
	if (!found)
		return "no CapEff in /proc/self/status";
	if (!(eff & (1ULL << CAP_SYS_ADMIN_BIT)))
		return "CAP_SYS_ADMIN";
	if (!(eff & (1ULL << CAP_NET_ADMIN_BIT)))
		return "CAP_NET_ADMIN";
	return NULL;
}

/* Runs one command, bounded in time; on failure, why goes to @why (its first line of stderr). */
static int run_cmd(char *const argv[], char *why, size_t n)
{
	int pfd[2], status;
	char out[512];
	size_t len = 0;
	pid_t pid;
	struct timespec t0, t;

	if (pipe2(pfd, O_CLOEXEC)) {
		snprintf(why, n, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(why, n, "fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		/* its own group: a Ctrl-C at the terminal is zctrace's to handle, not ip's */
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		dup2(null, 0);
		dup2(null, 1);
		dup2(pfd[1], 2);
		execvp(argv[0], argv);
		fprintf(stderr, "%s not found (iproute2 is needed: apt-get install iproute2)\n", argv[0]);
		_exit(127);
	}
	close(pfd[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		long waited;
		ssize_t r;

		clock_gettime(CLOCK_MONOTONIC, &t);
		waited = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (waited >= IP_TIMEOUT_MS) {
			kill(pid, SIGKILL);
			snprintf(out, sizeof(out), "no answer in %d s", IP_TIMEOUT_MS / 1000);
			len = strlen(out);
			break;
		}
		if (poll(&p, 1, IP_TIMEOUT_MS - waited) <= 0)
			continue;
		r = read(pfd[0], out + len, sizeof(out) - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += r;
		if (len == sizeof(out) - 1)
			break;
	}
	close(pfd[0]);
	out[len] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	out[strcspn(out, "\n")] = '\0';
	snprintf(why, n, "%s", *out ? out : "failed");
	return -1;
}

static __u32 ns_inode(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

static int open_named(const char *name, __u32 *ino)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		*ino = ns_inode(fd);
	return fd;
}

/* Removes the names; a namespace still held open (by zctrace or its processes) lives on. */
static void drop_names(struct netns_pair *np)
{
	char why[256];

	if (np->sender_named) {
		char *const argv[] = { "ip", "netns", "del", np->sender, NULL };

		if (run_cmd(argv, why, sizeof(why)))
			fprintf(stderr, "zctrace: cannot remove network namespace %s: %s\n", np->sender, why);
		np->sender_named = false;
	}
	if (np->receiver_named) {
		char *const argv[] = { "ip", "netns", "del", np->receiver, NULL };

		if (run_cmd(argv, why, sizeof(why)))
			fprintf(stderr, "zctrace: cannot remove network namespace %s: %s\n", np->receiver, why);
		np->receiver_named = false;
	}
}

void netns_init(struct netns_pair *np)
{
	int host = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	*np = (struct netns_pair){ .sender_fd = -1, .receiver_fd = -1 };
	np->host_ino = host >= 0 ? ns_inode(host) : 0;
	if (host >= 0)
		close(host);
}

int netns_setup(struct netns_pair *np, volatile sig_atomic_t *stop)
{
	char saddr[32], raddr[32], why[256] = "", *step = "";
	pid_t me = getpid();
	snprintf(np->sender, sizeof(np->sender), "zctrace-%d-tx", me);
	snprintf(np->receiver, sizeof(np->receiver), "zctrace-%d-rx", me);
	snprintf(np->sender_dev, sizeof(np->sender_dev), "zct-%d-tx", me);
	snprintf(np->receiver_dev, sizeof(np->receiver_dev), "zct-%d-rx", me);
	snprintf(saddr, sizeof(saddr), "%s/%d", WL_NETNS_SENDER_ADDR, WL_NETNS_PREFIX);
	snprintf(raddr, sizeof(raddr), "%s/%d", WL_NETNS_RECEIVER_ADDR, WL_NETNS_PREFIX);

#define STEP(what, ...)									\
	do {										\
		char *const argv_[] = { __VA_ARGS__, NULL };				\
		step = what;								\
		if (*stop || run_cmd(argv_, why, sizeof(why)))				\
			goto fail;							\
	} while (0)

	STEP("ip netns add", "ip", "netns", "add", np->receiver);
	np->receiver_named = true;
	STEP("ip netns add", "ip", "netns", "add", np->sender);
	np->sender_named = true;
	STEP("ip link add veth", "ip", "-n", np->sender, "link", "add", np->sender_dev, "type", "veth",
	     "peer", "name", np->receiver_dev, "netns", np->receiver);
	STEP("ip addr add", "ip", "-n", np->sender, "addr", "add", saddr, "dev", np->sender_dev);
	STEP("ip addr add", "ip", "-n", np->receiver, "addr", "add", raddr, "dev", np->receiver_dev);
	STEP("ip link set up", "ip", "-n", np->sender, "link", "set", np->sender_dev, "up");
	STEP("ip link set up", "ip", "-n", np->receiver, "link", "set", np->receiver_dev, "up");
	STEP("ip link set lo up", "ip", "-n", np->sender, "link", "set", "lo", "up");
	STEP("ip link set lo up", "ip", "-n", np->receiver, "link", "set", "lo", "up");
	/* shaping on the sender's end: the data's direction; the ACKs come back unshaped */
	if (np->delay && np->rate)
		STEP("tc qdisc add netem (is CONFIG_NET_SCH_NETEM in this kernel?)", "tc", "-n", np->sender,
		     "qdisc", "add", "dev", np->sender_dev, "root", "netem", "delay", (char *)np->delay,
		     "rate", (char *)np->rate, "limit", "100000");
	else if (np->delay)
		STEP("tc qdisc add netem (is CONFIG_NET_SCH_NETEM in this kernel?)", "tc", "-n", np->sender,
		     "qdisc", "add", "dev", np->sender_dev, "root", "netem", "delay", (char *)np->delay,
		     "limit", "100000");
	else if (np->rate)
		/* a burst above the 64 KiB GSO packets veth carries, or tbf would split them */
		STEP("tc qdisc add tbf", "tc", "-n", np->sender, "qdisc", "add", "dev", np->sender_dev,
		     "root", "tbf", "rate", (char *)np->rate, "burst", "256kb", "latency", "100ms");
#undef STEP

	step = "open /run/netns";
	np->sender_fd = open_named(np->sender, &np->sender_ino);
	np->receiver_fd = open_named(np->receiver, &np->receiver_ino);
	if (np->sender_fd < 0 || np->receiver_fd < 0) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
		goto fail;
	}
	/* held by descriptor from here on: the names can go */
	drop_names(np);
	if (*stop)
		goto fail;
	return 0;
fail:
	if (*stop)
		fprintf(stderr, "zctrace: interrupted while setting up the network namespaces\n");
	else
		fprintf(stderr, "zctrace: cannot set up the network namespaces: %s: %s\n", step, why);
	netns_teardown(np);
	return -1;
}

void netns_teardown(struct netns_pair *np)
{
	drop_names(np);
	if (np->sender_fd >= 0)
		close(np->sender_fd);
	if (np->receiver_fd >= 0)
		close(np->receiver_fd);
	np->sender_fd = np->receiver_fd = -1;
}

const char *netns_role(const struct netns_pair *np, __u32 ino)
{
	if (np && ino && ino == np->sender_ino)
		return "sender";
	if (np && ino && ino == np->receiver_ino)
		return "receiver";
	if (np && ino && ino == np->host_ino)
		return "host";
	return NULL;
}
