/*
 * A stand-in for pyxis in the lab's plugstack.conf (tests/lab/t_pyxis_order.py):
 * what pyxis does to a task's environment, and nothing else.  pyxis, in
 * slurm_spank_task_init, starts (or joins) the container and copies the
 * container's environment over the task's, name by name, with
 * spank_setenv(..., overwrite=1) (pyxis_slurmstepd.c,
 * spank_import_container_env, NVIDIA/pyxis v0.24.0).  The container's
 * environment carries the image's ENV and what enroot's hooks add (e.g.
 * conf/hooks/extra/50-slurm-pytorch.sh: MASTER_ADDR, MASTER_PORT,
 * WORLD_SIZE, RANK, LOCAL_RANK).  This plugin enters nothing: in
 * task_init it reads the "image environment" from the file named by its
 * plugstack.conf argument env=PATH, one NAME=VALUE per line, and sets each
 * over the task's.  Only in steps run with --standin-image (so the batch
 * step is untouched).  Built by the test against the headers of the
 * release it runs on; never installed.
 */
#include <stdio.h>
#include <string.h>

#include <slurm/spank.h>

SPANK_PLUGIN(container_standin, 1);

static char env_file[1024];
static int image_given;

static int image_opt(int val, const char *optarg, int remote) {
    (void)val;
    (void)optarg;
    (void)remote;
    image_given = 1;
    return 0;
}

static struct spank_option image_option = {"standin-image", NULL, "[standin] run in the stand-in container", 0, 0,
                                           image_opt};

int slurm_spank_init(spank_t sp, int ac, char **av) {
    for (int i = 0; i < ac; i++)
        if (strncmp(av[i], "env=", 4) == 0) snprintf(env_file, sizeof env_file, "%s", av[i] + 4);
    if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_REMOTE || spank_context() == S_CTX_ALLOCATOR)
        return spank_option_register(sp, &image_option) == ESPANK_SUCCESS ? 0 : -1;
    return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
    char line[4096];
    FILE *f;
    int rc = 0;

    (void)ac;
    (void)av;
    if (!spank_remote(sp) || !image_given || !env_file[0]) return 0;
    f = fopen(env_file, "re");
    if (!f) {
        slurm_error("container_standin: cannot open %s", env_file);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '=');
        line[strcspn(line, "\n")] = '\0';
        if (!eq || eq == line) continue;
        *eq = '\0';
        if (spank_setenv(sp, line, eq + 1, 1) != ESPANK_SUCCESS) {
            slurm_error("container_standin: cannot set %s", line);
            rc = -1;
        }
    }
    fclose(f);
    return rc;
}
