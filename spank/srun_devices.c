/*
 * srun side: tell the nodes how many GPUs each task asked for and whether
 * it asked for --gres-flags=allow-task-sharing (DB_DEVICES_HINT, see
 * db_core.h), each component's own, read from srun's command line (and
 * environment).  srun tells them in init_post_opt, before any component of
 * the step exists: what srun exports then reaches every component of a
 * heterogeneous step (srun A : B), what it exports in local_user_init only
 * one of them (measured on 22.05 and 26.05).
 * Whether Slurm confines a task's devices is each node's own configuration
 * (remote.c reads it there); the hint's first word, srun's TaskPlugin, is
 * for nodes of releases that read nothing else.  Nothing here asks
 * slurmctld.
 */
#define _GNU_SOURCE

#include "slurm_api.h"
#include "srun_devices.h"

extern char **environ;

void db_srun_devices_hint(const struct db_glue *g, const struct db_cmdline *cl) {
    db_request eff;
    char hint[4096];
    const char *plugins;

    /* Never pass on a value from the user's or an enclosing task's
     * environment. */
    db_srun_drop(DB_CARRIED(DB_DEVICES_HINT));
    if (db_glue_refused(g)) return; /* refused already */
    eff = db_glue_effective(g);
    if (eff.mode != DB_MODE_RANK && eff.mode != DB_MODE_CLOSEST && eff.mode != DB_MODE_ISOLATE) return;
    plugins = db_slurm_task_plugins();
    /* A command line cut short could misplace a component's options:
     * then only srun's environment counts. */
    int argc = cl && cl->complete ? cl->argc : 0;
    if (db_srun_hint(plugins ? plugins : "", argc, argc ? cl->argv : NULL, (const char *const *)environ, hint,
                     sizeof hint) != 0)
        db_local_say(&eff, "srun's command line has too many components: %s not passed", DB_DEVICES_HINT);
    else if (db_srun_pass(DB_CARRIED(DB_DEVICES_HINT), hint) != 0)
        slurm_verbose(DB_PREFIX "cannot set %s in srun", DB_DEVICES_HINT);
}
