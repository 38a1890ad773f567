/* The live view of `zctrace run -i SECS`: per-interval and cumulative figures while a run goes on. */
#ifndef LIVE_H
#define LIVE_H

#include <stdbool.h>
#include <stdio.h>
#include "trace/probes.h"

struct zctrace_bpf;
struct live;

/* On a terminal the view redraws in place; otherwise it prints one timestamped block per interval. */
struct live *live_new(double interval_s, FILE *out, const char *target, const struct probe_choice *choice);
/* Draws when an interval has passed since the last drawing; call it often. */
void live_tick(struct live *lv, struct zctrace_bpf *obj);
/* Number of blocks drawn so far. */
int live_draws(const struct live *lv);
void live_free(struct live *lv);

#endif
