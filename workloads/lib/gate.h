/*
 * A one-shot start signal between the processes or threads of a workload, through memory they
 * share and a futex: it moves no bytes through the kernel, so a measured phase that opens it holds
 * its payload alone (a pipe's byte would be a copy of its own).
 */
#ifndef GATE_H
#define GATE_H

struct wl_gate;

/* A closed gate, in memory a forked child shares; NULL and errno on failure. */
struct wl_gate *wl_gate_create(void);
/* Lets every waiter through (go != 0) or turns them back (go == 0). */
void wl_gate_open(struct wl_gate *g, int go);
/* Waits (at most @timeout_ms) for the gate: 0 to go, -ECANCELED if turned back, -ETIMEDOUT. */
int wl_gate_wait(struct wl_gate *g, int timeout_ms);
void wl_gate_free(struct wl_gate *g);

#endif
