/* Syscall numbers and names (sysnames.h), generated from <sys/syscall.h> at build time. */
#include <string.h>
#include "os/sysnames.h"
#include "zctrace.h"

static const char *const syscall_names[MAX_SYSCALLS] = {
#include "syscall_names.h"
};

const char *syscall_name(int nr)
{
	return nr >= 0 && nr < MAX_SYSCALLS && syscall_names[nr] ? syscall_names[nr] : NULL;
}

int syscall_nr(const char *name)
{
	for (int nr = 0; nr < MAX_SYSCALLS; nr++)
		if (syscall_names[nr] && !strcmp(syscall_names[nr], name))
			return nr;
	return -1;
}
