/*
 * The I/O syscalls zctrace follows from entry to return: what each one is (enum io_kind), for the
 * file sites and for the boundary account, and which way its bytes cross.
 */
#ifndef IOCALLS_H
#define IOCALLS_H

#include <stdbool.h>
#include "zctrace.h"

struct io_call_def {
	long nr;		/* this architecture's number */
	enum io_kind kind;
};

/* ZCT_IO_SYSCALLS in order: NR_IO_SYSCALLS entries, entry i the syscall of slot i */
extern const struct io_call_def io_call_defs[];

/* The kind of syscall @nr, IO_NONE if zctrace does not follow it. */
enum io_kind io_kind_of_nr(long nr);
/* Whether @kind is a socket call (send, receive, their mmsg forms), followed for the account alone. */
bool io_kind_socket(enum io_kind kind);
/* Whether a call of @kind moves bytes from the kernel to user memory (a read or a receive). */
bool io_kind_to_user(enum io_kind kind);
/* Whether a call of @kind moves bytes from user memory to the kernel (a write or a send). */
bool io_kind_from_user(enum io_kind kind);

/* An io_uring opcode's name ("SEND", "READV", ...; "op N" if zctrace does not name it). */
const char *uring_op_name(__u32 op);
/* What an io_uring opcode does, as enum io_kind (IO_NONE: not a read, write, send or receive). */
enum io_kind uring_op_kind(__u32 op);

#endif
