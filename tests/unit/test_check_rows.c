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

int dbcheck_test_rows(int n, const char *const *visible, const char *const *own, const int *device, char *gpus,
                      char *flags, char *problems, size_t len);

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
};

static const struct rows_case cases[] = {
    /* 8 UUIDs (327 characters): the last is found, and it is the task's own. */
    {1, {UUIDS8}, {U("7")}, {7}, U("7"), "ok", NULL},
    /* Device past the end: the count is the list's, not a cut list's. */
    {1, {UUIDS8}, {NULL}, {8}, "", "NO-SUCH-DEVICE",
     "device 8 does not exist: CUDA_VISIBLE_DEVICES=GPU-01111111&...&has 8 GPUs"},
    /* Not the GPU Slurm gave: named in full. */
    {1, {UUIDS8}, {U("4")}, {5}, U("5"), "NOT-OWN", "device 5 is GPU " U("5") " but the GPU Slurm gave it is " U("4")},
    /* Two GPUs per task: the first of DIST_BIND_GPUS is the one. */
    {1, {UUIDS8}, {U("6") "," U("7")}, {6}, U("6"), "ok", NULL},
    /* MIG instances (7 x 48 characters). */
    {1, {MIGS7}, {M("6")}, {5}, M("6"), "ok", NULL},
    /* Two ranks, one GPU: found by the full name at the end of the list. */
    {2, {UUIDS8, UUIDS8}, {NULL, NULL}, {7, 7}, U("7") ";" U("7"), "DUPLICATE;DUPLICATE",
     "ranks 0 and 1 would both use GPU " U("7")},
    {2, {UUIDS8, UUIDS8}, {U("6"), U("7")}, {6, 7}, U("6") ";" U("7"), "ok;ok", NULL},
    /* Short lists and no list at all. */
    {2, {"0,1,2,3", "0,1,2,3"}, {"2", "3"}, {2, 3}, "2;3", "ok;ok", NULL},
    {1, {NULL}, {NULL}, {0}, "", "ok", NULL},
};

START_TEST(rows_case) {
    const struct rows_case *c = &cases[_i];
    char gpus[2048] = "", flags[2048] = "", problems[2048] = "";
    ck_assert_msg(dbcheck_test_rows(c->n, c->visible, c->own, c->device, gpus, flags, problems, sizeof gpus),
                  "case %d: no handle", _i);
    ck_assert_msg(strcmp(gpus, c->gpus) == 0, "case %d: gpu \"%s\", want \"%s\"", _i, gpus, c->gpus);
    ck_assert_msg(strcmp(flags, c->flags) == 0, "case %d: flags \"%s\", want \"%s\" (%s)", _i, flags, c->flags, problems);
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
