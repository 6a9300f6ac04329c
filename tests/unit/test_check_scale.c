/*
 * dist-bind-check at scale: up to 64 ranks one row per
 * rank, as always; above, one line per node and every flagged rank's row in
 * full; --full every rank's row, --per-node the node lines at any size.  And
 * rank 0's judging and printing grow with the ranks as a sort does, not as
 * their square: counted in basic blocks run, never timed.  The steps are made
 * as rank 0 receives them, and counted, in check_scale_hooks.cc.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

int dbcheck_test_ranges(const int *values, int n, char *out, size_t len);
char *dbcheck_test_step(int ranks, int nodes, int cyclic, int gpus, const char *faults, int layout,
                        unsigned long *judge_work, unsigned long table_work[2]);

enum { AUTO, FULL, PER_NODE };

/* --- ranges ----------------------------------------------------------------- */

struct ranges_case {
    int n, v[10];
    const char *want;
};

static const struct ranges_case ranges_cases[] = {
    {0, {0}, ""},
    {1, {5}, "5"},
    {8, {0, 1, 2, 3, 4, 5, 6, 7}, "0-7"},
    {3, {0, 4, 8}, "0,4,8"},
    {2, {7, 8}, "7-8"},
    {7, {5, 0, 1, 2, 3, 7, 8}, "0-3,5,7-8"},
    {6, {3, 3, 1, 2, 2, 9}, "1-3,9"},
    {4, {1024, 0, 3072, 2048}, "0,1024,2048,3072"},
};

START_TEST(ranges_case) {
    const struct ranges_case *c = &ranges_cases[_i];
    char out[256];
    dbcheck_test_ranges(c->v, c->n, out, sizeof out);
    ck_assert_msg(strcmp(out, c->want) == 0, "case %d: \"%s\", want \"%s\"", _i, out, c->want);
}
END_TEST

/* --- the table's layout ----------------------------------------------------- */

/* Lines of `text` for which `pred` holds; *first and *last: the first and
 * the last such line's number (-1 when none). */
static int count_lines(const char *text, int (*pred)(const char *line), int *first, int *last) {
    int n = 0, i = 0;
    *first = *last = -1;
    for (const char *p = text; *p; i++) {
        if (pred(p)) {
            n++;
            if (*first < 0) *first = i;
            *last = i;
        }
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    return n;
}
/* A rank's row starts with its rank; a node's line with its host (n0001). */
static int is_rank_row(const char *l) { return *l >= '0' && *l <= '9'; }
static int is_node_line(const char *l) { return l[0] == 'n' && l[1] >= '0' && l[1] <= '9'; }

/* Every '&'-separated line of `want` is a whole line of `text`. */
static void assert_lines(int i, const char *text, const char *want) {
    char *copy = strdup(want), *tok, *save = NULL;
    size_t len = strlen(text);
    char *framed = malloc(len + 2);
    framed[0] = '\n';
    memcpy(framed + 1, text, len + 1);
    for (tok = strtok_r(copy, "&", &save); tok; tok = strtok_r(NULL, "&", &save)) {
        char line[512];
        snprintf(line, sizeof line, "\n%s\n", tok);
        if (!strstr(framed, line)) fprintf(stderr, "case %d:\n%s", i, text);
        ck_assert_msg(strstr(framed, line), "case %d: no line \"%s\" (the output is on stderr)", i, tok);
    }
    free(framed);
    free(copy);
}

struct table_case {
    int ranks, nodes, cyclic, gpus, layout;
    const char *faults;
    int rank_rows, node_lines; /* rows of the per-rank table (all, or the flagged), node lines */
    const char *lines;         /* '&'-separated whole lines */
    const char *absent;        /* '&'-separated, or NULL */
};

#define STEP200 "dist-bind-check: 200 ranks on 25 nodes, place from dist-bind, exchange over pmix"
#define RANK_HEADER "rank  host   node  local  device  gpu  bus id  gpu numa  cpu numa  flags"
#define NODE_HEADER "host   node  ranks    tasks  devices  flags"
/* Rank 9 on a device past its node's 8, rank 150 with another MASTER_PORT. */
#define TWO_FAULTS "9:device=8;150:master=n0019:29501"
#define ROW9 "9     n0002  1     1/8    8       -    -       -         0         NO-SUCH-DEVICE"
#define ROW150 "150   n0019  18    6/8    6       6    -       -         0         MASTER"
#define FLAGGED2 "flagged ranks, 2 of 200, in full (dist-bind-check --full prints every rank's row):"
#define PROBLEM9 "PROBLEM: rank 9 (n0002): device 8 does not exist: CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 has 8 GPUs"
#define PROBLEM150 "PROBLEM: rank 150 (n0019): MASTER_ADDR:MASTER_PORT=n0019:29501 but rank 0 has n0001:29500"

static const struct table_case table_cases[] = {
    /* 200 ranks on 25 nodes with two problem rows: a line per node, the
     * two rows in full under them, and the step's lines as ever. */
    {200, 25, 0, 0, AUTO, TWO_FAULTS, 2, 25,
     STEP200 "&" NODE_HEADER "&"
             "n0001  0     0-7      8      0-7      ok&"
             "n0002  1     8-15     8      0,2-8    NO-SUCH-DEVICE (rank 9)&"
             "n0019  18    144-151  8      0-7      MASTER (rank 150)&"
             "n0025  24    192-199  8      0-7      ok&" FLAGGED2 "&" RANK_HEADER "&" ROW9 "&" ROW150 "&" PROBLEM9
             "&" PROBLEM150,
     "0     n0001"},
    /* --full: every rank's row, the same rows, no node line. */
    {200, 25, 0, 0, FULL, TWO_FAULTS, 200, 0,
     STEP200 "&" RANK_HEADER "&" ROW9 "&" ROW150 "&"
             "0     n0001  0     0/8    0       0    -       -         0         ok&"
             "199   n0025  24    7/8    7       7    -       -         0         ok",
     NODE_HEADER "&flagged ranks"},
    /* --per-node is what above 64 is anyway. */
    {200, 25, 0, 0, PER_NODE, TWO_FAULTS, 2, 25, NODE_HEADER "&" ROW9 "&" ROW150, NULL},
    /* The spec's threshold: 64 ranks are rows, 65 are nodes. */
    {64, 8, 0, 0, AUTO, "", 64, 0,
     "dist-bind-check: 64 ranks on 8 nodes, place from dist-bind, exchange over pmix&"
     "63    n0008  7     7/8    7       7    -       -         0         ok",
     "tasks  devices"},
    {65, 9, 0, 0, AUTO, "", 0, 9,
     "dist-bind-check: 65 ranks on 9 nodes, place from dist-bind, exchange over pmix&"
     "host   node  ranks  tasks  devices  flags&"
     "n0001  0     0-7    8      0-7      ok&"
     "n0002  1     8-15   8      0-7      ok&"
     "n0003  2     16-22  7      0-6      ok&"
     "n0009  8     58-64  7      0-6      ok&"
     "no rank flagged (dist-bind-check --full prints every rank's row)",
     "rank  host&flagged ranks"},
    {65, 9, 0, 0, FULL, "", 65, 0, "64    n0009  8     6/7    6       6    -       -         0         ok",
     "tasks  devices&no rank flagged"},
    /* Below 64 only when asked. */
    {5, 2, 0, 1, PER_NODE, "", 0, 2,
     "host   node  ranks  tasks  devices  flags&"
     "n0001  0     0-2    3      0-2      ok&"
     "n0002  1     3-4    2      0-1      ok",
     "rank  host"},
    /* Cyclic, and every rank on its node's GPU 0 (found by UUID): the
     * node's ranks named, every row in full. */
    {200, 25, 1, 1, AUTO, "*:device=0", 200, 25,
     "n0001  0     0,25,50,75,100,125,150,175   8      0        DUPLICATE,NOT-OWN (ranks 0,25,50,75,100,125,150,175)&"
     "flagged ranks, 200 of 200, in full (dist-bind-check --full prints every rank's row):&"
     "25    n0001  0     1/8    0       0    0000:10:00.0  0         0         NOT-OWN,DUPLICATE&"
     "PROBLEM: ranks 0 and 25 would both use GPU GPU-n0001-0 (0000:10:00.0) on n0001",
     NULL},
    /* A node whose ranks disagree on their node rank shows both. */
    {72, 9, 0, 0, AUTO, "10:node_rank=5", 8, 9,
     "n0002  1,5   8-15   8      0-7      NODE (ranks 8-15)&"
     "n0006  5     40-47  8      0-7      ok&"
     "PROBLEM: the ranks on n0002 disagree on their node rank",
     NULL},
};

START_TEST(table_case) {
    const struct table_case *c = &table_cases[_i];
    char *out = dbcheck_test_step(c->ranks, c->nodes, c->cyclic, c->gpus, c->faults, c->layout, NULL, NULL);
    ck_assert_msg(out, "case %d: no step", _i);
    int first_row, last_row, first_node, last_node;
    int rows = count_lines(out, is_rank_row, &first_row, &last_row);
    int nodes = count_lines(out, is_node_line, &first_node, &last_node);
    if (rows != c->rank_rows || nodes != c->node_lines || (rows && nodes && first_row < last_node))
        fprintf(stderr, "case %d:\n%s", _i, out);
    ck_assert_msg(rows == c->rank_rows, "case %d: %d rank rows, want %d", _i, rows, c->rank_rows);
    ck_assert_msg(nodes == c->node_lines, "case %d: %d node lines, want %d", _i, nodes, c->node_lines);
    ck_assert_msg(!rows || !nodes || first_row > last_node, "case %d: a rank's row (line %d) above a node's (line %d)",
                  _i, first_row, last_node);
    assert_lines(_i, out, c->lines);
    if (c->absent) {
        char *copy = strdup(c->absent), *tok, *save = NULL;
        for (tok = strtok_r(copy, "&", &save); tok; tok = strtok_r(NULL, "&", &save))
            ck_assert_msg(!strstr(out, tok), "case %d: \"%s\" in the output:\n%.2000s", _i, tok, out);
        free(copy);
    }
    free(out);
}
END_TEST

/* Up to 64 ranks the output is what it always was, to the byte (the lab's
 * tests and people's scripts read it). */
START_TEST(small_table_unchanged) {
    char *out = dbcheck_test_step(5, 2, 0, 0, "4:device=2", AUTO, NULL, NULL);
    const char *want =
        "dist-bind-check: 5 ranks on 2 nodes, place from dist-bind, exchange over pmix\n"
        "rank  host   node  local  device  gpu  bus id  gpu numa  cpu numa  flags\n"
        "0     n0001  0     0/3    0       0    -       -         0         ok\n"
        "1     n0001  0     1/3    1       1    -       -         0         ok\n"
        "2     n0001  0     2/3    2       2    -       -         0         ok\n"
        "3     n0002  1     0/2    0       0    -       -         0         ok\n"
        "4     n0002  1     1/2    2       2    -       -         0         NOT-OWN\n"
        "GPU checks skipped: no rank has a usable GPU (n0001: no usable GPU: no driver)\n"
        "PROBLEM: rank 4 (n0002): device 2 is GPU 2 but the GPU Slurm gave it is 1\n";
    ck_assert_msg(out && strcmp(out, want) == 0, "got:\n%s\nwant:\n%s", out ? out : "(null)", want);
    free(out);
}
END_TEST

/* --- work: 8,192 ranks against 1,024 ------------------------------------- */

/* Eight times the ranks is eight times the work plus a sort's log factor
 * (about 10 times here); the square would be 64 times.  Each case is a
 * path where a finding per rank could be looked up against all findings. */
struct work_case {
    int gpus;
    const char *faults;
};

static const struct work_case work_cases[] = {
    {0, ""},                     /* a good step, no GPU driver */
    {1, ""},                     /* a good step, GPUs told apart by UUID */
    {0, "*:device=0"},           /* every rank on its node's GPU 0, by Slurm's name */
    {1, "*:device=0"},           /* the same found by UUID */
    {0, "*:device=99"},          /* every device past the end */
    {0, "*:local_world=3"},      /* every rank's local world size wrong */
    {0, "*:node_rank=0"},        /* every node claiming node rank 0 */
    {1, "+:master=elsewhere:1"}, /* every rank but 0 with another MASTER */
};

START_TEST(work_case) {
    const struct work_case *c = &work_cases[_i];
    const int small = 1024, big = 8192;
    unsigned long judge[2], table[2][2];
    for (int k = 0; k < 2; k++) {
        int n = k ? big : small;
        char *out = dbcheck_test_step(n, n / 8, 0, c->gpus, c->faults, AUTO, &judge[k], table[k]);
        ck_assert_msg(out, "case %d: no step", _i);
        free(out);
    }
    ck_assert_msg(judge[0] > 0 && table[0][0] > 0, "case %d: nothing counted (built without trace-pc?)", _i);
    ck_assert_msg(judge[1] < 16 * judge[0], "case %d: judging %d ranks took %lu blocks, %d ranks %lu (%.1f times)", _i,
                  big, judge[1], small, judge[0], (double)judge[1] / (double)judge[0]);
    for (int l = 0; l < 2; l++)
        ck_assert_msg(table[1][l] < 16 * table[0][l],
                      "case %d: the table %s of %d ranks took %lu blocks, of %d ranks %lu (%.1f times)", _i,
                      l ? "per rank" : "per node", big, table[1][l], small, table[0][l],
                      (double)table[1][l] / (double)table[0][l]);
}
END_TEST

int main(void) {
    Suite *s = suite_create("check-scale");
    TCase *tc = tcase_create("table");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, ranges_case, 0, (int)(sizeof ranges_cases / sizeof ranges_cases[0]));
    tcase_add_loop_test(tc, table_case, 0, (int)(sizeof table_cases / sizeof table_cases[0]));
    tcase_add_test(tc, small_table_unchanged);
    tcase_add_loop_test(tc, work_case, 0, (int)(sizeof work_cases / sizeof work_cases[0]));
    suite_add_tcase(s, tc);
    return run_suite(s);
}
