/* zctrace top: every process's copies on the machine, live. */
#ifndef TOP_H
#define TOP_H

/* argv[0] is "top". Returns the exit status: 0, 1 on a failure, 2 on a usage error. */
int cmd_top(int argc, char **argv);

#endif
