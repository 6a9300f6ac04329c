/*
 * slurmstepd side.  user_init (once per node, before any task is forked)
 * takes the step-level snapshot, computes the node's plan and writes what
 * every task of the node gets alike into the step's environment, which
 * slurmstepd copies into each task's (exec_task); task_init (in each task's
 * process, just before exec) computes and writes the rest of that task's
 * variables.  Tasks inherit the node plan through fork.
 */
#include <stdint.h>
#include <unistd.h>

#include "closest.h"
#include "remote.h"
#include "slurm_api.h"

static const char *const *job_env(spank_t sp) {
    char **env = NULL;
    if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS) return NULL;
    return (const char *const *)env;
}

static int get_u32(spank_t sp, spank_item_t item, const char *name, uint32_t *out) {
    spank_err_t e = spank_get_item(sp, item, out);
    if (e != ESPANK_SUCCESS) {
        slurm_error(DB_PREFIX "cannot read %s from Slurm: %s", name, spank_strerror(e));
        return -1;
    }
    return 0;
}

/* One variable of the step's environment, as the plan says (NULL: unset). */
static int write_var(spank_t sp, const char *name, const char *value) {
    spank_err_t e = value ? spank_setenv(sp, name, value, 1) : spank_unsetenv(sp, name);
    if (e != ESPANK_SUCCESS) {
        slurm_error(DB_PREFIX "cannot set %s: %s", name, spank_strerror(e));
        return -1;
    }
    return 0;
}

/* The lowest global rank among the node's tasks (local task 0's, as Slurm
 * numbers them): the plan checks NODE_RANK against it. */
static int lowest_rank(spank_t sp, db_node_input *in) {
    for (uint32_t i = 0; i < in->local_ntasks; i++) {
        uint32_t global = 0;
        spank_err_t e = spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, i, &global);
        if (e != ESPANK_SUCCESS) {
            slurm_error(DB_PREFIX "cannot read the global rank of local task %u from Slurm: %s", i, spank_strerror(e));
            return -1;
        }
        if (i == 0 || global < in->lowest_rank) in->lowest_rank = global;
    }
    in->lowest_rank_known = 1;
    return 0;
}

int db_remote_user_init(spank_t sp, struct db_glue *g) {
    char err[DB_ERRLEN];
    db_request eff;
    db_node_input in = {0};

    db_remote_exit(g); /* a fresh plan per step */
    /* The batch script, extern and interactive steps are never touched,
     * whatever else is wrong. */
    if (get_u32(sp, S_JOB_STEPID, "S_JOB_STEPID", &in.step_id)) return 0;
    if (in.step_id > DB_MAX_NORMAL_STEP_ID) return 0;
    if (!g->opt_given && !g->cfg_ok) return 0; /* nothing asked; error already logged */
    if (!g->cfg_ok) {
        slurm_error(DB_PREFIX "%s", g->cfg_err);
        goto fail;
    }
    if (g->opt_given && !g->opt_ok) {
        slurm_error(DB_PREFIX "%s", g->opt_err);
        goto fail;
    }
    eff = db_glue_effective(g);

    if (get_u32(sp, S_JOB_ID, "S_JOB_ID", &in.job_id) || get_u32(sp, S_JOB_NNODES, "S_JOB_NNODES", &in.nnodes) ||
        get_u32(sp, S_JOB_NODEID, "S_JOB_NODEID", &in.node_id) ||
        get_u32(sp, S_JOB_TOTAL_TASK_COUNT, "S_JOB_TOTAL_TASK_COUNT", &in.ntasks) ||
        get_u32(sp, S_JOB_LOCAL_TASK_COUNT, "S_JOB_LOCAL_TASK_COUNT", &in.local_ntasks)) {
        if (eff.mode == DB_MODE_OFF) return 0; /* nothing asked: never fail the step */
        goto fail;
    }
    if (eff.mode != DB_MODE_OFF && lowest_rank(sp, &in) != 0) goto fail;
    in.env = job_env(sp);
    {
        char **argv = NULL;
        int argc = 0;
        if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) == ESPANK_SUCCESS && argc > 0 && argv) {
            in.argc = argc;
            in.argv = (const char *const *)argv;
        }
    }
    in.container_env_early = SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(23, 2, 0);
    /* Device cgroups as this node applies them: slurmd's configuration,
     * not a word from srun or the job's environment. */
    if (eff.mode != DB_MODE_OFF) in.node_devices = db_slurm_node_devices();
    if (db_node_plan_new(&g->cfg, &eff, &in, &g->node, err, sizeof err) != 0) {
        slurm_error(DB_PREFIX "%s", err);
        goto fail;
    }
    if (!db_node_plan_active(g->node)) {
        slurm_debug(DB_PREFIX "inactive: %s", db_node_plan_skip_reason(g->node));
        return 0;
    }
    if (eff.mode == DB_MODE_CLOSEST)
        db_remote_closest(sp, &in, g->node, g->cfg.topology_cache); /* the topology, once per node */
    /* Once for the node what its tasks get alike: slurmstepd pays a 256 KiB
     * calloc and a scan of the environment for each variable written. */
    for (size_t i = 0; i < db_node_plan_env_count(g->node); i++)
        if (write_var(sp, db_node_plan_env_name(g->node, i), db_node_plan_env_value(g->node, i)) != 0) goto fail;
    return 0;
fail:
    /* Each task will exit 1 in task_init instead.  Returning -1 here would
     * make slurmstepd abort the launch, which srun (22.05) reports as
     * "could not execve" and then exits 0 as if the step had succeeded. */
    g->node_failed = 1;
    return 0;
}

/* A task whose mapping failed must not run: an optional plugin's error
 * would otherwise be ignored by Slurm and the task would start with GPUs
 * nobody chose.  This runs in the task's own process, just before exec,
 * where slurmstepd itself would _exit(1) for a required plugin. */
static int fail_task(void) {
    _exit(1);
    return -1;
}

int db_remote_task_init(spank_t sp, const struct db_glue *g) {
    char err[DB_ERRLEN];
    db_task_input in = {0};
    db_task_plan *tp = NULL;
    size_t i, n;
    int rc = -1, active, planned;

    if (g->node_failed) return fail_task();
    if (!g->node) return 0;
    /* With mode off the plan only drops what an enclosing step's dist-bind
     * set; nothing there may fail a task nobody asked dist-bind for. */
    active = db_node_plan_active(g->node);

    if (get_u32(sp, S_TASK_GLOBAL_ID, "S_TASK_GLOBAL_ID", &in.global_rank)) goto out;
    {
        int local = -1;
        if (spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS || local < 0) {
            slurm_error(DB_PREFIX "cannot read S_TASK_ID from Slurm");
            goto out;
        }
        in.local_rank = (uint32_t)local;
    }
    in.env = job_env(sp);
    planned = db_task_plan_new(g->node, &in, &tp, err, sizeof err);
    if (planned != 0) {
        /* An error every task of the node shares is reported by one. */
        if (planned != DB_ERR_NODE || in.local_rank == 0) slurm_error(DB_PREFIX "%s", err);
        goto out;
    }
    n = db_task_plan_count(tp);
    for (i = 0; i < n; i++)
        if (write_var(sp, db_task_plan_name(tp, i), db_task_plan_value(tp, i)) != 0) goto out;
    if (db_task_plan_verbose(tp)) slurm_spank_log("%s", db_task_plan_verbose(tp));
    rc = 0;
out:
    db_task_plan_free(tp);
    return rc == 0 || !active ? 0 : fail_task();
}

void db_remote_exit(struct db_glue *g) {
    db_node_plan_free(g->node);
    g->node = NULL;
    g->node_failed = 0;
}
