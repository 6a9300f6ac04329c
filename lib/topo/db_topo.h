/*
 * dist-bind topology: the C boundary of lib/topo (hwloc) for the SPANK glue.
 *
 * slurmstepd calls db_topo_node_choose() once per node and step, in
 * user_init, for --dist-bind=closest; it loads the node's topology once
 * (slurmd's cached XML, else live discovery), chooses every local task's
 * GPUs, and hands back a db_closest_input for db_node_plan_set_closest().
 * Anything that keeps closest from choosing (no GPUs in the topology, a
 * broken XML file, an unknown layout) is not an error: the result then
 * carries the reason and closest acts as rank.  Nothing here throws, exits
 * or prints.
 */
#ifndef DIST_BIND_TOPO_H
#define DIST_BIND_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "db_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The file slurmd 22.05+ caches its whole topology in, under SlurmdSpoolDir. */
#define DB_TOPO_CACHE_NAME "hwloc_topo_whole.xml"

/* The NVIDIA driver's per-GPU information.  Test builds only (compiled
 * with -DDB_TEST_KNOBS: the unit tests and the lab's test plugins) read
 * another directory from the step's environment; the shipped plugin never
 * looks at that variable. */
#define DB_TOPO_NVIDIA_DIR "/proc/driver/nvidia/gpus"
#define DB_TOPO_NVIDIA_ENV "DIST_BIND_NVIDIA_PROC"

typedef struct db_topo_node_request {
    const char *const *env;  /* the step's environment at user_init (SLURM_STEP_GPUS,
                                SLURM_DISTRIBUTION, SLURM_GPUS_PER_TASK) */
    const char *const *gpus; /* the step's GPUs on this node as the plan lists them */
    size_t ngpus;
    uint32_t ntasks;        /* tasks of the step on this node */
    const char *step_cores; /* S_STEP_ALLOC_CORES ("0-2,8"); NULL if Slurm did not say */
    uint32_t cpus_per_task; /* S_STEP_CPUS_PER_TASK; 0 if unknown */
    const char *cached_xml; /* a cached topology (plugstack topology_cache=); NULL: discover live.
                               Used only if it is a regular file, not a symbolic link, owned by
                               root or by this process's real user (slurmd's) and writable by
                               no one else; otherwise live discovery, and the source says why */
    const char *no_cache;   /* with cached_xml NULL: why there is none (for the source), or NULL */
} db_topo_node_request;

typedef struct db_topo_node_result db_topo_node_result;

/* -1 only for a NULL argument or when memory runs out. */
int db_topo_node_choose(const db_topo_node_request *rq, db_topo_node_result **out, char *err, size_t errlen);
/* The choice, or the reason for none; valid until the result is freed. */
const db_closest_input *db_topo_node_closest(const db_topo_node_result *r);
/* Milliseconds spent loading the topology (0 if it was not loaded). */
double db_topo_node_load_ms(const db_topo_node_result *r);
void db_topo_node_result_free(db_topo_node_result *r);

/* The dry run (dist-bind-check --plan): what closest chooses on a node,
 * from a topology file and each task's CPUs, without Slurm. */
typedef struct db_topo_dry_run {
    const char *topology;     /* hwloc XML file; NULL: discover this machine */
    const char *synthetic;    /* or an hwloc synthetic description (tests) */
    const char *task_cpus;    /* "LIST;LIST;..." in OS CPU numbers, or NULL and: */
    const char *step_cores;   /* the step's cores in Slurm's numbering (S_STEP_ALLOC_CORES), */
    uint32_t ntasks;          /* laid out over them as Slurm does */
    uint32_t cpus_per_task;   /* 0: the cores shared out */
    const char *distribution; /* SLURM_DISTRIBUTION; NULL: Slurm's default */
    const char *gpus;         /* Slurm's GPU numbers ("0,1"); NULL: every GPU shown */
    uint32_t gpus_per_task;   /* 0 means 1 */
    const char *nvidia_proc;  /* match by NVIDIA device minor from DIR/<bus>/information */
    int cpus_only;            /* no GPUs: print "task N cpus LIST numa N" */
} db_topo_dry_run;

/* One line per task, "task N cpus LIST gpus LIST numa N[ nics LIST]\n", in
 * *out (free() it); -1 with one message on bad input. */
int db_topo_dry_run_text(const db_topo_dry_run *a, char **out, char *err, size_t errlen);

/* The topology cache's path from the admin's template (plugstack
 * topology_cache=): %n the node's name, %h its host name, %% a '%'.  -1 if
 * the template is empty or has another '%' sequence, if a name it needs is
 * not a plain host name (letters, digits, '-', '_', '.'; not "." or "..";
 * so no name can climb out of the directory), or if it does not fit. */
int db_topo_cache_path(const char *tmpl, const char *node, const char *host, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
