/* The tracer's effect (ledger/effect.h) as text. */
#ifndef REPORT_EFFECT_H
#define REPORT_EFFECT_H

#include <stdbool.h>
#include <stdio.h>
#include "ledger/effect.h"

/*
 * "tracer effect" lines: each figure traced, untraced, their ratio and what the tracer did; not
 * @full: one line of ratios.
 */
void effect_print(FILE *f, const struct effect *e, bool full);

#endif
