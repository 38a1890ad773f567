/*
 * The boundary account held against the sites: the bytes the targets' I/O calls moved between user
 * memory and the kernel (counted at each call's return, by call and file type) beside the bytes of
 * the sites that explain such moves. What no site explains is "unattributed", with the calls and
 * file types it came through.
 */
#ifndef BOUNDARY_H
#define BOUNDARY_H

#include <stdbool.h>
#include <stddef.h>
#include "trace/kfigures.h"
#include "trace/sites.h"

#define MAX_GROUP_SITES 4

/* Calls of some file types in one direction, and the sites that explain their bytes. */
struct boundary_group {
	const char *name;		/* "TCP/UDP send", ... */
	unsigned types;			/* 1 << enum fd_type */
	int dir;			/* BOUNDARY_TO_USER, BOUNDARY_FROM_USER or both */
	int sites[MAX_GROUP_SITES];	/* enum site */
	int nsites;
};

#define BOUNDARY_TO_USER 1
#define BOUNDARY_FROM_USER 2

extern const struct boundary_group boundary_groups[];
extern const int nr_boundary_groups;

struct boundary_fig {
	__u64 account;		/* bytes the calls moved, by their returns */
	__u64 calls;
	__u64 unsized;		/* calls whose bytes their return does not give */
	__u64 sites;		/* bytes the group's measured sites counted */
	__u64 unattributed;	/* account - sites, where positive */
	__u64 over;		/* sites - account, where positive: bytes the sites saw outside these calls */
	bool site_missing;	/* a site of the group measured nothing on this kernel */
};

struct boundary {
	bool measured;		/* the account was kept (its probe attached) */
	struct boundary_fig g[16];
	__u64 unattributed;	/* over every group */
	__u64 unsized;
};

/* Holds the account in @k against the sites, each counted through @method[site] (METHOD_NONE: not). */
void boundary_explain(const struct kfigures *k, const enum method *method, bool measured, struct boundary *b);
/* "UDP receive 2800000 B (a site not measured), ...": the groups with unattributed bytes. */
void boundary_summary(const struct boundary *b, char *buf, size_t n);
/* The group of account row @key, or -1. */
int boundary_group_of(const struct account_key *key);
/* "sendto", "io_uring SEND", ...: the name of an account row's call. */
const char *account_call_name(__u32 call, char *buf, size_t n);
/* "UDP socket", "pipe", ...: the name of a file type. */
const char *fd_type_name(__u32 type);

#endif
