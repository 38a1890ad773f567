/* The boundary account held against the sites (boundary.h). */
#include <stdio.h>
#include <string.h>
#include "trace/boundary.h"
#include "trace/iocalls.h"
#include "os/sysnames.h"

#define T(x) (1u << (x))
#define BOTH (BOUNDARY_TO_USER | BOUNDARY_FROM_USER)

/*
 * Which sites explain the bytes of which calls. A pin explains a send as well as a copy does (the
 * bytes crossed); zc_pin serves TCP and UDP alike, so their sends are one group.
 */
const struct boundary_group boundary_groups[] = {
	{ "regular file read", T(FT_REG), BOUNDARY_TO_USER, { SITE_FILE_READ_COPY }, 1 },
	{ "regular file write", T(FT_REG), BOUNDARY_FROM_USER, { SITE_FILE_WRITE_COPY }, 1 },
	{ "O_DIRECT file", T(FT_REG_DIRECT), BOTH, { SITE_DIRECT_IO }, 1 },
	{ "pipe write", T(FT_PIPE), BOUNDARY_FROM_USER, { SITE_PIPE_WRITE_COPY }, 1 },
	{ "pipe read", T(FT_PIPE), BOUNDARY_TO_USER, { SITE_PIPE_READ_COPY }, 1 },
	{ "TCP/UDP send", T(FT_TCP) | T(FT_UDP), BOUNDARY_FROM_USER,
	  { SITE_SEND_COPY, SITE_UDP_SEND_COPY, SITE_ZC_PIN }, 3 },
	{ "TCP receive", T(FT_TCP), BOUNDARY_TO_USER, { SITE_RECV_COPY }, 1 },
	{ "UDP receive", T(FT_UDP), BOUNDARY_TO_USER, { SITE_UDP_RECV_COPY }, 1 },
	{ "Unix socket send", T(FT_UNIX_STREAM) | T(FT_UNIX_DGRAM), BOUNDARY_FROM_USER, { SITE_UNIX_SEND_COPY }, 1 },
	{ "Unix socket receive", T(FT_UNIX_STREAM) | T(FT_UNIX_DGRAM), BOUNDARY_TO_USER, { SITE_UNIX_RECV_COPY }, 1 },
	{ "other files", T(FT_OTHER) | T(FT_SOCK_OTHER), BOTH, { 0 }, 0 },
};

const int nr_boundary_groups = sizeof(boundary_groups) / sizeof(boundary_groups[0]);

_Static_assert(sizeof(boundary_groups) / sizeof(boundary_groups[0]) <=
	       sizeof(((struct boundary *)0)->g) / sizeof(((struct boundary *)0)->g[0]), "room for every group");

static const char *const fd_type_names[NR_FD_TYPES] = {
	[FT_OTHER] = "other file", [FT_REG] = "regular file", [FT_REG_DIRECT] = "O_DIRECT file",
	[FT_PIPE] = "pipe", [FT_TCP] = "TCP socket", [FT_UDP] = "UDP socket",
	[FT_UNIX_STREAM] = "Unix stream socket", [FT_UNIX_DGRAM] = "Unix datagram socket",
	[FT_SOCK_OTHER] = "other socket",
};

const char *fd_type_name(__u32 type)
{
	return type < NR_FD_TYPES ? fd_type_names[type] : "?";
}

const char *account_call_name(__u32 call, char *buf, size_t n)
{
	const char *name = call < MAX_SYSCALLS ? syscall_name(call) : NULL;

	if (call == ACCOUNT_FOLDED)
		snprintf(buf, n, "other calls");
	else if (call >= IO_URING_CALL)
		snprintf(buf, n, "io_uring %s", uring_op_name(call - IO_URING_CALL));
	else if (name)
		snprintf(buf, n, "%s", name);
	else
		snprintf(buf, n, "syscall %u", call);
	return buf;
}

/* Which way a row's bytes went: BOUNDARY_TO_USER, BOUNDARY_FROM_USER, or both if unknown. */
static int call_dir(__u32 call)
{
	enum io_kind kind = call < MAX_SYSCALLS ? io_kind_of_nr(call) :
			    call >= IO_URING_CALL && call != ACCOUNT_FOLDED ? uring_op_kind(call - IO_URING_CALL) :
			    IO_NONE;

	if (io_kind_to_user(kind))
		return BOUNDARY_TO_USER;
	if (io_kind_from_user(kind))
		return BOUNDARY_FROM_USER;
	return BOTH;
}

int boundary_group_of(const struct account_key *key)
{
	int dir = call_dir(key->call);

	for (int g = 0; g < nr_boundary_groups; g++)
		if ((boundary_groups[g].types & T(key->fd_type)) && (boundary_groups[g].dir & dir))
			return g;
	return nr_boundary_groups - 1;	/* "other files" */
}

void boundary_explain(const struct kfigures *k, const enum method *method, bool measured, struct boundary *b)
{
	memset(b, 0, sizeof(*b));
	b->measured = measured;
	if (!measured)
		return;
	for (int i = 0; i < k->nacct; i++) {
		struct boundary_fig *g = &b->g[boundary_group_of(&k->acct_key[i])];

		g->account += k->acct[i].bytes;
		g->calls += k->acct[i].calls;
		g->unsized += k->acct[i].unsized;
		b->unsized += k->acct[i].unsized;
	}
	for (int i = 0; i < nr_boundary_groups; i++) {
		struct boundary_fig *g = &b->g[i];

		for (int s = 0; s < boundary_groups[i].nsites; s++) {
			int site = boundary_groups[i].sites[s];

			if (method[site] == METHOD_NONE)
				g->site_missing = true;
			else
				g->sites += k->site[site].bytes;
		}
		g->unattributed = g->account > g->sites ? g->account - g->sites : 0;
		g->over = g->sites > g->account ? g->sites - g->account : 0;
		b->unattributed += g->unattributed;
	}
}

void boundary_summary(const struct boundary *b, char *buf, size_t n)
{
	size_t used = 0;

	buf[0] = 0;
	for (int i = 0; i < nr_boundary_groups && used < n; i++) {
		const struct boundary_fig *g = &b->g[i];

		if (!g->unattributed)
			continue;
		used += snprintf(buf + used, n - used, "%s%s %llu B%s", used ? ", " : "", boundary_groups[i].name,
				 (unsigned long long)g->unattributed,
				 !boundary_groups[i].nsites ? " (no site for it)" :
				 g->site_missing ? " (a site not measured)" : "");
	}
}
