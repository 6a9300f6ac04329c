/* srun side: the GPUs each task asked for, told to the nodes (srun_devices.c). */
#ifndef DIST_BIND_SRUN_DEVICES_H
#define DIST_BIND_SRUN_DEVICES_H

#include "srun_common.h"

/* srun, init_post_opt: sets (or clears) DB_DEVICES_HINT for the step's
 * tasks, every component's, from srun's command line `cl` and its
 * environment (`cl` NULL: srun's environment only; a refused command only
 * clears it). */
void db_srun_devices_hint(const struct db_glue *g, const struct db_cmdline *cl);

#endif
