/*
 * --dist-bind=closest on six real machines' topologies (hwloc XML exported
 * from the nodes, tests/topology/xml), through the same code the plugin
 * runs: Slurm's task layout over the step's cores, GPU matching, choice,
 * NUMA node and NICs.  Every expected line is worked out by hand from the
 * machine's layout, which each block's comment spells out.
 *
 * Slurm's cores are hwloc's logical core indexes; "cyclic" is Slurm's
 * default second-level distribution (consecutive tasks on consecutive
 * sockets), "block" fills a socket first.  GPUs are in Slurm's numbering:
 * N = the N-th GPU in PCI bus order, unless a row gives the NVIDIA driver's
 * device minors (then N = minor).
 */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db_topo.h"
#include "fake_nvidia.h"
#include "unit.h"

struct row {
    const char *name;
    const char *xml;
    const char *step_cores; /* with ntasks, cpt, dist; or NULL and task_cpus */
    uint32_t ntasks, cpt;
    const char *dist;
    const char *task_cpus;
    const char *gpus; /* NULL: every GPU shown */
    uint32_t k;
    const char *minors; /* "BUS=MINOR,...": fake NVIDIA driver view, or NULL */
    const char *want;   /* exact output, lines joined by '|' */
    const char *err;    /* or: '&'-separated parts of the error */
};

#define DGX2 "nvidiaDGX2.xml"
#define LASSEN "coral-lassen.xml"
#define PASCAL "cts1-pascal.xml"
#define POWER8 "power8gpudistances.xml"
#define TIOGA "eas-tioga.xml"
#define INTEL "32em64t-2n8c2t-pci-normalio.xml"

static const struct row rows[] = {
    /* DGX-2 (trimmed export): cores 0-1 = PUs 0,1 on package/NUMA 0, cores
     * 2-3 = PUs 24,25 on package/NUMA 1.  16 GPUs, PCI bus order: 0-7 =
     * 34,36,39,3b,57,59,5c,5e on socket 0, 8-15 = b7,b9,bc,be,e0,e2,e5,e7
     * on socket 1; pairs (34,36) (39,3b) ... share a leaf PCIe switch. No
     * NICs in the export. */
    /* cyclic: t0 core 0 (S0), t1 core 2 (S1), t2 core 1 (S0), t3 core 3 (S1);
     * socket 0's tasks take its first GPUs in bus order, same for socket 1. */
    {"DGX-2 4 tasks cyclic", DGX2, "0-3", 4, 1, NULL, NULL, NULL, 1, NULL,
     "task 0 cpus 0 gpus 0 numa 0|task 1 cpus 24 gpus 8 numa 1|task 2 cpus 1 gpus 1 numa 0|"
     "task 3 cpus 25 gpus 9 numa 1",
     NULL},
    /* block: t0,t1 on socket 0, t2,t3 on socket 1. */
    {"DGX-2 4 tasks block", DGX2, "0-3", 4, 1, "block:block", NULL, NULL, 1, NULL,
     "task 0 cpus 0 gpus 0 numa 0|task 1 cpus 1 gpus 1 numa 0|task 2 cpus 24 gpus 8 numa 1|"
     "task 3 cpus 25 gpus 9 numa 1",
     NULL},
    /* 2 cores per task: t0 both cores of S0, t1 both of S1; the second GPU
     * is the one sharing the first one's switch. */
    {"DGX-2 2 tasks x 2 GPUs", DGX2, "0-3", 2, 2, NULL, NULL, NULL, 2, NULL,
     "task 0 cpus 0-1 gpus 0,1 numa 0|task 1 cpus 24-25 gpus 8,9 numa 1", NULL},
    /* Four tasks on socket 0's CPUs, 2 GPUs each: switch pairs in bus order. */
    {"DGX-2 4 tasks x 2 GPUs on socket 0", DGX2, NULL, 0, 0, NULL, "0;0;1;1", NULL, 2, NULL,
     "task 0 cpus 0 gpus 0,1 numa 0|task 1 cpus 0 gpus 2,3 numa 0|task 2 cpus 1 gpus 4,5 numa 0|"
     "task 3 cpus 1 gpus 6,7 numa 0",
     NULL},
    /* One task on socket 1, all 16 GPUs in the step: socket 1's first. */
    {"DGX-2 1 task of 16 GPUs", DGX2, "2", 1, 1, NULL, NULL, NULL, 1, NULL, "task 0 cpus 24 gpus 8 numa 1", NULL},
    /* By bus id: the driver says minor 0 = b7 (S1), 1 = 34 (S0), 2 = bc
     * (S1), 3 = 36 (S0).  Cyclic tasks t0,t2 on S0 get minors 1,3 (bus 34,
     * 36); t1,t3 on S1 get 0,2 (b7, bc).  By order they would get 0,8,1,9. */
    {"DGX-2 matched by device minor", DGX2, "0-3", 4, 1, NULL, NULL, "0,1,2,3", 1,
     "0000:b7:00.0=0,0000:34:00.0=1,0000:bc:00.0=2,0000:36:00.0=3",
     "task 0 cpus 0 gpus 1 numa 0|task 1 cpus 24 gpus 0 numa 1|task 2 cpus 1 gpus 3 numa 0|"
     "task 3 cpus 25 gpus 2 numa 1",
     NULL},

    /* Lassen (POWER9, SMT4): cores 0-19 = PUs 8-87 on socket 0 (NUMA 0),
     * cores 20-39 = PUs 96-175 on socket 1 (NUMA 8).  GPUs 0,1 = 0004:04,
     * 0004:05 on socket 0; 2,3 = 0035:03, 0035:04 on socket 1.  InfiniBand
     * mlx5_0/1 on socket 0, mlx5_2/3 on socket 1, each behind its own host
     * bridge: both ports of the GPU's socket are near it. */
    /* 10 cores (40 CPUs) per task, cyclic: t0 cores 0-9 (S0), t1 20-29
     * (S1), t2 10-19 (S0), t3 30-39 (S1).  Rank order would give 0,1,2,3. */
    {"Lassen 4 tasks cyclic", LASSEN, "0-39", 4, 40, NULL, NULL, NULL, 1, NULL,
     "task 0 cpus 8-47 gpus 0 numa 0 nics mlx5_0,mlx5_1|task 1 cpus 96-135 gpus 2 numa 8 nics mlx5_2,mlx5_3|"
     "task 2 cpus 48-87 gpus 1 numa 0 nics mlx5_0,mlx5_1|task 3 cpus 136-175 gpus 3 numa 8 nics mlx5_2,mlx5_3",
     NULL},
    /* block: t0,t1 on socket 0, t2,t3 on socket 1. */
    {"Lassen 4 tasks block", LASSEN, "0-39", 4, 40, "block:block", NULL, NULL, 1, NULL,
     "task 0 cpus 8-47 gpus 0 numa 0 nics mlx5_0,mlx5_1|task 1 cpus 48-87 gpus 1 numa 0 nics mlx5_0,mlx5_1|"
     "task 2 cpus 96-135 gpus 2 numa 8 nics mlx5_2,mlx5_3|task 3 cpus 136-175 gpus 3 numa 8 nics mlx5_2,mlx5_3",
     NULL},
    /* One task per socket, 2 GPUs each. */
    {"Lassen 2 tasks x 2 GPUs", LASSEN, "0-39", 2, 80, NULL, NULL, NULL, 2, NULL,
     "task 0 cpus 8-87 gpus 0,1 numa 0 nics mlx5_0,mlx5_1|task 1 cpus 96-175 gpus 2,3 numa 8 nics mlx5_2,mlx5_3", NULL},
    /* One task on socket 1's first two cores, 4 GPUs in the step. */
    {"Lassen 1 task on socket 1", LASSEN, "20-21", 1, 8, NULL, NULL, NULL, 1, NULL,
     "task 0 cpus 96-103 gpus 2 numa 8 nics mlx5_2,mlx5_3", NULL},

    /* Pascal (Intel, 2 x 18 cores, HT): cores 0-17 = PUs 0-17,36-53 (NUMA 0),
     * cores 18-35 = PUs 18-35,54-71 (NUMA 1).  Both GPUs (04:00, 07:00) on
     * socket 0, under one PCIe switch with the InfiniBand HCA mlx5_0. */
    /* t0 on socket 0 gets GPU 0; t1 on socket 1 has none near and gets the
     * other; the NIC is the one near the GPU, not near the task. */
    {"Pascal 2 tasks cyclic", PASCAL, "0-35", 2, 36, NULL, NULL, NULL, 1, NULL,
     "task 0 cpus 0-17,36-53 gpus 0 numa 0 nics mlx5_0|task 1 cpus 18-35,54-71 gpus 1 numa 1 nics mlx5_0", NULL},
    {"Pascal 1 task x 2 GPUs", PASCAL, "18-19", 1, 4, NULL, NULL, NULL, 2, NULL,
     "task 0 cpus 18-19,54-55 gpus 0,1 numa 1 nics mlx5_0", NULL},
    {"Pascal 3 tasks, 2 GPUs", PASCAL, "0-2", 3, 1, NULL, NULL, NULL, 1, NULL, NULL,
     "3 tasks with 1 GPU each need 3 GPUs, but there are 2"},

    /* POWER8 (SMT2 in this export): cores 0-3 = PUs 0-1,8-9,16-17,24-25
     * (NUMA 0), cores 4-7 = PUs 80-81,88-89,96-97,104-105 (NUMA 1).  GPUs
     * 0,1 = 0002:01, 0003:01 on socket 0; 2,3 = 000a:01, 000b:01 on socket 1.
     * No NICs. */
    /* 2 cores per task, cyclic: t0 cores 0,1; t1 4,5; t2 2,3; t3 6,7. */
    {"POWER8 4 tasks cyclic", POWER8, "0-7", 4, 4, NULL, NULL, NULL, 1, NULL,
     "task 0 cpus 0-1,8-9 gpus 0 numa 0|task 1 cpus 80-81,88-89 gpus 2 numa 1|task 2 cpus 16-17,24-25 gpus 1 numa 0|"
     "task 3 cpus 96-97,104-105 gpus 3 numa 1",
     NULL},
    /* fcyclic spreads each task over both sockets (cores 0,4 and 1,5): every
     * GPU is as near as any other, so local rank and bus order decide. */
    {"POWER8 2 tasks fcyclic", POWER8, "0-7", 2, 4, "block:fcyclic", NULL, NULL, 1, NULL,
     "task 0 cpus 0-1,80-81 gpus 0 numa 0|task 1 cpus 8-9,88-89 gpus 1 numa 0", NULL},
    /* The step holds GPUs 1 (socket 0) and 2 (socket 1); task 0 runs on
     * socket 1, so it gets GPU 2 and task 1 GPU 1 (rank would swap them). */
    {"POWER8 tasks against Slurm's order", POWER8, NULL, 0, 0, NULL, "80-81;0-1", "1,2", 1, NULL,
     "task 0 cpus 80-81 gpus 2 numa 1|task 1 cpus 0-1 gpus 1 numa 0", NULL},

    /* Tioga (EPYC + MI250X, NPS4): one package, NUMA n = cores 16n..16n+15
     * = PUs 16n..16n+15 and +64.  8 GCDs in bus order: 0 c1, 1 c6 (NUMA 3);
     * 2 c9, 3 ce (NUMA 1); 4 d1, 5 d6 (NUMA 0); 6 d9, 7 de (NUMA 2).  One
     * Slingshot NIC per NUMA node: hsi0 (3), hsi1 (1), hsi2 (0), hsi3 (2). */
    /* 8 cores per task: two tasks per NUMA node, each taking its node's
     * GCDs: the well-known 4,5,2,3,6,7,0,1. */
    {"Tioga 8 tasks", TIOGA, "0-63", 8, 16, NULL, NULL, NULL, 1, NULL,
     "task 0 cpus 0-7,64-71 gpus 4 numa 0 nics hsi2|task 1 cpus 8-15,72-79 gpus 5 numa 0 nics hsi2|"
     "task 2 cpus 16-23,80-87 gpus 2 numa 1 nics hsi1|task 3 cpus 24-31,88-95 gpus 3 numa 1 nics hsi1|"
     "task 4 cpus 32-39,96-103 gpus 6 numa 2 nics hsi3|task 5 cpus 40-47,104-111 gpus 7 numa 2 nics hsi3|"
     "task 6 cpus 48-55,112-119 gpus 0 numa 3 nics hsi0|task 7 cpus 56-63,120-127 gpus 1 numa 3 nics hsi0",
     NULL},
    {"Tioga 4 tasks x 2 GCDs", TIOGA, "0-63", 4, 32, NULL, NULL, NULL, 2, NULL,
     "task 0 cpus 0-15,64-79 gpus 4,5 numa 0 nics hsi2|task 1 cpus 16-31,80-95 gpus 2,3 numa 1 nics hsi1|"
     "task 2 cpus 32-47,96-111 gpus 6,7 numa 2 nics hsi3|task 3 cpus 48-63,112-127 gpus 0,1 numa 3 nics hsi0",
     NULL},
    /* Two tasks on NUMA 2 and 3 of an 8-GCD step. */
    {"Tioga 2 tasks on NUMA 2, 3", TIOGA, "32-63", 2, 32, NULL, NULL, NULL, 1, NULL,
     "task 0 cpus 32-47,96-111 gpus 6 numa 2 nics hsi3|task 1 cpus 48-63,112-127 gpus 0 numa 3 nics hsi0", NULL},
    /* Eight tasks squeezed onto NUMA 0: its two GCDs go to tasks 0 and 1;
     * the rest are equally far (one package), so they fill the other
     * nodes' GCDs in bus order: NUMA 3 (0,1), 1 (2,3), 2 (6,7). */
    {"Tioga 8 tasks on NUMA 0", TIOGA, "0-7", 8, 2, NULL, NULL, NULL, 1, NULL,
     "task 0 cpus 0,64 gpus 4 numa 0 nics hsi2|task 1 cpus 1,65 gpus 5 numa 0 nics hsi2|"
     "task 2 cpus 2,66 gpus 0 numa 0 nics hsi0|task 3 cpus 3,67 gpus 1 numa 0 nics hsi0|"
     "task 4 cpus 4,68 gpus 2 numa 0 nics hsi1|task 5 cpus 5,69 gpus 3 numa 0 nics hsi1|"
     "task 6 cpus 6,70 gpus 6 numa 0 nics hsi3|task 7 cpus 7,71 gpus 7 numa 0 nics hsi3",
     NULL},

    /* Intel 2 x 8 cores x 2 threads: cores 0-7 = PUs 0-7,16-23 (NUMA 0),
     * cores 8-15 = PUs 8-15,24-31 (NUMA 1).  Three NVIDIA 3D devices, but
     * only 84:00.0 has a CUDA device: one GPU, on socket 1, under the same
     * bridge as InfiniBand mlx5_0 (the Ethernet ports do not count). */
    {"Intel 1 task, 1 GPU", INTEL, "8-11", 1, 8, NULL, NULL, NULL, 1, NULL,
     "task 0 cpus 8-11,24-27 gpus 0 numa 1 nics mlx5_0", NULL},
    {"Intel task on the far socket", INTEL, NULL, 0, 0, NULL, "0-3", NULL, 1, NULL,
     "task 0 cpus 0-3 gpus 0 numa 0 nics mlx5_0", NULL},
    {"Intel 2 tasks, 1 GPU", INTEL, "0-1", 2, 2, NULL, NULL, NULL, 1, NULL, NULL,
     "2 tasks with 1 GPU each need 2 GPUs, but there are 1"},
    {"Intel GPU 1 does not exist", INTEL, "0", 1, 1, NULL, NULL, "1", 1, NULL, NULL,
     "Slurm's GPU 1, but the topology shows only 1 GPUs"},
    {"Intel CPU outside the machine", INTEL, NULL, 0, 0, NULL, "40", NULL, 1, NULL, NULL,
     "task 0 CPUs: CPU 40 is not in the machine (CPUs 0-31)"},
    {"Intel core outside the machine", INTEL, "14-16", 1, 1, NULL, NULL, NULL, 1, NULL, NULL,
     "step core 16 is outside the machine (16 cores)"},
};

static void remove_tree(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}

START_TEST(machine_row) {
    const struct row *r = &rows[_i];
    char xml[1024], err[DB_ERRLEN] = "", *out = NULL, *want = NULL, *nv = r->minors ? fake_nvidia(r->minors) : NULL;
    db_topo_dry_run a;
    int rc;

    snprintf(xml, sizeof xml, "%s/%s", DB_TEST_XML_DIR, r->xml);
    memset(&a, 0, sizeof a);
    a.topology = xml;
    a.step_cores = r->step_cores;
    a.ntasks = r->ntasks;
    a.cpus_per_task = r->cpt;
    a.distribution = r->dist;
    a.task_cpus = r->task_cpus;
    a.gpus = r->gpus;
    a.gpus_per_task = r->k;
    a.nvidia_proc = nv;
    rc = db_topo_dry_run_text(&a, &out, err, sizeof err);
    if (r->err) {
        ck_assert_msg(rc != 0, "%s: expected an error containing \"%s\", got:\n%s", r->name, r->err, out ? out : "");
        assert_contains_all(r->name, err, r->err);
    } else {
        ck_assert_msg(rc == 0, "%s: unexpected error: %s", r->name, err);
        want = malloc(strlen(r->want) + 2);
        strcpy(want, r->want);
        for (char *p = want; *p; p++)
            if (*p == '|') *p = '\n';
        strcat(want, "\n");
        ck_assert_msg(strcmp(out, want) == 0, "%s:\n--- got\n%s--- want\n%s", r->name, out, want);
    }
    free(want);
    free(out);
    if (nv) {
        remove_tree(nv);
        free(nv);
    }
}
END_TEST

/* Every machine loads, and shows the GPUs its README lists. */
START_TEST(gpu_counts) {
    static const struct {
        const char *xml;
        int gpus;
    } m[] = {{DGX2, 16}, {LASSEN, 4}, {PASCAL, 2}, {POWER8, 4}, {TIOGA, 8}, {INTEL, 1}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        char xml[1024], err[DB_ERRLEN] = "", *out = NULL, gpus[64];
        db_topo_dry_run a;
        memset(&a, 0, sizeof a);
        snprintf(xml, sizeof xml, "%s/%s", DB_TEST_XML_DIR, m[i].xml);
        snprintf(gpus, sizeof gpus, "%d", m[i].gpus - 1);
        a.topology = xml;
        a.task_cpus = NULL;
        a.step_cores = "0";
        a.ntasks = 1;
        a.gpus = gpus; /* the last GPU must exist ... */
        ck_assert_msg(db_topo_dry_run_text(&a, &out, err, sizeof err) == 0, "%s: %s", m[i].xml, err);
        free(out);
        snprintf(gpus, sizeof gpus, "%d", m[i].gpus); /* ... and the next one not */
        ck_assert_msg(db_topo_dry_run_text(&a, &out, err, sizeof err) != 0, "%s shows more than %d GPUs", m[i].xml,
                      m[i].gpus);
        assert_contains_all(m[i].xml, err, "but the topology shows only");
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("machines");
    TCase *tc = tcase_create("rows");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, machine_row, 0, (int)(sizeof rows / sizeof rows[0]));
    tcase_add_test(tc, gpu_counts);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
