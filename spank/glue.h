/*
 * State of the SPANK callbacks of one process (srun, sbatch, salloc or
 * slurmstepd).  Plain C data; its one instance is file-static in
 * dist_bind.c, which hands it to local.c and remote.c: nothing runs at load
 * time, and slurmstepd's tasks inherit it by fork.
 */
#ifndef DIST_BIND_GLUE_H
#define DIST_BIND_GLUE_H

#include <slurm/spank.h>

#include "db_core.h"
#include "slurm_api.h"

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

/* What applies to this step: the option if given, else the admin default. */
db_request db_glue_effective(const struct db_glue *g);

/* srun: slurm_spank_local_user_init. */
int db_local_user_init(spank_t sp, const struct db_glue *g);
/* srun, init_post_opt: -1 (with one message) for a step that asks for
 * dist-bind under `srun --async`. */
int db_local_refuse_async(const struct db_glue *g);
/* srun, init_post_opt: draw the step's secret (DB_SECRET_VAR) into srun's
 * environment. */
int db_local_secret(const struct db_glue *g);
/* srun, init_post_opt: set (or clear) DB_DEVICES_HINT for the step's
 * tasks, every component's. */
void db_local_devices_hint(const struct db_glue *g);

/* srun: a message the user sees with --dist-bind=...,verbose (and
 * otherwise with srun -v). */
void db_local_say(const db_request *eff, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* srun: its own command line (/proc/self/cmdline), at most `max` words in
 * `buf`; *complete is 0 where it was longer than fits. */
int db_local_cmdline(char *buf, size_t len, const char **argv, int max, int *complete);

/* slurmstepd: slurm_spank_user_init, slurm_spank_task_init, slurm_spank_exit. */
int db_remote_user_init(spank_t sp, struct db_glue *g);
int db_remote_task_init(spank_t sp, const struct db_glue *g);
void db_remote_exit(struct db_glue *g);

#endif
