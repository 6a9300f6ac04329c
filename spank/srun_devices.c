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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

extern char **environ;

int db_local_cmdline(char *buf, size_t len, const char **argv, int max, int *complete) {
    FILE *f = fopen("/proc/self/cmdline", "re");
    int argc = 0;
    size_t n;
    *complete = 0;
    if (!f || len < 2) {
        if (f) fclose(f);
        return 0;
    }
    n = fread(buf, 1, len - 1, f);
    *complete = n < len - 1 && feof(f);
    fclose(f);
    /* A word cut at the end of the buffer is left out. */
    while (!*complete && n > 0 && buf[n - 1] != '\0') n--;
    buf[n] = '\0';
    for (size_t i = 0; i < n && argc < max; i += strlen(buf + i) + 1) argv[argc++] = buf + i;
    if (argc == max) *complete = 0;
    return argc;
}

void db_local_devices_hint(const struct db_glue *g) {
    enum { LEN = 256 * 1024, MAX = 8192 };
    db_request eff;
    char *args = NULL, hint[4096];
    const char **argv = NULL;
    const char *plugins;
    int argc, complete = 0;

    /* Never pass on a value from the user's or an enclosing task's
     * environment. */
    unsetenv(DB_DEVICES_HINT);
    if (!g->cfg_ok || (g->opt_given && !g->opt_ok)) return; /* refused already */
    eff = db_glue_effective(g);
    if (eff.mode != DB_MODE_RANK && eff.mode != DB_MODE_CLOSEST && eff.mode != DB_MODE_ISOLATE) return;
    plugins = db_slurm_task_plugins();
    args = malloc(LEN);
    argv = malloc(MAX * sizeof *argv);
    /* A command line cut short could misplace a component's options:
     * then only srun's environment counts. */
    argc = args && argv ? db_local_cmdline(args, LEN, argv, MAX, &complete) : 0;
    if (!complete) argc = 0;
    if (db_srun_hint(plugins ? plugins : "", argc, argv, (const char *const *)environ, hint, sizeof hint) != 0)
        db_local_say(&eff, "srun's command line has too many components: %s not passed", DB_DEVICES_HINT);
    else if (setenv(DB_DEVICES_HINT, hint, 1) != 0)
        slurm_verbose(DB_PREFIX "cannot set %s in srun", DB_DEVICES_HINT);
    free(args);
    free(argv);
}
