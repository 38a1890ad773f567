/*
 * How the CLI's commands wait: the monotonic clock, short sleeps, and the stop signal (SIGINT,
 * SIGTERM, SIGHUP) that ends a wait early.
 */
#ifndef CLOCK_H
#define CLOCK_H

#include <signal.h>

/* The signal that asked the command to stop, or 0. Polled by the wait loops. */
extern volatile sig_atomic_t stop_signal;

/*
 * From here SIGINT, SIGTERM and SIGHUP set stop_signal instead of killing the process, so the
 * command can stop what it started and still report. Without SA_RESTART: a blocking call returns
 * EINTR and the loop around it sees the signal.
 */
void catch_stop_signals(void);
/*
 * ... and a write or read a stop signal interrupts goes on (SA_RESTART): a table half written
 * to a slow reader is finished, not lost. Waits (sleep_ms()) still end at the signal.
 */
void restart_after_stop_signals(void);
void sleep_ms(int ms);
/* CLOCK_MONOTONIC, in seconds. */
double now_s(void);

#endif
