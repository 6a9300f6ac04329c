/* Test fixture shared by the topology tests: a directory laid out like
 * /proc/driver/nvidia/gpus ("BUS=MINOR,..."), for DIST_BIND_NVIDIA_PROC. */
#ifndef DIST_BIND_FAKE_NVIDIA_H
#define DIST_BIND_FAKE_NVIDIA_H

#include <sys/stat.h>

#include "unit.h"

static inline char *fake_nvidia(const char *spec) {
    char tmpl[] = "/tmp/dist-bind-nvidia.XXXXXX", *dir = mkdtemp(tmpl), *copy, *tok, *save = NULL;
    ck_assert_msg(dir != NULL, "mkdtemp");
    dir = strdup(dir);
    copy = strdup(spec);
    for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char path[512];
        FILE *f;
        char *eq = strchr(tok, '=');
        *eq = '\0';
        snprintf(path, sizeof path, "%s/%s", dir, tok);
        ck_assert(mkdir(path, 0755) == 0);
        snprintf(path, sizeof path, "%s/%s/information", dir, tok);
        f = fopen(path, "w");
        ck_assert(f != NULL);
        fprintf(f,
                "Model: \t\t Tesla V100-SXM3-32GB\nIRQ:   \t\t 42\nGPU UUID: \t GPU-%s\nBus Location: \t %s\n"
                "Device Minor: \t %s\n",
                eq + 1, tok, eq + 1);
        fclose(f);
    }
    free(copy);
    return dir;
}

#endif
