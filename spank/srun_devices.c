/*
 * srun side: tell the nodes whether Slurm confines the devices of the tasks
 * it binds per task, and how many GPUs each task asked for
 * (DB_DEVICES_HINT, see db_core.h).  The nodes cannot read slurmctld's
 * configuration themselves, and Slurm's GPU lists show it only sometimes;
 * srun asks slurmctld once, through the public API (slurm_load_ctl_conf,
 * slurm_print_key_pairs, slurm_free_conf, named slurm_free_ctl_conf before
 * 26.05), looked up with dlsym as in local.c.  It asks in init_post_opt,
 * before any component of the step exists: what srun exports then reaches
 * every component of a heterogeneous step (srun A : B), what it exports in
 * local_user_init only one of them (measured on 22.05 and 26.05).  The GPUs
 * per task and --gres-flags are each component's own, read from srun's
 * command line.
 * Failing to ask never fails the step: the nodes then go by Slurm's lists
 * alone and say so in verbose, and so does srun (with --dist-bind=verbose).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/slurm_version.h>

#include "glue.h"

typedef int (*load_conf_f)(time_t, slurm_conf_t **);
typedef void (*free_conf_f)(slurm_conf_t *);
typedef void (*print_pairs_f)(FILE *, void *, char *);

DB_API_TYPE(slurm_load_ctl_conf, load_conf_f);
DB_API_TYPE(slurm_print_key_pairs, print_pairs_f);
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
DB_API_TYPE(slurm_free_conf, free_conf_f);
#else
DB_API_TYPE(slurm_free_ctl_conf, free_conf_f);
#endif

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
    load_conf_f load;
    free_conf_f release;
    print_pairs_f print;
    slurm_conf_t *conf = NULL;
    enum { LEN = 256 * 1024, MAX = 8192 };
    db_request eff;
    char *text = NULL, *args = NULL, hint[4096];
    const char **argv = NULL;
    size_t len = 0;
    FILE *mem;
    int argc, complete = 0;

    /* Never pass on a value from the user's or an enclosing task's
     * environment. */
    unsetenv(DB_DEVICES_HINT);
    if (!g->cfg_ok || (g->opt_given && !g->opt_ok)) return; /* refused already */
    eff = db_glue_effective(g);
    if (eff.mode != DB_MODE_RANK && eff.mode != DB_MODE_CLOSEST && eff.mode != DB_MODE_ISOLATE) return;
    load = (load_conf_f)db_slurm_api("slurm_load_ctl_conf", NULL);
    /* 26.05 renamed slurm_free_ctl_conf, with no alias. */
    release = (free_conf_f)db_slurm_api("slurm_free_conf", "slurm_free_ctl_conf");
    print = (print_pairs_f)db_slurm_api("slurm_print_key_pairs", NULL);
    if (!load || !release || !print) {
        db_local_say(&eff, "srun has no %s: cannot tell the nodes about device cgroups (%s not passed)",
                     !load      ? "slurm_load_ctl_conf"
                     : !release ? "slurm_free_conf (or slurm_free_ctl_conf)"
                                : "slurm_print_key_pairs",
                     DB_DEVICES_HINT);
        return;
    }
    if (load((time_t)0, &conf) != 0 || !conf) {
        db_local_say(&eff,
                     "cannot read slurmctld's configuration: cannot tell the nodes about device cgroups (%s not "
                     "passed)",
                     DB_DEVICES_HINT);
        return;
    }
    mem = open_memstream(&text, &len);
    if (mem) {
        if (conf->cgroup_conf) print(mem, conf->cgroup_conf, (char *)"");
        fclose(mem);
    }
    args = malloc(LEN);
    argv = malloc(MAX * sizeof *argv);
    /* A command line cut short could misplace a component's options:
     * then only the configuration's word and srun's environment count. */
    argc = args && argv ? db_local_cmdline(args, LEN, argv, MAX, &complete) : 0;
    if (!complete) argc = 0;
    if (db_srun_hint(conf->task_plugin, text ? text : "", argc, argv, (const char *const *)environ, hint,
                     sizeof hint) != 0)
        db_local_say(&eff, "srun's command line has too many components: %s not passed", DB_DEVICES_HINT);
    else if (setenv(DB_DEVICES_HINT, hint, 1) != 0)
        slurm_verbose(DB_PREFIX "cannot set %s in srun", DB_DEVICES_HINT);
    free(args);
    free(argv);
    free(text);
    release(conf);
}
