/* Syscall numbers and names of this architecture, from the C library's <sys/syscall.h>. */
#ifndef SYSNAMES_H
#define SYSNAMES_H

/* The name of syscall @nr, NULL if it has none or is out of range. */
const char *syscall_name(int nr);
/* The number of syscall @name, -1 if none. */
int syscall_nr(const char *name);

#endif
