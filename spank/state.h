/*
 * The state of the SPANK callbacks of one process (srun, sbatch, salloc or
 * slurmstepd): the admin's configuration, the user's --dist-bind, and on a
 * node the node's plan.  Plain C data in one instance, `db_state`
 * (state.c): nothing runs at load time, and slurmstepd's tasks inherit it
 * by fork.  A leaf: every other file of spank/ reads it, it calls none of
 * them.
 */
#ifndef DIST_BIND_STATE_H
#define DIST_BIND_STATE_H

#include <slurm/spank.h>

#include "db_core.h"

#define DB_PREFIX "dist-bind: "
#define DB_OPT_MAX 256

struct db_glue {
    db_config cfg;
    int cfg_ok;
    char cfg_err[DB_ERRLEN];

    int opt_given; /* --dist-bind was on the command line (or inherited) */
    int opt_ok;
    db_request opt;
    char opt_err[DB_ERRLEN];

    db_node_plan *node; /* slurmstepd: computed in user_init */
    int node_failed;
};

/* The process's one instance. */
extern struct db_glue db_state;

/* What applies to this step: the option if given, else the admin default. */
db_request db_glue_effective(const struct db_glue *g);
/* The command already failed on a bad plugstack.conf or --dist-bind value
 * (with its message): nothing more to do. */
int db_glue_refused(const struct db_glue *g);

#endif
