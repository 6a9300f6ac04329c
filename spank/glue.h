/*
 * State shared by the SPANK callbacks of one process (srun, sbatch, salloc
 * or slurmstepd).  Plain C data with static storage: nothing runs at load
 * time, and slurmstepd's tasks inherit it by fork.
 */
#ifndef DIST_BIND_GLUE_H
#define DIST_BIND_GLUE_H

#include <slurm/spank.h>

#include "db_core.h"

#define DB_PREFIX "dist-bind: "
#define DB_OPT_MAX 256

struct db_glue {
    db_config cfg;
    int cfg_ok;
    char cfg_err[DB_ERRLEN];

    int opt_given;  /* --dist-bind was on the command line (or inherited) */
    int opt_ok;
    db_request opt;
    char opt_err[DB_ERRLEN];

    db_node_plan *node;  /* slurmstepd: computed in user_init */
    int node_failed;
};

extern struct db_glue db_glue;

/* What applies to this step: the option if given, else the admin default. */
db_request db_glue_effective(void);

/* srun: slurm_spank_local_user_init. */
int db_local_user_init(spank_t sp);
/* srun: set (or clear) DB_DEVICES_HINT for the step's tasks. */
void db_local_devices_hint(spank_t sp, const db_request *eff);

/* slurmstepd: slurm_spank_user_init, slurm_spank_task_init, slurm_spank_exit. */
int db_remote_user_init(spank_t sp);
int db_remote_task_init(spank_t sp);
void db_remote_exit(void);

#endif
