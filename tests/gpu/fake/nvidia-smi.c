/*
 * A fake nvidia-smi (test code): the node's GPUs of FAKEGPU_DEVICES, in
 * bus order, whatever CUDA_VISIBLE_DEVICES says (as the real one), for
 * the GPU test scripts' view of the machine:
 *   nvidia-smi -L
 *   nvidia-smi --query-gpu=index,pci.bus_id,uuid,compute_mode,name --format=csv,noheader
 */
#include <stdio.h>
#include <string.h>

#include "fakegpu.h"

static const char *mode_name(int m) {
    return m == FG_MODE_EXCLUSIVE ? "Exclusive_Process" : m == FG_MODE_PROHIBITED ? "Prohibited" : "Default";
}

int main(int argc, char **argv) {
    int n;
    const struct fg_dev *g = fg_node_gpus(&n);
    if (!g) {
        fputs(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver (fake: FAKEGPU_DEVICES "
            "is not set).\n",
            stderr);
        return 9;
    }
    const char *query = NULL;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-L"))
            list = 1;
        else if (!strncmp(argv[i], "--query-gpu=", 12))
            query = argv[i] + 12;
        else if (strncmp(argv[i], "--format=csv", 12)) {
            fprintf(stderr, "fake nvidia-smi: unsupported argument %s\n", argv[i]);
            return 2;
        }
    }
    if (!list && !query) {
        fputs("fake nvidia-smi: use -L or --query-gpu=... --format=csv,noheader\n", stderr);
        return 2;
    }
    for (int i = 0; i < n; i++) {
        if (list) {
            printf("GPU %d: Fake GPU (UUID: %s)\n", i, g[i].uuid_str);
            continue;
        }
        char fields[512], *f, *save = NULL;
        snprintf(fields, sizeof fields, "%s", query);
        int first = 1;
        for (f = strtok_r(fields, ",", &save); f; f = strtok_r(NULL, ",", &save), first = 0) {
            if (!first) fputs(", ", stdout);
            if (!strcmp(f, "index"))
                printf("%d", i);
            else if (!strcmp(f, "pci.bus_id"))
                printf("0000%s", g[i].bus); /* 8-digit domain, as nvidia-smi */
            else if (!strcmp(f, "uuid"))
                fputs(g[i].uuid_str, stdout);
            else if (!strcmp(f, "compute_mode"))
                fputs(mode_name(g[i].mode), stdout);
            else if (!strcmp(f, "name"))
                fputs("Fake GPU", stdout);
            else {
                fprintf(stderr, "fake nvidia-smi: unknown field %s\n", f);
                return 2;
            }
        }
        putchar('\n');
    }
    return 0;
}
