/* The ledger as JSON: the same figures as the text report, null where one was not measured. */
#ifndef REPORT_JSON_H
#define REPORT_JSON_H

#include <json-c/json.h>
#include "ledger/ledger.h"

struct micro;

/* A new JSON object of @l (and of a microbenchmark's @m, or NULL); the caller puts it. */
json_object *ledger_json(const struct ledger *l, const struct micro *m);

#endif
