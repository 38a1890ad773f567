/* zctrace sweep: a grid of traced runs, one CSV or JSON row per run. */
#ifndef SWEEP_H
#define SWEEP_H

/* argv[0] is "sweep". Returns the exit status: 0 all runs ok, 1 some run failed, 2 usage error. */
int cmd_sweep(int argc, char **argv);

#endif
