/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Each CPU's socket call slot (maps.bpf.h's sock_call_slots): the socket call the running thread is
 * in, opened at its entry, typed where its socket returns its length, taken at its exit.
 */
#ifndef ZCTRACE_SOCKCALL_BPF_H
#define ZCTRACE_SOCKCALL_BPF_H
#include "common.bpf.h"
#include "maps.bpf.h"

static __always_inline __u64 *sock_call_slot(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&sock_call_slots, &zero);
}

/* Thread @tid enters socket call @nr (@kind): this CPU's slot is its. */
static __always_inline void open_sock_call(__u32 tid, __u32 nr, __u8 kind)
{
	__u64 *slot = sock_call_slot();

	if (slot)
		*slot = SOCK_SLOT(tid, nr, kind);
}

/*
 * Socket call @nr returns: the type of the socket that returned its length (enum fd_type + 1),
 * iocall.bpf.h's RW_FILE_MARK where a file event kept a read's or write's call, or 0 where neither
 * happened while its thread stayed on the CPU. The slot is cleared.
 */
static __always_inline __u8 sock_call_type(__u32 nr)
{
	__u64 *slot, w;

	if (!socket_lengths)
		return 0;	/* before the lookup: on 6.1 every lookup is a helper call */
	slot = sock_call_slot();
	if (!slot)
		return 0;
	w = *slot;
	*slot = 0;
	return SOCK_SLOT_NR(w) == (nr & 0xffff) ? SOCK_SLOT_TYPE(w) : 0;
}

#endif /* ZCTRACE_SOCKCALL_BPF_H */
