/* Built-in workloads: what each one does and what its copy ledger must show. */
#include <string.h>
#include "workloads.h"

const struct workload_def workload_defs[] = {
	{ "tcp-twocopy",
	  "memcpy 8 fields into one buffer (USDT user_copy), then send() over loopback TCP",
	  "user_copy = send_copy = recv_copy = payload; no pins, no page references",
	  { [SITE_USER_COPY] = EXP_SENT, [SITE_SEND_COPY] = EXP_SENT, [SITE_ZC_PIN] = EXP_ZERO,
	    [SITE_SPLICE_REF] = EXP_ZERO, [SITE_DEFERRED_COPY] = EXP_ZERO,
	    [SITE_RECV_COPY] = EXP_RECEIVED } },
	{ "tcp-onecopy",
	  "sendmsg() with an 8-entry iovec over the fields, over loopback TCP",
	  "send_copy = recv_copy = payload; user_copy = 0",
	  { [SITE_USER_COPY] = EXP_ZERO, [SITE_SEND_COPY] = EXP_SENT, [SITE_ZC_PIN] = EXP_ZERO,
	    [SITE_SPLICE_REF] = EXP_ZERO, [SITE_DEFERRED_COPY] = EXP_ZERO,
	    [SITE_RECV_COPY] = EXP_RECEIVED } },
	{ "tcp-zerocopy",
	  "SO_ZEROCOPY + sendmsg(MSG_ZEROCOPY), completions reaped from MSG_ERRQUEUE",
	  "zc_pin = payload, send_copy = 0; on loopback deferred_copy = payload (copied on delivery, "
	  "notices say COPIED); recv_copy = payload",
	  { [SITE_USER_COPY] = EXP_ZERO, [SITE_SEND_COPY] = EXP_ZERO, [SITE_ZC_PIN] = EXP_SENT,
	    [SITE_SPLICE_REF] = EXP_ZERO, [SITE_DEFERRED_COPY] = EXP_SENT,
	    [SITE_RECV_COPY] = EXP_RECEIVED },
	  .zc_notices = true },
	{ "tcp-sendfile",
	  "sendfile() of a page-cached file to the socket",
	  "splice_ref = payload (page references), send_copy = user_copy = 0; recv_copy = payload",
	  { [SITE_USER_COPY] = EXP_ZERO, [SITE_SEND_COPY] = EXP_ZERO, [SITE_ZC_PIN] = EXP_ZERO,
	    [SITE_SPLICE_REF] = EXP_SENT, [SITE_DEFERRED_COPY] = EXP_ZERO,
	    [SITE_RECV_COPY] = EXP_RECEIVED } },
};
const int nr_workload_defs = sizeof(workload_defs) / sizeof(workload_defs[0]);

const struct workload_def *find_workload(const char *name)
{
	for (int i = 0; i < nr_workload_defs; i++)
		if (!strcmp(workload_defs[i].name, name))
			return &workload_defs[i];
	return NULL;
}
