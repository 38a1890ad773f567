// SPDX-License-Identifier: GPL-2.0
/*
 * USDT: the workloads' own copies (user_copy), their measured phase and microbenchmark steps.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone): each site keeps all
 * its methods here, for every kernel.
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "filter.bpf.h"
#include "slots.bpf.h"

/* ---- USDT: the workloads' own copies and their measured phase -------------------------------- */

SEC("usdt")
int BPF_USDT(user_copy_usdt, __u64 bytes, __u64 ncopies)
{
	__u32 tgid = current_tgid();

	if (is_target(tgid))
		record_n(tgid, SITE_USER_COPY, bytes, ncopies);
	return 0;
}

SEC("usdt")
int BPF_USDT(phase_begin_usdt)
{
	if (is_target(current_tgid())) {
		phase_active = 1;
		__sync_fetch_and_add(&misc.phase_begins, 1);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(phase_end_usdt)
{
	if (is_target(current_tgid())) {
		phase_active = 0;
		__sync_fetch_and_add(&misc.phase_ends, 1);
	}
	return 0;
}

/* A microbenchmark's numbered step begins (id > 0) or ends (0). */
SEC("usdt")
int BPF_USDT(step_usdt, __u32 id)
{
	if (is_target(current_tgid())) {
		step_now = id < MAX_STEPS ? id : 0;
		__sync_fetch_and_add(&misc.step_marks, 1);
	}
	return 0;
}
