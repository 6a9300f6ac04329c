/*
 * dist-bind-check's rows and verdict, env-driven: each rank's row is made
 * by the tool's own code from CUDA_VISIBLE_DEVICES and DIST_BIND_GPUS, then
 * judged as rank 0 judges the step.  Lists of UUIDs and MIG ids are far
 * longer than a row's display field: the GPU a rank uses must still be
 * found, and no rank flagged for what a cut list no longer shows.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

int dbcheck_test_rows(int n, const char *const *visible, const char *const *own, const int *device,
                      const int *gpu_count, const int *corrupt, char *gpus, char *flags, char *problems, size_t len);

#define U(x) "GPU-" x "1111111-2222-3333-4444-555555555555"
#define UUIDS8 U("0") "," U("1") "," U("2") "," U("3") "," U("4") "," U("5") "," U("6") "," U("7")
#define M(x) "MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/" x "/0"
#define MIGS7 M("1") "," M("2") "," M("3") "," M("4") "," M("5") "," M("6") "," M("7")

struct rows_case {
    int n;
    const char *visible[2], *own[2];
    int device[2];
    const char *gpus, *flags; /* ';' between ranks */
    const char *problems;     /* '&'-separated substrings, or NULL for none */
    int gpu_count[2];         /* 0 means: as CUDA here says; else count + 1 */
    int corrupt[2];
};

static const struct rows_case cases[] = {
    /* 8 UUIDs (327 characters): the last is found, and it is the task's own. */
    {1, {UUIDS8}, {U("7")}, {7}, U("7"), "ok", NULL, {0}, {0}},
    /* Device past the end: the count is the list's, not a cut list's. */
    {1,
     {UUIDS8},
     {NULL},
     {8},
     "",
     "NO-SUCH-DEVICE",
     "device 8 does not exist: CUDA_VISIBLE_DEVICES=GPU-01111111&...&has 8 GPUs",
     {0},
     {0}},
    /* Not the GPU Slurm gave: named in full. */
    {1,
     {UUIDS8},
     {U("4")},
     {5},
     U("5"),
     "NOT-OWN",
     "device 5 is GPU " U("5") " but the GPU Slurm gave it is " U("4"),
     {0},
     {0}},
    /* torchrun's two workers under one srun --dist-bind task owning GPUs
     * 0,1,2 (its DIST_BIND_DEVICE=0 and SLURM_PROCID=5 left behind): devices
     * 0 and 1, each its own, and Slurm's numbers are not theirs to match. */
    {2, {"0,1,2", "0,1,2"}, {"0,1,2", "0,1,2"}, {0, 0}, "0;1", "ok;ok", NULL, {0}, {6, 6}},
    /* Two torchrun agents on one host (srun -n3 over two nodes), one worker
     * each: each agent is a node of its own, node ranks 0 and 1. */
    {2, {"0,1", "0,1"}, {"0", "1"}, {0, 1}, "0;1", "ok;ok", NULL, {0}, {8, 8}},
    /* Two GPUs per task: the first of DIST_BIND_GPUS is the one. */
    {1, {UUIDS8}, {U("6") "," U("7")}, {6}, U("6"), "ok", NULL, {0}, {0}},
    /* MIG instances (7 x 48 characters). */
    {1, {MIGS7}, {M("6")}, {5}, M("6"), "ok", NULL, {0}, {0}},
    /* Two ranks, one GPU: found by the full name at the end of the list. */
    {2,
     {UUIDS8, UUIDS8},
     {NULL, NULL},
     {7, 7},
     U("7") ";" U("7"),
     "DUPLICATE;DUPLICATE",
     "ranks 0 and 1 would both use GPU " U("7"),
     {0},
     {0}},
    {2, {UUIDS8, UUIDS8}, {U("6"), U("7")}, {6, 7}, U("6") ";" U("7"), "ok;ok", NULL, {0}, {0}},
    /* Short lists and no list at all. */
    {2, {"0,1,2,3", "0,1,2,3"}, {"2", "3"}, {2, 3}, "2;3", "ok;ok", NULL, {0}, {0}},
    {1, {NULL}, {NULL}, {0}, "", "ok", NULL, {0}, {0}},
    /* Listed GPUs the task cannot open: CUDA, which
     * stops at the first entry naming no GPU it can open, saw fewer than
     * the list names.  Under per-task device cgroups "1,0,2" shows none. */
    {1,
     {"1,0,2"},
     {NULL},
     {0},
     "1",
     "CANNOT-OPEN",
     "rank 0 (&CUDA_VISIBLE_DEVICES=1,0,2 lists 3 GPUs but CUDA sees 0: "
     "1,0,2 name no GPU this task can open",
     {1},
     {0}},
    {1, {"0,1,2,3"}, {"0"}, {0}, "0", "CANNOT-OPEN", "lists 4 GPUs but CUDA sees 2: 2,3 name no GPU", {3}, {0}},
    {2, {"0,1", "1,0"}, {"0", "1"}, {0, 0}, "0;1", "ok;ok", NULL, {3, 3}, {0}},
    /* Where CUDA named the GPUs, the UUID decides: one Slurm name on two
     * ranks (each task's own GPU 0 under a device cgroup) is no duplicate,
     * two names of one UUID are (one GPU under two host names, say). */
    {2, {"0", "0"}, {"0", "0"}, {0, 0}, "0;0", "ok;ok", NULL, {2, 2}, {4, 4}},
    {2,
     {"0", "1"},
     {"0", "1"},
     {0, 0},
     "0;1",
     "DUPLICATE;DUPLICATE",
     "ranks 0 and 1 would both use GPU GPU-00000000",
     {2, 3},
     {5, 5}},
    /* Rank 1's environment no longer has what dist-bind set (a container
     * plugin after it): flagged, the finding names the variables. */
    {2,
     {"0,1", "1,0"},
     {"0", "1"},
     {0, 0},
     "0;1",
     "ok;OVERWRITTEN",
     "rank 1 (&not what dist-bind set: LOCAL_RANK,MASTER_PORT (something after dist-bind changed them",
     {3, 3},
     {0, 7}},
    {2,
     {"0", "0"},
     {"0", "0"},
     {0, 0},
     "0;0",
     "DUPLICATE;DUPLICATE",
     "ranks 0 and 1 would both use GPU 0 on",
     {2, 2},
     {0, 0}},
    /* A row another rank sent is checked before anything reads it. */
    {1,
     {"0,1"},
     {"0"},
     {0},
     "0",
     "MALFORMED",
     "rank 0 sent a malformed report: host has no end within 64 bytes",
     {0},
     {1}},
    {2,
     {"0,1", "0,1"},
     {"0", "1"},
     {0, 1},
     "0;1",
     "ok;MALFORMED,CUDA",
     "rank 1 sent a malformed report: GPU status 99 is "
     "not in 0..11",
     {0, 0},
     {0, 2}},
    {2,
     {"0,1", "1,0"},
     {"0", "1"},
     {0, 0},
     "0;1",
     "MALFORMED;ok",
     "rank 0 sent a malformed report: rank 7 is not in 0..0",
     {0, 0},
     {3, 0}},
};

START_TEST(rows_case) {
    const struct rows_case *c = &cases[_i];
    char gpus[2048] = "", flags[2048] = "", problems[2048] = "";
    int count[2] = {c->gpu_count[0] - 1, c->gpu_count[1] - 1};
    ck_assert_msg(
        dbcheck_test_rows(c->n, c->visible, c->own, c->device, count, c->corrupt, gpus, flags, problems, sizeof gpus),
        "case %d: no handle", _i);
    ck_assert_msg(strcmp(gpus, c->gpus) == 0, "case %d: gpu \"%s\", want \"%s\"", _i, gpus, c->gpus);
    ck_assert_msg(strcmp(flags, c->flags) == 0, "case %d: flags \"%s\", want \"%s\" (%s)", _i, flags, c->flags,
                  problems);
    if (c->problems)
        assert_contains_all("problems", problems, c->problems);
    else
        ck_assert_msg(!*problems || !strstr(problems, "GPU"), "case %d: unexpected problem: %s", _i, problems);
}
END_TEST

int main(void) {
    Suite *s = suite_create("check-rows");
    TCase *tc = tcase_create("rows");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, rows_case, 0, (int)(sizeof cases / sizeof cases[0]));
    suite_add_tcase(s, tc);
    return run_suite(s);
}
