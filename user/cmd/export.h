/* zctrace export: the machine-wide census served over HTTP as Prometheus metrics. */
#ifndef EXPORT_H
#define EXPORT_H

#define EXPORT_DEFAULT_LISTEN "127.0.0.1:9435"

/* argv[0] is "export". Runs until SIGINT or SIGTERM: 0 then, 1 on a failure, 2 on a usage error. */
int cmd_export(int argc, char **argv);

#endif
