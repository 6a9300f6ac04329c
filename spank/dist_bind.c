/*
 * dist-bind SPANK plugin: entry points and option handling.
 *
 * Each context gets its own file: local.c (srun, before launch) and
 * remote.c (slurmstepd, per node and per task).  This file registers
 * --dist-bind everywhere, parses the plugstack.conf arguments, and rejects
 * a bad option value in srun/salloc/sbatch before anything is allocated.
 */
#include <stdio.h>
#include <string.h>

#include <slurm/slurm_version.h>

#include "glue.h"

SPANK_PLUGIN(dist_bind, 1);

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
/* A required plugin's failed slurm_spank_init fails slurmstepd's set-up,
 * and for a batch step slurmctld then drains the node.  From 25.05 a
 * plugin can say the job is at fault instead.  Ours fails init only in
 * srun/salloc/sbatch (where this value is never used), so this is a
 * safety net: a user's bad option or a refused step never drains a node. */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

static struct db_glue db_glue;

static int opt_cb(int val, const char *optarg, int remote);

static struct spank_option db_options[] = {
    {"dist-bind", "[MODE][,MODIFIER...]",
     "[dist-bind] Give every task RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT "
     "and a CUDA_VISIBLE_DEVICES in which device LOCAL_RANK is its own GPU. "
     "MODE: rank (default), isolate, closest, env, off. "
     "MODIFIER: verbose, share, port=N.",
     2, 0, opt_cb},
    SPANK_OPTIONS_TABLE_END,
};

static int user_context(void) {
    spank_context_t c = spank_context();
    return c == S_CTX_LOCAL || c == S_CTX_ALLOCATOR;
}

/* Called once per option occurrence, and again on the node side: keep it
 * idempotent.  In srun/salloc/sbatch a bad value is refused here, which
 * makes the command fail before any allocation whether the plugin is
 * required or optional. */
static int opt_cb(int val, const char *optarg, int remote) {
    const char *v = optarg ? optarg : "";
    /* sbatch/salloc hand a valueless option to their steps as the text
     * "(null)" (Slurm formats the NULL optarg into the environment). */
    if (strcmp(v, "(null)") == 0) v = "";
    (void)val;
    (void)remote;
    db_glue.opt_given = 1;
    if (strlen(v) >= DB_OPT_MAX) {
        db_glue.opt_ok = 0;
        snprintf(db_glue.opt_err, sizeof db_glue.opt_err, "--dist-bind: value of %zu characters is too long",
                 strlen(v));
    } else {
        db_glue.opt_ok = db_request_parse(v, &db_glue.opt, db_glue.opt_err, sizeof db_glue.opt_err) == 0;
    }
    if (!user_context()) return 0; /* slurmstepd reports in user_init */
    if (!db_glue.cfg_ok) {
        slurm_error(DB_PREFIX "%s", db_glue.cfg_err);
        return -1;
    }
    if (!db_glue.opt_ok) {
        slurm_error(DB_PREFIX "%s", db_glue.opt_err);
        return -1;
    }
    return 0;
}

db_request db_glue_effective(const struct db_glue *g) { return db_effective(&g->cfg, g->opt_given ? &g->opt : NULL); }

/* In srun/salloc/sbatch a failure here refuses the command.  slurmstepd
 * never fails here: a required plugin's failed init fails the batch step,
 * which makes slurmctld drain the node on every release (22.05 to 25.11).
 * There user_init reports a bad configuration and fails the tasks of a
 * step that asked for dist-bind instead; an option that cannot be
 * registered here could not be registered in srun either, so no step
 * carries it. */
int slurm_spank_init(spank_t sp, int ac, char **av) {
    spank_context_t c = spank_context();
    int rc = 0;

    /* slurmd loads the plugins once as it starts: the version, once. */
    if (c == S_CTX_SLURMD) slurm_info("dist-bind %s loaded", DB_VERSION);
    db_glue.cfg_ok =
        db_config_parse(ac, (const char *const *)av, &db_glue.cfg, db_glue.cfg_err, sizeof db_glue.cfg_err) == 0;
    if (!db_glue.cfg_ok) {
        slurm_error(DB_PREFIX "%s", db_glue.cfg_err);
        rc = -1;
    }
    if (c == S_CTX_LOCAL || c == S_CTX_REMOTE || c == S_CTX_ALLOCATOR) {
        if (spank_option_register(sp, &db_options[0]) != ESPANK_SUCCESS) {
            slurm_error(DB_PREFIX "cannot register --dist-bind");
            rc = -1;
        }
    }
    return c == S_CTX_REMOTE ? 0 : rc;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av) {
    (void)sp;
    (void)ac;
    (void)av;
    /* A bad plugstack.conf fails the command here when the plugin is
     * required; the option callback already refused --dist-bind. */
    if (user_context() && !db_glue.cfg_ok) return -1;
    if (spank_context() == S_CTX_LOCAL) {
        if (db_local_refuse_async(&db_glue) != 0) return -1;
        db_local_devices_hint(&db_glue);
        return db_local_secret(&db_glue);
    }
    return 0;
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    return db_local_user_init(sp, &db_glue);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    if (!spank_remote(sp)) return 0;
    return db_remote_user_init(sp, &db_glue);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    if (!spank_remote(sp)) return 0;
    return db_remote_task_init(sp, &db_glue);
}

int slurm_spank_exit(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    if (spank_remote(sp)) db_remote_exit(&db_glue);
    return 0;
}
