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

/* srun's words to the nodes (DB_WORD_PREFIX in db_core.h).  First, from
 * srun's command line (NULL: unread) and SLURM_EXPORT_ENV, whether srun
 * passes its whole environment; where it does not, or that cannot be
 * told, each word is also set under its carried name. */
void db_srun_words_route(const struct db_cmdline *cl);
/* One word, named by its DB_CARRIED name, into srun's environment under
 * its plain name (and the carried one where routed so): 0, or -1 where
 * setenv failed. */
int db_srun_pass(const char *carried, const char *value);
/* Takes a word (both names) out of srun's environment: never pass on a
 * value from the user's or an enclosing task's environment. */
void db_srun_drop(const char *carried);

/* A message the user sees with --dist-bind=...,verbose (and otherwise
 * with srun -v). */
void db_local_say(const db_request *eff, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
