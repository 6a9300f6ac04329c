/* srun side: what local.c and srun_devices.c both use (srun_common.c). */
#ifndef DIST_BIND_SRUN_COMMON_H
#define DIST_BIND_SRUN_COMMON_H

#include "state.h"

/* srun's own command line, read once per srun (/proc/self/cmdline). */
struct db_cmdline {
    char *buf;
    const char **argv;
    int argc;
    int complete; /* 0: longer than fits, cut short, or unreadable */
};

/* Reads srun's command line into `cl` (argc 0 and complete 0 where it
 * cannot); free with db_cmdline_free. */
void db_cmdline_read(struct db_cmdline *cl);
void db_cmdline_free(struct db_cmdline *cl);

/* A message the user sees with --dist-bind=...,verbose (and otherwise
 * with srun -v). */
void db_local_say(const db_request *eff, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
