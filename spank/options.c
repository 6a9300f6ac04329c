/*
 * The plugstack.conf arguments and --dist-bind: parsed into db_state, and
 * in srun/salloc/sbatch a bad value refused before anything is allocated.
 */
#include <stdio.h>
#include <string.h>

#include "options.h"
#include "state.h"

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

int db_options_user_context(void) {
    spank_context_t c = spank_context();
    return c == S_CTX_LOCAL || c == S_CTX_ALLOCATOR;
}

/* Called once per option occurrence, and again on the node side: keep it
 * idempotent.  In srun/salloc/sbatch a bad value is refused here, which
 * makes the command fail before any allocation whether the plugin is
 * required or optional. */
static int opt_cb(int val, const char *optarg, int remote) {
    struct db_glue *g = &db_state;
    const char *v = optarg ? optarg : "";
    /* sbatch/salloc hand a valueless option to their steps as the text
     * "(null)" (Slurm formats the NULL optarg into the environment). */
    if (strcmp(v, "(null)") == 0) v = "";
    (void)val;
    (void)remote;
    g->opt_given = 1;
    if (strlen(v) >= DB_OPT_MAX) {
        g->opt_ok = 0;
        snprintf(g->opt_err, sizeof g->opt_err, "--dist-bind: value of %zu characters is too long", strlen(v));
    } else {
        g->opt_ok = db_request_parse(v, &g->opt, g->opt_err, sizeof g->opt_err) == 0;
    }
    if (!db_options_user_context()) return 0; /* slurmstepd reports in user_init */
    if (!g->cfg_ok) {
        slurm_error(DB_PREFIX "%s", g->cfg_err);
        return -1;
    }
    if (!g->opt_ok) {
        slurm_error(DB_PREFIX "%s", g->opt_err);
        return -1;
    }
    return 0;
}

int db_options_config(int ac, char **av) {
    struct db_glue *g = &db_state;
    g->cfg_ok = db_config_parse(ac, (const char *const *)av, &g->cfg, g->cfg_err, sizeof g->cfg_err) == 0;
    if (g->cfg_ok) return 0;
    slurm_error(DB_PREFIX "%s", g->cfg_err);
    return -1;
}

int db_options_register(spank_t sp) {
    if (spank_option_register(sp, &db_options[0]) == ESPANK_SUCCESS) return 0;
    slurm_error(DB_PREFIX "cannot register --dist-bind");
    return -1;
}
