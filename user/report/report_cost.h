/* What each copy cost, as text and JSON: CPU time by copy site and kind, from the sampler. */
#ifndef REPORT_COST_H
#define REPORT_COST_H

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>
#include "ledger/ledger.h"

/* The CPU time section of the text report: the sites that copied, the copying share, the rest by
 * kind in one line (@full: a row each), the displaced share, the fixed cost of the paths that
 * avoid a copy. */
void cost_print(FILE *f, const struct ledger *l, bool full);
/* Timed copies (--time-copies), where asked: each site's timed CPU time beside its sampled time. */
void copy_time_print(FILE *f, const struct ledger *l);
/* Site @s's cpu_ns, cpu_samples and ns_per_byte into its JSON object @site (null: not measured). */
void cost_site_json(json_object *site, const struct ledger *l, int s);
/* The top-level "cost" object. */
json_object *cost_json(const struct ledger *l);
/* The top-level "timed_copies" object. */
json_object *copy_time_json(const struct ledger *l);

#endif
