/* A one-shot start signal through shared memory and a futex (gate.h). */
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "gate.h"

#define GATE_CLOSED 0
#define GATE_GO 1
#define GATE_BACK 2

struct wl_gate {
	uint32_t state;
};

struct wl_gate *wl_gate_create(void)
{
	struct wl_gate *g = mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (g == MAP_FAILED)
		return NULL;
	g->state = GATE_CLOSED;
	return g;
}

void wl_gate_open(struct wl_gate *g, int go)
{
	__atomic_store_n(&g->state, go ? GATE_GO : GATE_BACK, __ATOMIC_RELEASE);
	/* shared, not private: the waiter may be another process */
	syscall(SYS_futex, &g->state, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int wl_gate_wait(struct wl_gate *g, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	uint32_t s;

	while ((s = __atomic_load_n(&g->state, __ATOMIC_ACQUIRE)) == GATE_CLOSED) {
		int64_t left = deadline - now_ms();
		struct timespec ts = { left / 1000, (left % 1000) * 1000000 };

		if (left <= 0)
			return -ETIMEDOUT;
		/* EAGAIN: opened meanwhile; EINTR, ETIMEDOUT: the loop looks again */
		syscall(SYS_futex, &g->state, FUTEX_WAIT, GATE_CLOSED, &ts, NULL, 0);
	}
	return s == GATE_GO ? 0 : -ECANCELED;
}

void wl_gate_free(struct wl_gate *g)
{
	if (g)
		munmap(g, sizeof(*g));
}
