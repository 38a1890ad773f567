/* Microbenchmarks in the ledger: per-step kernel figures, assumptions, distributions. */
#ifndef MICRO_H
#define MICRO_H

#include "ledger.h"

void micro_collect(struct ledger *l, struct zctrace_bpf *obj);
void micro_check(struct ledger *l);
void micro_print(FILE *f, const struct ledger *l, bool histograms);
void micro_json(json_object *root, const struct ledger *l);

#endif
