/* slurmstepd side (remote.c). */
#ifndef DIST_BIND_REMOTE_H
#define DIST_BIND_REMOTE_H

#include "state.h"

/* slurm_spank_user_init, slurm_spank_task_init, slurm_spank_exit. */
int db_remote_user_init(spank_t sp, struct db_glue *g);
int db_remote_task_init(spank_t sp, const struct db_glue *g);
void db_remote_exit(struct db_glue *g);

#endif
