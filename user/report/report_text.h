/* The ledger as text: the workload's figures, the copy ledger, the kernel's other figures, checks. */
#ifndef REPORT_TEXT_H
#define REPORT_TEXT_H

#include <stdbool.h>
#include <stdio.h>
#include "ledger/checks.h"
#include "ledger/ledger.h"

struct micro;

/*
 * Prints @l (and a microbenchmark's @m, or NULL) with or without the histograms: in full (every
 * site, the boundary account by call, every counter and check), or the answer first on one
 * screen (the sites that counted, failed checks, one line each for the kernel's other figures).
 */
void ledger_print(FILE *f, const struct ledger *l, const struct micro *m, bool histograms, bool full);

#endif
