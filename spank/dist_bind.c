/*
 * dist-bind SPANK plugin: Slurm's entry points, each handed to the file
 * of its context: options.c (the plugstack.conf arguments and
 * --dist-bind, everywhere), local.c (srun, before launch) and remote.c
 * (slurmstepd, per node and per task).  Dispatch only: the state is
 * state.c's, and nothing here is called back.
 */
#include <slurm/slurm_version.h>

#include "local.h"
#include "options.h"
#include "remote.h"

SPANK_PLUGIN(dist_bind, 1);

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
/* A required plugin's failed slurm_spank_init fails slurmstepd's set-up,
 * and for a batch step slurmctld then drains the node.  From 25.05 a
 * plugin can say the job is at fault instead.  Ours fails init only in
 * srun/salloc/sbatch (where this value is never used), so this is a
 * safety net: a user's bad option or a refused step never drains a node. */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

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
    if (c == S_CTX_SLURMD) slurm_info("dist-bind " DB_VERSION " loaded");
    if (db_options_config(ac, av) != 0) rc = -1;
    if ((c == S_CTX_LOCAL || c == S_CTX_REMOTE || c == S_CTX_ALLOCATOR) && db_options_register(sp) != 0) rc = -1;
    return c == S_CTX_REMOTE ? 0 : rc;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av) {
    (void)sp;
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_LOCAL) return db_local_post_opt(&db_state);
    /* A bad plugstack.conf fails salloc and sbatch here when the plugin is
     * required; the option callback already refused --dist-bind. */
    return db_options_user_context() && !db_state.cfg_ok ? -1 : 0;
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    return db_local_user_init(sp, &db_state);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    if (!spank_remote(sp)) return 0;
    return db_remote_user_init(sp, &db_state);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    if (!spank_remote(sp)) return 0;
    return db_remote_task_init(sp, &db_state);
}

int slurm_spank_exit(spank_t sp, int ac, char **av) {
    (void)ac;
    (void)av;
    if (spank_remote(sp)) db_remote_exit(&db_state);
    return 0;
}
