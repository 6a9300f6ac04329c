/* The plugstack.conf arguments and the --dist-bind option (options.c). */
#ifndef DIST_BIND_OPTIONS_H
#define DIST_BIND_OPTIONS_H

#include <slurm/spank.h>

/* Parses the plugstack.conf arguments into db_state: 0, or -1 after one
 * message naming what is wrong. */
int db_options_config(int ac, char **av);
/* Registers --dist-bind with Slurm: 0, or -1 after one message. */
int db_options_register(spank_t sp);
/* srun, sbatch, salloc: is this a user's command (not slurmd or
 * slurmstepd)? */
int db_options_user_context(void);

#endif
