/*
 * dist-bind core: the C boundary between the SPANK glue (spank/) and the
 * C++17 planning code (lib/plan/).
 *
 * Everything here is pure: no Slurm calls, no environment access, no I/O.
 * The glue takes a snapshot of what Slurm said (items and environment),
 * passes it in, and writes the variables that come back.  Every function
 * returns 0 on success and -1 on error, with one message in `err` that
 * names what was wrong (variable, value, what was expected).  No function
 * throws or aborts; allocation failure is reported as an error.
 */
#ifndef DIST_BIND_CORE_H
#define DIST_BIND_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DB_ERRLEN 512

/* Slurm's special steps (batch script, extern, interactive, pending) have
 * ids above this one. */
#define DB_MAX_NORMAL_STEP_ID 0xfffffff0u

enum db_mode {
    DB_MODE_UNSET = 0, /* not given: the admin's default applies */
    DB_MODE_OFF,
    DB_MODE_RANK,
    DB_MODE_ISOLATE,
    DB_MODE_CLOSEST,
    DB_MODE_ENV,
};

/* A parsed --dist-bind value (or the admin's default=). */
typedef struct db_request {
    int mode;      /* enum db_mode */
    int verbose;   /* 0/1 */
    int share;     /* 0/1 */
    unsigned port; /* 0 = not given */
} db_request;

enum db_addr_kind {
    DB_ADDR_NAME = 0, /* rank 0's node name */
    DB_ADDR_SUFFIX,   /* node name + suffix (e.g. an InfiniBand alias) */
    DB_ADDR_NODEADDR, /* the node's NodeAddr, as slurmctld knows it */
};

#define DB_SUFFIX_MAX 64
#define DB_PATH_MAX 1024

/* closest's topology cache when the admin does not say: slurmd's, in
 * Slurm's default SlurmdSpoolDir. */
#define DB_TOPOLOGY_CACHE_DEFAULT "/var/spool/slurmd/hwloc_topo_whole.xml"

/* The plugstack.conf arguments. */
typedef struct db_config {
    db_request def;   /* default=MODE */
    unsigned port_lo; /* ports=LO-HI */
    unsigned port_hi;
    int addr_kind; /* master_addr= */
    char addr_suffix[DB_SUFFIX_MAX];
    /* topology_cache=: an absolute path with %n (node name), %h (host
     * name), %% expanded per node; "" for none (always discover live). */
    char topology_cache[DB_PATH_MAX];
} db_config;

/* How srun's words reach the nodes: variables of srun's environment, which
 * srun merges into the step's.  With --export=NONE or a list without ALL
 * (also SLURM_EXPORT_ENV=NONE, which every srun inside `sbatch
 * --export=NONE` inherits) srun drops every variable of its environment but
 * those whose names start with SLURM (measured on 22.05, 24.11 and 26.05:
 * tests/lab/t_export.py).  So srun passes each word under its name, and
 * where its --export drops that (db_srun_exports_all), under
 * DB_CARRIED(name) too; the nodes read the carried name first, and remove
 * both from every task (srun_words.cc). */
#define DB_WORD_PREFIX "SLURM_"
#define DB_CARRIED(word) DB_WORD_PREFIX word
/* The plain name inside a carried one (a pointer into the same string). */
#define DB_PLAIN(carried) ((carried) + sizeof DB_WORD_PREFIX - 1)

/* srun (init_post_opt): does srun pass its whole environment to the step:
 * every component's --export (the last one given, else `export_env`,
 * SLURM_EXPORT_ENV, else ALL) has ALL as its first item (any case)?  1 or
 * 0; 0 also where that cannot be told (a command line cut short). */
int db_srun_exports_all(int argc, const char *const *argv, const char *export_env);

/* Variable srun uses to hand rank 0's address (formed per master_addr=) to
 * the nodes, from the step's layout: only srun knows where rank 0 runs with
 * -m arbitrary, or where Slurm (26.05+) places rank 0 by network topology.
 * It is removed from every task's environment. */
#define DB_RANK0_HINT "DIST_BIND_RANK0_ADDR"

/* Variable srun uses to give each node its NODE_RANK: the step's nodes
 * taken in the order of the lowest global rank each runs, listed in Slurm's
 * node order (node index 0 first) as comma-separated numbers and ranges
 * ("0-15" when the orders agree, "1,0", "2-3,0-1").  Slurm's own node index
 * differs where task 0 is not on the step's first node: -m arbitrary, and
 * from 26.05 a topology plugin's node ranking.  The nodes take it only as a
 * permutation of 0..nnodes-1; it is removed from every task's environment. */
#define DB_NODE_RANKS_HINT "DIST_BIND_NODE_RANKS"

/* DB_NODE_RANKS_HINT never grows beyond this (the kernel takes at most
 * 128 KiB for one NAME=VALUE string of an environment). */
#define DB_NODE_RANKS_MAX 120000

/* srun: from the step's layout (node i, in Slurm's node order, runs
 * tasks[i] tasks whose global ranks are tids[i][0..tasks[i]-1]; ntasks in
 * all) the value of DB_NODE_RANKS_HINT into *out (malloc'ed; the caller
 * frees it) and the index of the node that runs rank 0 into *rank0_node.
 * A layout that is not one (a node without tasks, a rank twice or out of
 * range) or a value longer than DB_NODE_RANKS_MAX is an error; *out is
 * then NULL. */
int db_layout_hints(uint32_t nnodes, uint32_t ntasks, const uint16_t *tasks, const uint32_t *const *tids, char **out,
                    uint32_t *rank0_node, char *err, size_t errlen);

/* srun (init_post_opt): does srun's own command line (argv[0] is srun;
 * the program and its arguments follow srun's options) ask for --async?
 * Slurm 26.05's asynchronous steps skip slurm_spank_local_user_init.  An
 * option srun does not know (another plugin's) is taken to have no
 * separate value: with `--its-option VALUE`, VALUE counts as the program. */
int db_srun_async(int argc, const char *const *argv);

/* Variable srun uses to tell the nodes what only srun's command line says:
 * ",task-sharing" (--gres-flags=allow-task-sharing: bound, not confined)
 * and ",gpus-per-task=K" (the step asked for K GPUs per task), after a
 * first word, "cgroup" (srun's TaskPlugin includes task/cgroup) or "none",
 * which nodes of dist-bind 0.1.0 take for device confinement (later ones
 * read their own configuration); one such section per component of a
 * heterogeneous srun (A : B), ';' between them, each with that component's
 * options.  Removed from every task. */
#define DB_DEVICES_HINT "DIST_BIND_SRUN_DEVICES"

/* Does this TaskPlugin list ("task/affinity,task/cgroup", "cgroup")
 * include task/cgroup?  1 or 0. */
int db_task_plugin_cgroup(const char *task_plugins);

/* Whether Slurm confines the devices of a task it binds per task. */
enum db_node_devices {
    DB_DEVICES_UNKNOWN = 0,
    DB_DEVICES_OPEN,     /* every GPU it is shown can be opened */
    DB_DEVICES_CONFINED, /* task/cgroup with ConstrainDevices=yes */
};

/* From a TaskPlugin list and cgroup.conf as slurm_print_key_pairs() prints
 * it ("Name = value" lines): enum db_node_devices. */
int db_devices_from_conf(const char *task_plugins, const char *cgroup_conf);

/* srun: the value of DB_DEVICES_HINT into `out`, from srun's TaskPlugin,
 * its whole command line (argv[0] is srun; each component's options up to
 * its program) and environment (--gres-flags, --gpus-per-task,
 * --tres-per-task and their SLURM_* variables).  Pure; -1 only when `out`
 * is too small or memory ran out. */
int db_srun_hint(const char *task_plugins, int argc, const char *const *argv, const char *const *env, char *out,
                 size_t outlen);

/* db_task_plan_new's return value for an error that every task of the node
 * reports alike: the glue reports it once per node (local task 0). */
#define DB_ERR_NODE (-2)

/* srun's dist-bind version ("0.2.0"; releases before 0.2.0 do not say),
 * so that a node whose dist-bind differs can name both where the two
 * disagree.  Removed from every task. */
#define DB_SRUN_VERSION_HINT "DIST_BIND_SRUN_VERSION"

/* srun draws a secret for each step (64 hex digits) and hands it to the
 * tasks in this variable; libdistbind's TCP bootstrap lets only ranks that
 * know it join the step, and takes it out of the program's environment.
 * Carried like srun's other words: a task whose DB_SECRET_VAR is not the
 * carried one (dropped by --export) gets the carried one, and the carried
 * name is removed from every task. */
#define DB_SECRET_VAR "DIST_BIND_SECRET"

/* Set in every task with the values dist-bind chose, so that an srun run
 * inside a task (e.g. in `srun --pty bash`) can tell what it inherited from
 * dist-bind from what the user exported: "JOB.STEP" and "ADDR:PORT". */
#define DB_STEP_MARK "DIST_BIND_STEP"
#define DB_MASTER_MARK "DIST_BIND_MASTER"

const char *db_mode_name(int mode);

/* Parse a --dist-bind value; NULL or "" means no value (mode rank).
 * `*out` is written only on success. */
int db_request_parse(const char *value, db_request *out, char *err, size_t errlen);

/* Parse plugstack.conf arguments (key=value ...); unknown keys are errors.
 * `*out` is always initialised (to the defaults on error). */
int db_config_parse(int argc, const char *const *argv, db_config *out, char *err, size_t errlen);

/* What applies to a step: the user's request if the option was given
 * (`user` non-NULL), else the admin's default. Never returns mode UNSET. */
db_request db_effective(const db_config *cfg, const db_request *user);

/* Does srun pass rank 0's address (DB_RANK0_HINT) for this step: a mode
 * other than off, and no MASTER_ADDR the user exported (one dist-bind set
 * for an enclosing step, DB_MASTER_MARK, is not the user's)?  `env` is
 * srun's environment (NAME=VALUE, NULL-ended). */
int db_srun_wants_rank0(const db_config *cfg, const db_request *eff, const char *const *env);
/* ... and must it, because the nodes cannot tell it themselves (arbitrary
 * distribution; master_addr=addr)?  Then failing to get it fails the step. */
int db_srun_needs_rank0(const db_config *cfg, const db_request *eff, const char *const *env);

/* Does srun read the step's layout from slurmctld (one RPC)?  Only where
 * the nodes cannot tell NODE_RANK and rank 0's node from Slurm's node order
 * and their own ranks: an arbitrary distribution, a topology that may order
 * the nodes (`topology_may_rank`: 1, 0, or -1 for unknown), and rank 0's
 * node name for master_addr=addr.  Never with mode off. */
int db_srun_reads_layout(const db_config *cfg, const db_request *eff, const char *const *env, int topology_may_rank);

/* Format MASTER_ADDR from rank 0's node name (and NodeAddr where the config
 * asks for it; may be NULL otherwise). */
int db_format_master_addr(const db_config *cfg, const char *node_name, const char *node_addr, char *out, size_t outlen,
                          char *err, size_t errlen);

/* Host at position `index` of a Slurm hostlist ("node[1-3,7],gpu[01-02]"). */
int db_hostlist_nth(const char *hostlist, size_t index, char *out, size_t outlen, char *err, size_t errlen);

/* What the glue knows once per node and step (slurmstepd, user_init). */
typedef struct db_node_input {
    uint32_t job_id;
    uint32_t step_id;
    uint32_t nnodes;
    uint32_t node_id;
    uint32_t ntasks;        /* tasks in the step */
    uint32_t local_ntasks;  /* tasks of the step on this node */
    const char *const *env; /* the step's environment here, NAME=VALUE, NULL-ended */
    /* The lowest global rank this node runs (S_JOB_LOCAL_TO_GLOBAL_ID of
     * its tasks), where lowest_rank_known; it checks NODE_RANK. */
    uint32_t lowest_rank;
    int lowest_rank_known;
    /* Slurm before 23.02 writes an `srun --container` step's environment
     * into the container before SPANK task_init (set from slurm.h). */
    int container_env_early;
    /* The step's program and its arguments (S_JOB_ARGV; NULL, 0 if not
     * known): the flags typed on torchrun's command line win over
     * dist-bind's PET_* defaults. */
    int argc;
    const char *const *argv;
    /* Whether this node confines the devices of a task Slurm binds per
     * task, from its own configuration (enum db_node_devices). */
    int node_devices;
} db_node_input;

/* --dist-bind=closest: the node's topology-aware choice.  lib/topo makes
 * it once per node (slurmstepd, user_init) and hands it to the plan, which
 * stays free of hwloc.  Positions index the step's GPU list on this node
 * as the plan reads it (db_node_plan_gpu_id). */
typedef struct db_closest_task {
    const size_t *gpus; /* the task's own GPUs, as positions, nearest first */
    size_t ngpus;       /* the same for every task of the node */
    int numa;           /* the task's NUMA node (OS index), -1 if unknown */
    const char *nics;   /* network devices near its GPUs ("mlx5_0,mlx5_1"); NULL or "" if none */
} db_closest_task;

typedef struct db_closest_input {
    const char *source;           /* where the topology came from, how GPUs were matched (for verbose) */
    const char *fallback;         /* non-NULL: no choice, closest acts as rank; why (for verbose) */
    const db_closest_task *tasks; /* one per local task, by local rank */
    size_t ntasks;
} db_closest_input;

/* What the glue knows per task (slurmstepd, task_init). */
typedef struct db_task_input {
    uint32_t global_rank;
    uint32_t local_rank;
    const char *const *env; /* the task's final environment */
} db_task_input;

typedef struct db_node_plan db_node_plan;
typedef struct db_task_plan db_task_plan;

/* The node's share of the plan.  On success *out is set; a plan may be
 * inactive (mode off, batch/extern/interactive step), then tasks get
 * nothing. */
int db_node_plan_new(const db_config *cfg, const db_request *eff, const db_node_input *in, db_node_plan **out,
                     char *err, size_t errlen);
int db_node_plan_active(const db_node_plan *np);
/* Why the plan is inactive, or NULL. */
const char *db_node_plan_skip_reason(const db_node_plan *np);
void db_node_plan_free(db_node_plan *np);

/* This node's name in the step's node list ("" when Slurm gave none). */
const char *db_node_plan_node_name(const db_node_plan *np);

/* What every task of the node gets alike: the glue writes these in
 * user_init, into the step's environment that each task's starts from, so
 * that each task writes only its own (db_task_plan_*): one spank_setenv per
 * node instead of one per task.  Entry i: name, value (NULL: unset it).
 * None for an inactive plan (mode off; batch, extern, interactive steps). */
size_t db_node_plan_env_count(const db_node_plan *np);
const char *db_node_plan_env_name(const db_node_plan *np, size_t i);
const char *db_node_plan_env_value(const db_node_plan *np, size_t i);

/* The step's GPUs on this node as the plan reads them (0 when none). */
size_t db_node_plan_gpu_count(const db_node_plan *np);
const char *db_node_plan_gpu_id(const db_node_plan *np, size_t i);
/* Give a closest-mode plan the node's choice (or the reason there is
 * none).  On error the plan is unchanged and closest acts as rank. */
int db_node_plan_set_closest(db_node_plan *np, const db_closest_input *c, char *err, size_t errlen);

/* The variables one task writes: 0, or -1 (or DB_ERR_NODE) with `err` set.
 * `in->env` is the task's environment at task_init, which holds what the
 * glue wrote from db_node_plan_env_* in user_init: the task writes none of
 * those again unless its environment no longer holds them as written (a
 * plugin before dist-bind changed them: dist-bind's value wins).  The plan
 * decides as if those writes had not happened (what the user exported,
 * what an enclosing step's dist-bind left), and its record (DIST_BIND_SET)
 * and verbose line cover every variable dist-bind set, the node's too. */
int db_task_plan_new(const db_node_plan *np, const db_task_input *in, db_task_plan **out, char *err, size_t errlen);
size_t db_task_plan_count(const db_task_plan *tp);
const char *db_task_plan_name(const db_task_plan *tp, size_t i);
/* NULL means: unset this variable. */
const char *db_task_plan_value(const db_task_plan *tp, size_t i);
/* The verbose line (without trailing newline), or NULL when not verbose. */
const char *db_task_plan_verbose(const db_task_plan *tp);
void db_task_plan_free(db_task_plan *tp);

/* The names whose value in `env` is not what the record (DIST_BIND_SET,
 * which every task plan sets) says dist-bind left, comma-separated into
 * `out` ("" when none): 0, or -1 with `err` set for a malformed record. */
int db_set_record_mismatches(const char *record, const char *const *env, char *out, size_t outlen, char *err,
                             size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
