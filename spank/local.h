/* srun side (local.c). */
#ifndef DIST_BIND_LOCAL_H
#define DIST_BIND_LOCAL_H

#include "state.h"

/* srun, init_post_opt, before any component of the step exists: tells the
 * nodes srun's dist-bind version (DB_SRUN_VERSION_HINT), refuses `srun
 * --async` (-1, one message), tells the nodes each component's GPU request
 * (srun_devices.c) and draws the step's secret (DB_SECRET_VAR). */
int db_local_post_opt(const struct db_glue *g);
/* srun, local_user_init: the hints only the step's layout gives. */
int db_local_user_init(spank_t sp, const struct db_glue *g);

#endif
