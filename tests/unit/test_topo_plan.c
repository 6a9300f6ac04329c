/*
 * The plan in closest mode with the node's choice injected (what lib/topo
 * hands it in user_init): the rank promise with the chosen GPUs, the GPU
 * lists rewritten to match, DIST_BIND_NUMA / DIST_BIND_NICS, the user's
 * values winning, the fallback to rank, and choices the plan must refuse.
 */
#include <stdint.h>

#include "db_core.h"
#include "unit.h"

struct row {
    const char *name;
    const char *opt;
    uint32_t ntasks, local_ntasks;
    const char *step_env;
    uint32_t rank, local;
    const char *task_env;
    const char *choice;   /* per task "POS,POS/NUMA/NICS" joined by ';'; NULL: none given */
    const char *fallback; /* or: no choice, this reason */
    const char *want;     /* "K=V|-K" as in test_plan.c */
    const char *set_err;  /* db_node_plan_set_closest must refuse the choice with this */
    const char *verbose;  /* '&'-separated parts of the verbose line */
};

#define N1(tpn) "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=" tpn
#define GPUS(l) "|SLURM_STEP_GPUS=" l "|CUDA_VISIBLE_DEVICES=" l "|GPU_DEVICE_ORDINAL=" l "|ROCR_VISIBLE_DEVICES=" l
#define TASK(l) "CUDA_VISIBLE_DEVICES=" l "|GPU_DEVICE_ORDINAL=" l "|ROCR_VISIBLE_DEVICES=" l

/* Lassen-like node, 4 tasks cyclic over sockets: tasks 0,2 on socket 0
 * (GPUs 0,1), tasks 1,3 on socket 1 (GPUs 2,3).  Slurm bound task i to
 * GPU i; closest gives task 1 GPU 2 and task 2 GPU 1. */
#define CYC "0/0/mlx5_0,mlx5_1;2/8/mlx5_2,mlx5_3;1/0/mlx5_0,mlx5_1;3/8/mlx5_2,mlx5_3"
#define SRC "topology from /spool/hwloc_topo_whole.xml, GPUs matched by PCI bus order"

static const struct row rows[] = {
    {"closest task 0", "closest", 4, 4, N1("4") GPUS("0,1,2,3"), 0, 0, TASK("0"), CYC, NULL,
     "CUDA_VISIBLE_DEVICES=0,1,2,3|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=0|DIST_BIND_NUMA=0|DIST_BIND_NICS=mlx5_0,mlx5_1|"
     "DIST_BIND_MODE=closest",
     NULL, NULL},
    /* Own GPU 2 at device 1, the others in Slurm's order around it. */
    {"closest task 1 gets GPU 2", "closest,verbose", 4, 4, N1("4") GPUS("0,1,2,3"), 1, 1, TASK("1"), CYC, NULL,
     "CUDA_VISIBLE_DEVICES=0,2,1,3|GPU_DEVICE_ORDINAL=0,1,2,3|ROCR_VISIBLE_DEVICES=0,2,1,3|HIP_VISIBLE_DEVICES=0,1,2,3|"
     "DIST_BIND_DEVICE=1|"
     "DIST_BIND_GPUS=2|DIST_BIND_NUMA=8|DIST_BIND_NICS=mlx5_2,mlx5_3|LOCAL_RANK=1",
     NULL, "gpus=2 visible=0,2,1,3 device=1 mode=closest&closest: " SRC},
    {"closest task 2 gets GPU 1", "closest", 4, 4, N1("4") GPUS("0,1,2,3"), 2, 2, TASK("2"), CYC, NULL,
     "CUDA_VISIBLE_DEVICES=0,2,1,3|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=1|DIST_BIND_NUMA=0", NULL, NULL},
    /* Slurm's global numbers 4-7 on the node: positions pick from them. */
    {"closest global numbering", "closest", 4, 4, N1("4") GPUS("4,5,6,7"), 1, 1, TASK("5"), CYC, NULL,
     "CUDA_VISIBLE_DEVICES=4,6,5,7|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=6", NULL, NULL},
    /* Unbound (--gpus-per-node): every task's list is the step's. */
    {"closest unbound", "closest", 2, 2, N1("2") GPUS("0,1,2,3"), 0, 0, TASK("0,1,2,3"), "3/1/;0/0/", NULL,
     "CUDA_VISIBLE_DEVICES=3,0,1,2|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=3|DIST_BIND_NUMA=1|-DIST_BIND_NICS", NULL, NULL},
    /* k=2: devices LOCAL_RANK*2.. are the task's pair, nearest first. */
    {"closest k=2 task 1", "closest", 2, 2, N1("2") GPUS("0,1,2,3"), 1, 1, TASK("2,3"), "2,3/8/;1,0/0/", NULL,
     "CUDA_VISIBLE_DEVICES=2,3,1,0|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=1,0|DIST_BIND_NUMA=0", NULL, NULL},
    {"closest isolate-like only task", "closest", 1, 1, N1("1") GPUS("0,1"), 0, 0, TASK("0,1"), "1,0/1/hsi1", NULL,
     "CUDA_VISIBLE_DEVICES=1,0|-DIST_BIND_DEVICE|DIST_BIND_GPUS=1,0|DIST_BIND_NICS=hsi1", NULL, NULL},
    /* AMD: only ROCR_VISIBLE_DEVICES. */
    {"closest ROCR only", "closest", 2, 2, N1("2") "|SLURM_STEP_GPUS=0,1|ROCR_VISIBLE_DEVICES=0,1", 0, 0,
     "ROCR_VISIBLE_DEVICES=0", "1/3/hsi0;0/0/hsi2", NULL,
     "ROCR_VISIBLE_DEVICES=1,0|DIST_BIND_GPUS=1|DIST_BIND_NUMA=3|DIST_BIND_NICS=hsi0|"
     "-CUDA_VISIBLE_DEVICES",
     NULL, NULL},
    /* A value the user exported wins, and verbose says so. */
    {"user's DIST_BIND_NUMA wins", "closest,verbose", 4, 4, N1("4") GPUS("0,1,2,3"), 1, 1,
     TASK("1") "|DIST_BIND_NUMA=5|DIST_BIND_NICS=ib9", CYC, NULL, "-DIST_BIND_NUMA|-DIST_BIND_NICS|DIST_BIND_GPUS=2",
     NULL, "DIST_BIND_NUMA set by user wins over 8&DIST_BIND_NICS set by user wins over mlx5_2,mlx5_3"},
    /* NUMA unknown: not set. */
    {"numa unknown", "closest", 2, 2, N1("2") GPUS("0,1"), 0, 0, TASK("0"), "0/-1/;1/-1/", NULL,
     "DIST_BIND_GPUS=0|-DIST_BIND_NUMA|-DIST_BIND_NICS", NULL, NULL},

    /* --- no choice: closest is rank, and verbose says why -------------------------------------- */
    {"fallback with reason", "closest,verbose", 4, 4, N1("4") GPUS("0,1,2,3"), 1, 1, TASK("1"), NULL,
     "the topology shows no GPUs; topology by live discovery",
     "CUDA_VISIBLE_DEVICES=0,1,2,3|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=1|-DIST_BIND_NUMA|-DIST_BIND_NICS|"
     "DIST_BIND_MODE=closest",
     NULL,
     "closest: no topology information for these GPUs (the topology shows no GPUs; topology by live discovery), "
     "choosing as rank"},
    {"no choice given at all", "closest,verbose", 4, 4, N1("4") GPUS("0,1,2,3"), 2, 2, TASK("2"), NULL, NULL,
     "DIST_BIND_GPUS=2|-DIST_BIND_NUMA", NULL, "closest: no topology information for these GPUs, choosing as rank"},
    {"no GPUs: no closest note", "closest,verbose", 4, 4, N1("4"), 2, 2, "", NULL, "the step has no GPUs",
     "RANK=2|-CUDA_VISIBLE_DEVICES|-DIST_BIND_NUMA", NULL, ""},

    /* --- choices the plan refuses (it stays rank) ------------------------------------------------- */
    {"choice for too few tasks", "closest", 4, 4, N1("4") GPUS("0,1,2,3"), 1, 1, TASK("1"), "0/0/;1/0/", NULL,
     "DIST_BIND_GPUS=1|-DIST_BIND_NUMA", "a choice for 2 tasks, but node node1 runs 4", NULL},
    {"position out of range", "closest", 2, 2, N1("2") GPUS("0,1"), 1, 1, TASK("1"), "0/0/;4/0/", NULL,
     "DIST_BIND_GPUS=1", "task 1 got GPU position 4 of 2", NULL},
    {"GPU given twice", "closest", 2, 2, N1("2") GPUS("0,1"), 1, 1, TASK("1"), "0/0/;0/0/", NULL, "DIST_BIND_GPUS=1",
     "task 1 got GPU position 0 twice", NULL},
    {"uneven k", "closest", 2, 2, N1("2") GPUS("0,1,2"), 1, 1, TASK("1"), "0,1/0/;2/0/", NULL, "DIST_BIND_GPUS=1",
     "task 1 got 1 GPUs; every task needs the same number", NULL},
    {"not closest mode", "rank", 2, 2, N1("2") GPUS("0,1"), 1, 1, TASK("1"), "1/0/;0/0/", NULL,
     "DIST_BIND_GPUS=1|-DIST_BIND_NUMA|DIST_BIND_MODE=rank", "not in closest mode", NULL},
};

/* Parse "POS,POS/NUMA/NICS;..." into arrays the input points into. */
struct parsed {
    db_closest_task tasks[16];
    size_t pos[16][8];
    char nics[16][64];
    db_closest_input in;
};

static void parse_choice(const char *spec, struct parsed *p) {
    char *copy = strdup(spec), *task, *save = NULL;
    size_t t = 0;
    memset(p, 0, sizeof *p);
    for (task = strtok_r(copy, ";", &save); task; task = strtok_r(NULL, ";", &save), t++) {
        char *numa = strchr(task, '/'), *nics = strchr(numa + 1, '/'), *g, *s2 = NULL;
        *numa++ = '\0';
        *nics++ = '\0';
        for (g = strtok_r(task, ",", &s2); g; g = strtok_r(NULL, ",", &s2))
            p->pos[t][p->tasks[t].ngpus++] = (size_t)atoi(g);
        snprintf(p->nics[t], sizeof p->nics[t], "%s", nics);
        p->tasks[t].gpus = p->pos[t];
        p->tasks[t].numa = atoi(numa);
        p->tasks[t].nics = p->nics[t];
    }
    p->in.source = SRC;
    p->in.tasks = p->tasks;
    p->in.ntasks = t;
    free(copy);
}

static const char *value_of(db_task_plan *tp, const char *name, int *found) {
    *found = 0;
    for (size_t i = 0; i < db_task_plan_count(tp); i++)
        if (strcmp(db_task_plan_name(tp, i), name) == 0) {
            *found = 1;
            return db_task_plan_value(tp, i);
        }
    return NULL;
}

START_TEST(closest_row) {
    const struct row *r = &rows[_i];
    char err[DB_ERRLEN] = "", **senv = make_env(r->step_env), **tenv = make_env(r->task_env), *want, *tok, *save = NULL;
    db_config cfg;
    db_request opt, eff;
    db_node_plan *np = NULL;
    db_task_plan *tp = NULL;
    db_node_input ni = {7, 0, 1, 0, r->ntasks, r->local_ntasks, (const char *const *)senv, 0, 0, 0, 0, NULL, 0};
    db_task_input ti = {r->rank, r->local, (const char *const *)tenv};
    struct parsed p;
    int rc;

    ck_assert(db_config_parse(0, NULL, &cfg, err, sizeof err) == 0);
    ck_assert_msg(db_request_parse(r->opt, &opt, err, sizeof err) == 0, "%s: %s", r->name, err);
    eff = db_effective(&cfg, &opt);
    ck_assert_msg(db_node_plan_new(&cfg, &eff, &ni, &np, err, sizeof err) == 0, "%s: %s", r->name, err);
    if (r->choice || r->fallback) {
        if (r->choice) {
            parse_choice(r->choice, &p);
        } else {
            memset(&p, 0, sizeof p);
            p.in.fallback = r->fallback;
        }
        rc = db_node_plan_set_closest(np, &p.in, err, sizeof err);
        if (r->set_err) {
            ck_assert_msg(rc != 0, "%s: the plan took a bad choice", r->name);
            assert_contains_all(r->name, err, r->set_err);
        } else {
            ck_assert_msg(rc == 0, "%s: %s", r->name, err);
        }
    }
    ck_assert_msg(db_task_plan_new(np, &ti, &tp, err, sizeof err) == 0, "%s: %s", r->name, err);

    want = strdup(r->want);
    for (tok = strtok_r(want, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
        int found;
        if (tok[0] == '-') {
            const char *v = value_of(tp, tok + 1, &found);
            ck_assert_msg(!found || !v, "%s: %s must not be set, got \"%s\"", r->name, tok + 1, v ? v : "");
            continue;
        }
        char *eq = strchr(tok, '=');
        *eq = '\0';
        const char *v = value_of(tp, tok, &found);
        ck_assert_msg(found && v && strcmp(v, eq + 1) == 0, "%s: %s: got \"%s\", want \"%s\"", r->name, tok,
                      found && v ? v : "(not set)", eq + 1);
    }
    free(want);
    if (r->verbose && *r->verbose) assert_contains_all(r->name, db_task_plan_verbose(tp), r->verbose);
    if (r->verbose && !*r->verbose && db_task_plan_verbose(tp))
        ck_assert_msg(strstr(db_task_plan_verbose(tp), "closest:") == NULL, "%s: unexpected closest note: %s", r->name,
                      db_task_plan_verbose(tp));
    db_task_plan_free(tp);
    db_node_plan_free(np);
    free_env(senv);
    free_env(tenv);
}
END_TEST

/* The plan tells the glue which GPUs to match, in its own order. */
START_TEST(gpu_ids) {
    char err[DB_ERRLEN], **senv = make_env(N1("2") GPUS("4,6"));
    db_config cfg;
    db_request eff = {DB_MODE_CLOSEST, 0, 0, 0};
    db_node_plan *np = NULL;
    db_node_input ni = {7, 0, 1, 0, 2, 2, (const char *const *)senv, 0, 0, 0, 0, NULL, 0};
    ck_assert(db_config_parse(0, NULL, &cfg, err, sizeof err) == 0);
    ck_assert(db_node_plan_new(&cfg, &eff, &ni, &np, err, sizeof err) == 0);
    ck_assert_uint_eq(db_node_plan_gpu_count(np), 2);
    ck_assert_str_eq(db_node_plan_gpu_id(np, 0), "4");
    ck_assert_str_eq(db_node_plan_gpu_id(np, 1), "6");
    ck_assert_ptr_null(db_node_plan_gpu_id(np, 2));
    ck_assert(db_node_plan_set_closest(np, NULL, err, sizeof err) != 0);
    db_node_plan_free(np);
    free_env(senv);
    ck_assert_uint_eq(db_node_plan_gpu_count(NULL), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("closest plan");
    TCase *tc = tcase_create("rows");
    tcase_add_loop_test(tc, closest_row, 0, (int)(sizeof rows / sizeof rows[0]));
    tcase_add_test(tc, gpu_ids);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
