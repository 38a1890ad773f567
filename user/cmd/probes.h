/* zctrace probes: the method each probe site takes on this kernel, and why. */
#ifndef CMD_PROBES_H
#define CMD_PROBES_H

int cmd_probes(int argc, char **argv);

#endif
