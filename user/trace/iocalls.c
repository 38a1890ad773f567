/* The I/O syscalls zctrace follows (iocalls.h), by this architecture's numbers. */
#include <stdio.h>
#include <sys/syscall.h>
#include <linux/io_uring.h>
#include "trace/iocalls.h"

/* sendfile's function is sendfile64 where its number is sendfile's (every 64-bit architecture) */
#if !defined(SYS_sendfile64) && defined(SYS_sendfile)
#define SYS_sendfile64 SYS_sendfile
#endif
#define IO_CALL_DEF(name, kind) { SYS_##name, kind },

/* zctrace.h's list, in its order: entry i is the syscall of slot i (enum io_syscall) */
const struct io_call_def io_call_defs[] = { ZCT_IO_SYSCALLS(IO_CALL_DEF) };
_Static_assert(sizeof(io_call_defs) / sizeof(io_call_defs[0]) == NR_IO_SYSCALLS, "one entry per enum io_syscall");

enum io_kind io_kind_of_nr(long nr)
{
	for (int i = 0; i < NR_IO_SYSCALLS; i++)
		if (io_call_defs[i].nr == nr)
			return io_call_defs[i].kind;
	return IO_NONE;
}

bool io_kind_socket(enum io_kind kind)
{
	return kind == IO_SEND || kind == IO_RECV || kind == IO_SENDMMSG || kind == IO_RECVMMSG;
}

bool io_kind_to_user(enum io_kind kind)
{
	return kind == IO_READ || kind == IO_RECV || kind == IO_RECVMMSG;
}

bool io_kind_from_user(enum io_kind kind)
{
	return kind == IO_WRITE || kind == IO_SEND || kind == IO_SENDMMSG;
}

/* The io_uring operations that move bytes between user memory and a file or socket. */
static const struct {
	__u32 op;
	const char *name;
	enum io_kind kind;
} uring_ops[] = {
	{ IORING_OP_READV, "READV", IO_READ }, { IORING_OP_READ_FIXED, "READ_FIXED", IO_READ },
	{ IORING_OP_READ, "READ", IO_READ },
	{ IORING_OP_WRITEV, "WRITEV", IO_WRITE }, { IORING_OP_WRITE_FIXED, "WRITE_FIXED", IO_WRITE },
	{ IORING_OP_WRITE, "WRITE", IO_WRITE },
	{ IORING_OP_SENDMSG, "SENDMSG", IO_SEND }, { IORING_OP_SEND, "SEND", IO_SEND },
	{ IORING_OP_SEND_ZC, "SEND_ZC", IO_SEND }, { IORING_OP_SENDMSG_ZC, "SENDMSG_ZC", IO_SEND },
	{ IORING_OP_RECVMSG, "RECVMSG", IO_RECV }, { IORING_OP_RECV, "RECV", IO_RECV },
};

const char *uring_op_name(__u32 op)
{
	static __thread char buf[16];

	for (unsigned i = 0; i < sizeof(uring_ops) / sizeof(uring_ops[0]); i++)
		if (uring_ops[i].op == op)
			return uring_ops[i].name;
	snprintf(buf, sizeof(buf), "op %u", op);
	return buf;
}

enum io_kind uring_op_kind(__u32 op)
{
	for (unsigned i = 0; i < sizeof(uring_ops) / sizeof(uring_ops[0]); i++)
		if (uring_ops[i].op == op)
			return uring_ops[i].kind;
	return IO_NONE;
}
