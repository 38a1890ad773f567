/*
 * The receiving side of a network workload. As a thread it shares the process with the sender;
 * as a child process its copies land under its own pid in the ledger, and in the receiver's
 * network namespace (zctrace hands its descriptor over) the bytes cross a veth pair.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "peer.h"

void peer_server_addr(const struct wl_opts *o, struct sockaddr_in *addr)
{
	*addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(o->port) };
	if (o->peer == WL_PEER_NETNS)
		inet_pton(AF_INET, WL_NETNS_SENDER_ADDR, &addr->sin_addr);
	else
		addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static void *thread_main(void *arg)
{
	struct peer_run *p = arg;

	p->ret = p->fn(p->arg);
	return NULL;
}

static int enter_receiver_netns(void)
{
	const char *s = getenv(WL_NETNS_FD_ENV);
	char *end;
	long fd;

	if (!s)
		return -ENOENT;
	fd = strtol(s, &end, 10);
	if (*end || fd < 0 || setns(fd, CLONE_NEWNET))
		return *end || fd < 0 ? -EBADF : -errno;
	close(fd);
	return 0;
}

/*
 * A child process hands its result back in memory it shares with the parent: a pipe would copy
 * it inside the measured phase, under the receiver's pid, and the ledger would show it. The pipe
 * only tells the parent that the child has ended (its end of file).
 */
static int start_process(struct peer_run *p, enum wl_peer mode)
{
	pid_t parent = getpid();
	int pfd[2];

	p->shared = mmap(NULL, sizeof(*p->shared) + p->size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p->shared == MAP_FAILED) {
		p->shared = NULL;
		return -errno;
	}
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	p->pid = fork();
	if (p->pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (p->pid == 0) {
		int err;

		/* never outlive the sender: a killed run leaves no receiver behind */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		close(pfd[0]);
		err = mode == WL_PEER_NETNS ? enter_receiver_netns() : 0;
		if (err) {
			fprintf(stderr, "receiver: cannot enter the receiver's network namespace: %s\n",
				strerror(-err));
			_exit(1);
		}
		err = p->fn(p->arg);
		if (p->size)
			memcpy(p->shared->out, p->out, p->size);
		p->shared->ret = err;
		__atomic_store_n(&p->shared->done, 1, __ATOMIC_RELEASE);
		_exit(err ? 1 : 0);
	}
	close(pfd[1]);
	p->result_fd = pfd[0];
	p->started = true;
	return 0;
}

int peer_start(struct peer_run *p, enum wl_peer mode, int (*fn)(void *arg), void *arg, void *out,
	       size_t size)
{
	int err;

	*p = (struct peer_run){ .mode = mode, .fn = fn, .arg = arg, .out = out, .size = size,
				.pid = -1, .result_fd = -1 };
	if (mode == WL_PEER_THREAD) {
		if (pthread_create(&p->tid, NULL, thread_main, p))
			return -EAGAIN;
		p->started = true;
		return 0;
	}
	err = start_process(p, mode);
	if (err && p->shared) {
		munmap(p->shared, sizeof(*p->shared) + p->size);
		p->shared = NULL;
	}
	return err;
}

int peer_pin(struct peer_run *p, int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	if (!p->started)
		return -ESRCH;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (p->mode == WL_PEER_THREAD)
		return -pthread_setaffinity_np(p->tid, sizeof(set), &set);
	return sched_setaffinity(p->pid, sizeof(set), &set) ? -errno : 0;
}

int peer_wait_readable(struct peer_run *p, int fd, int timeout_ms)
{
	struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN }, { .fd = p->result_fd, .events = POLLIN } };
	int n;

	do
		n = poll(pfd, p->result_fd >= 0 ? 2 : 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	if (pfd[0].revents)
		return 0;
	return -ECHILD;
}

/* Waits (at most @timeout_ms) for the end of file of @fd, a pipe no one writes to. 0 or -errno. */
static int wait_eof(int fd, int timeout_ms)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int k = poll(&pfd, 1, timeout_ms);
		char c;
		ssize_t r;

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -ETIMEDOUT;
		r = read(fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		return r == 0 ? 0 : r < 0 ? -errno : -EPROTO;
	}
}

int peer_wait_done(struct peer_run *p, int timeout_ms)
{
	siginfo_t si;
	int pidfd, n;

	if (!p->started)
		return -ESRCH;
	if (p->mode == WL_PEER_THREAD) {
		if (!p->joined)
			pthread_join(p->tid, NULL);
		p->joined = true;
		return 0;
	}
	/* a pidfd turns readable when the child exits: one poll, bounded */
	pidfd = syscall(SYS_pidfd_open, p->pid, 0);
	if (pidfd < 0)
		return waitid(P_PID, p->pid, &si, WEXITED | WNOWAIT) ? -errno : 0;
	do {
		struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

		n = poll(&pfd, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	close(pidfd);
	return n < 0 ? -errno : n == 0 ? -ETIMEDOUT : 0;
}

int peer_join(struct peer_run *p, int timeout_ms)
{
	int status, err, child_ret = 0;

	if (!p->started)
		return -ESRCH;
	p->started = false;
	if (p->mode == WL_PEER_THREAD) {
		if (!p->joined)
			pthread_join(p->tid, NULL);
		p->joined = true;
		return p->ret;
	}
	err = wait_eof(p->result_fd, timeout_ms);
	close(p->result_fd);
	p->result_fd = -1;
	if (err)
		kill(p->pid, SIGKILL);
	while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
		;
	/* the child's result is there only if it got to the end of fn */
	if (!err && !__atomic_load_n(&p->shared->done, __ATOMIC_ACQUIRE))
		err = -ECHILD;
	if (!err) {
		if (p->size)
			memcpy(p->out, p->shared->out, p->size);
		child_ret = p->shared->ret;
	}
	munmap(p->shared, sizeof(*p->shared) + p->size);
	p->shared = NULL;
	return err ? err : child_ret;
}

pid_t peer_pid(const struct peer_run *p)
{
	return p->mode == WL_PEER_THREAD ? getpid() : p->pid;
}

void peer_report(json_object *r, const struct wl_opts *o, const struct peer_run *p)
{
	json_object *link = json_object_new_object();

	json_object_object_add(r, WL_KEY_PEER, json_object_new_string(wl_peer_name(o->peer)));
	json_object_object_add(r, WL_KEY_PATH, json_object_new_string(o->peer == WL_PEER_NETNS ? "veth" : "loopback"));
	json_object_object_add(r, WL_KEY_SENDER_PID, json_object_new_int(getpid()));
	json_object_object_add(r, WL_KEY_RECEIVER_PID, json_object_new_int(peer_pid(p)));
	json_object_object_add(link, "rate", o->rate ? json_object_new_string(o->rate) : NULL);
	json_object_object_add(link, "delay", o->delay ? json_object_new_string(o->delay) : NULL);
	json_object_object_add(r, "link", link);
}
