/* zctrace floor: a run with empty BPF programs at the tracer's attach points, the cost of attaching alone. */
#ifndef FLOOR_H
#define FLOOR_H

/* argv[0] is "floor". Returns the workload's or command's exit status, 1 on a failure, 2 on a usage error. */
int cmd_floor(int argc, char **argv);

#endif
