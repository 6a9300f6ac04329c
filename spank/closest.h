/* slurmstepd, user_init: the node's --dist-bind=closest choice. */
#ifndef DIST_BIND_CLOSEST_H
#define DIST_BIND_CLOSEST_H

#include "state.h"

/* Loads the node's topology once (from `topology_cache`, the admin's
 * topology_cache= template, when it makes a usable path) and gives `np`
 * every local task's GPUs, or the reason closest acts as rank.  Never fails
 * the step. */
void db_remote_closest(spank_t sp, const db_node_input *in, db_node_plan *np, const char *topology_cache);

#endif
