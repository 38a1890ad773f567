/* zctrace run: trace a workload, a command or a running process, and report its copy ledger. */
#ifndef RUN_H
#define RUN_H

struct zctrace_bpf;
struct probe_choice;

/* argv[0] is "run". Returns the exit status: 0 when every check held, 1 when one failed, 2 on a usage error. */
int cmd_run(int argc, char **argv);
/*
 * `zctrace run` (@argv[0] is "run") under tracer @obj, loaded and attached with @choice for the
 * run's workload (tracer_opts_for()), its USDT programs attached to the workload's binary for every
 * process (target_attach_usdt()): a built-in workload's traced pass alone. The tracer is reset
 * first and left attached at the end, for the next run under it.
 */
int run_under(int argc, char **argv, struct zctrace_bpf *obj, struct probe_choice *choice);

#endif
