// SPDX-License-Identifier: GPL-2.0
/*
 * The census's task iterator: each live thread's counters (census.bpf.h), written whole for user
 * space to read at each census read. A thread that has exited is passed by: its last counters
 * went to the ring buffer.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone).
 */
#include "common.bpf.h"
#include "census.bpf.h"

SEC("iter/task")
int census_iter(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct census_thread *t;

	if (!task)
		return 0;
	t = TASK_STATE(census_thread_counts, task, 0);
	if (!t || !t->serial || t->state == CENSUS_EXITED)
		return 0;
	bpf_seq_write(ctx->meta->seq, t, sizeof(*t));
	return 0;
}
