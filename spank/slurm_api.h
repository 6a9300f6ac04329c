/*
 * Slurm as this process (srun or slurmstepd) holds it: its API and the
 * configuration it has read, looked up with dlsym (slurm_api.c).  A leaf:
 * it calls the plan's pure helpers only.
 */
#ifndef DIST_BIND_SLURM_API_H
#define DIST_BIND_SLURM_API_H

#include <stddef.h>

#include "db_core.h"

/* dlsym gives no types: the build against each release's slurm.h checks
 * that a function srun looks up has the type the glue calls it with
 * (typeof does not refer to the symbol, so nothing links against it). */
#define DB_API_TYPE(fn, type) \
    _Static_assert(__builtin_types_compatible_p(type, __typeof__(&fn)), #fn " has changed type in slurm.h")

/* A public Slurm API function by name, else by its name in older releases
 * (NULL for none); NULL if the process has neither. */
void *db_slurm_api(const char *name, const char *older);
/* One of libslurm's own symbols (not in slurm.h; see slurm_api.c for the
 * list and why), or NULL. */
void *db_slurm_internal(const char *name);

/* TaskPlugin as this process read it ("task/cgroup,task/affinity"), or
 * NULL when unknown. */
const char *db_slurm_task_plugins(void);
/* slurmstepd: does this node confine the devices of a task Slurm binds per
 * task (TaskPlugin task/cgroup and cgroup.conf ConstrainDevices=yes, as
 * slurmd handed them to this slurmstepd)?  enum db_node_devices. */
int db_slurm_node_devices(void);
/* srun: can the topology order the step's nodes (Slurm 26.05 and later: a
 * topology plugin's node ranking, where task 0 need not run on the step's
 * first node)?  1 yes, 0 no, -1 unknown. */
int db_slurm_topology_may_rank(void);
/* srun: NodeAddr of node `name` from srun's own configuration into `out`:
 * 0, or -1 where it names no such node (a dynamic node) or it is longer
 * than `len`. */
int db_slurm_node_addr(const char *name, char *out, size_t len);

#endif
