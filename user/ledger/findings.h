/* What a ledger's figures mean, in plain words: the findings the report prints and the JSON carries. */
#ifndef LEDGER_FINDINGS_H
#define LEDGER_FINDINGS_H

#include "ledger/ledger.h"

#define FINDINGS_MAX 24

struct findings {
	int n;
	char line[FINDINGS_MAX][512];	/* one sentence each, ending in a full stop */
};

/*
 * What the kernel did with the payload (@payload bytes, 0 if unknown): pinned instead of copied,
 * copied later or on transmit, referenced, copied twice through a pipe, ... into @o.
 */
void ledger_findings(const struct ledger *l, double payload, struct findings *o);

#endif
