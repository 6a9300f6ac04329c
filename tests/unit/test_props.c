/*
 * Properties of the plan over many generated layouts, and robustness on
 * random garbage (run under ASan/UBSan: any overflow, leak or UB fails).
 *
 * For every generated step that the plan accepts, in rank mode:
 *   - the visible list is a permutation of the step's GPUs on the node;
 *   - devices DIST_BIND_DEVICE .. +k-1 are exactly the task's own GPUs;
 *   - DIST_BIND_DEVICE == LOCAL_RANK * k, and a node's only task has none
 *     (its device is 0, CUDA's default and libdistbind's choice);
 * in isolate mode the visible list is exactly the own GPUs.  Steps without
 * a list for the task (--gpu-bind=none), with srun's word on GPUs per task,
 * and inside device cgroups (Slurm's lists numbered from 0) are among them.
 * Garbage input yields either a plan or one non-empty message, never a
 * crash.
 */
#include <stdint.h>

#include "db_core.h"
#include "unit.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static const char *get(db_task_plan *tp, const char *name) {
    for (size_t i = 0; i < db_task_plan_count(tp); i++)
        if (strcmp(db_task_plan_name(tp, i), name) == 0) return db_task_plan_value(tp, i);
    return NULL;
}

/* Split "a,b,c" into fixed slots. */
static int split_list(const char *s, char out[][16], int max) {
    int n = 0;
    const char *p = s;
    while (p && *p && n < max) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        snprintf(out[n++], 16, "%.*s", (int)len, p);
        p = c ? c + 1 : NULL;
    }
    return n;
}

START_TEST(generated_layouts) {
    char err[DB_ERRLEN];
    db_config cfg;
    ck_assert(db_config_parse(0, NULL, &cfg, err, sizeof err) == 0);
    for (int iter = 0; iter < 4000; iter++) {
        int ngpu = 1 + next() % 8, k = 1 + next() % 3, ntasks_node = 1 + next() % 8;
        int isolate = next() % 2, global_numbers = next() % 2, per_task_word = next() % 2, cgroup = next() % 3 == 0;
        if (cgroup) global_numbers = 0;
        char step_list[128] = "", task_list[128] = "", senv_s[512], tenv_s[256];
        int perm[8];
        for (int i = 0; i < ngpu; i++) perm[i] = i;
        for (int i = ngpu - 1; i > 0 && !cgroup; i--) { /* Slurm's list order need not be sorted */
            int j = next() % (i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int i = 0; i < ngpu; i++)
            snprintf(step_list + strlen(step_list), sizeof step_list - strlen(step_list), "%s%d", i ? "," : "",
                     perm[i] + (global_numbers ? 8 : 0));
        int local = next() % ntasks_node;
        /* Inside a device cgroup a bound task could open only its own GPU
         * (t_cgroup covers that); here Slurm did not bind, or bound with
         * --gres-flags=allow-task-sharing. */
        int bound = ntasks_node > 1 && ntasks_node * k <= ngpu;
        int nolist = !bound && next() % 2; /* --gpu-bind=none */
        if (bound) {                       /* Slurm's per-task binding: k consecutive GPUs of its list */
            char tmp[8][16];
            split_list(step_list, tmp, 8);
            for (int j = 0; j < k; j++)
                snprintf(task_list + strlen(task_list), sizeof task_list - strlen(task_list), "%s%s", j ? "," : "",
                         tmp[local * k + j]);
        } else {
            snprintf(task_list, sizeof task_list, "%s", step_list);
        }
        snprintf(senv_s, sizeof senv_s,
                 "SLURM_STEP_NODELIST=n[1-2]|SLURM_STEP_TASKS_PER_NODE=%d,1|SLURM_STEP_GPUS=x|CUDA_VISIBLE_DEVICES=%"
                 "s|" DB_DEVICES_HINT "=%s%s%.0d",
                 ntasks_node, step_list, cgroup ? "cgroup,task-sharing" : "none",
                 per_task_word ? ",gpus-per-task=" : "", per_task_word ? k : 0);
        snprintf(tenv_s, sizeof tenv_s, nolist ? "X=%s" : "CUDA_VISIBLE_DEVICES=%s", task_list);
        char **senv = make_env(senv_s), **tenv = make_env(tenv_s);
        db_request req = {isolate ? DB_MODE_ISOLATE : DB_MODE_RANK, 0, 0, 0};
        db_node_input ni = {
            1, 0, 2,    0, (uint32_t)ntasks_node + 1, (uint32_t)ntasks_node, (const char *const *)senv, 0, 0,
            0, 0, NULL, 0};
        db_task_input ti = {(uint32_t)local, (uint32_t)local, (const char *const *)tenv};
        db_node_plan *np = NULL;
        db_task_plan *tp = NULL;
        int rc = db_node_plan_new(&cfg, &req, &ni, &np, err, sizeof err);
        if (rc == 0) rc = db_task_plan_new(np, &ti, &tp, err, sizeof err);
        int fits = ntasks_node <= ngpu;
        if (!fits) {
            ck_assert_msg(rc != 0 && strstr(err, "share"), "%d tasks on %d GPUs must fail: %s", ntasks_node, ngpu,
                          rc ? err : "ok");
        } else {
            ck_assert_msg(rc == 0, "layout %s / task %s (local %d of %d) failed: %s", step_list, task_list, local,
                          ntasks_node, err);
            char vis[8][16], own[8][16], stepv[8][16];
            int nv = split_list(get(tp, "CUDA_VISIBLE_DEVICES"), vis, 8);
            int no = split_list(get(tp, "DIST_BIND_GPUS"), own, 8);
            int ns = split_list(step_list, stepv, 8);
            const char *devv = get(tp, "DIST_BIND_DEVICE");
            int dev = devv ? atoi(devv) : 0;
            ck_assert_msg((devv == NULL) == (ntasks_node == 1), "DIST_BIND_DEVICE %s with %d tasks on the node",
                          devv ? devv : "unset", ntasks_node);
            int unbound_k = nolist && per_task_word && ntasks_node * k <= ngpu ? k : 1;
            ck_assert_int_eq(no, bound ? k : (ntasks_node == 1 ? ngpu : unbound_k));
            if (isolate) {
                ck_assert_int_eq(nv, no);
                ck_assert_int_eq(dev, 0);
            } else {
                ck_assert_int_eq(nv, ns);
                ck_assert_int_eq(dev, local * no);
                for (int i = 0; i < ns; i++) { /* a permutation of the step's list */
                    int found = 0;
                    for (int j = 0; j < nv; j++) found += strcmp(stepv[i], vis[j]) == 0;
                    ck_assert_msg(found == 1, "%s appears %d times in the visible list", stepv[i], found);
                }
            }
            for (int j = 0; j < no; j++)
                ck_assert_msg(strcmp(vis[dev + j], own[j]) == 0, "device %d is %s, own GPU is %s", dev + j,
                              vis[dev + j], own[j]);
            if (bound) ck_assert_str_eq(get(tp, "DIST_BIND_GPUS"), task_list);
        }
        db_task_plan_free(tp);
        db_node_plan_free(np);
        free_env(senv);
        free_env(tenv);
    }
}
END_TEST

static void random_text(char *buf, size_t len) {
    static const char alphabet[] = "0123456789,-[]()x=abGPU-MIG- ,,0199999999999999999999";
    size_t n = next() % (len - 1);
    for (size_t i = 0; i < n; i++) buf[i] = alphabet[next() % (sizeof alphabet - 1)];
    buf[n] = '\0';
}

START_TEST(garbage_never_crashes) {
    char err[DB_ERRLEN], a[96], b[96], c[96], d[96], e[48], senv_s[800], tenv_s[200];
    for (int iter = 0; iter < 20000; iter++) {
        db_config cfg;
        db_request req;
        random_text(a, sizeof a);
        random_text(b, sizeof b);
        random_text(c, sizeof c);
        random_text(d, sizeof d);
        random_text(e, sizeof e);
        /* option and config parsers */
        if (db_request_parse(e, &req, err, sizeof err) != 0) ck_assert(err[0] != '\0');
        {
            char kv[64];
            const char *argv[1] = {kv};
            snprintf(kv, sizeof kv, "%s=%s", next() % 2 ? "ports" : "default", e);
            if (db_config_parse(1, argv, &cfg, err, sizeof err) != 0) ck_assert(err[0] != '\0');
        }
        ck_assert(db_config_parse(0, NULL, &cfg, err, sizeof err) == 0);
        snprintf(senv_s, sizeof senv_s,
                 "SLURM_STEP_NODELIST=%s|SLURM_STEP_TASKS_PER_NODE=%s|SLURM_STEP_GPUS=%s|CUDA_VISIBLE_DEVICES=%s|SLURM_"
                 "STEP_RESV_PORTS=%s|" DB_DEVICES_HINT "=%s",
                 a, b, c, c, e, next() % 2 ? e : "cgroup,gpus-per-task=2");
        snprintf(tenv_s, sizeof tenv_s, "CUDA_VISIBLE_DEVICES=%s", d);
        char **senv = make_env(senv_s), **tenv = make_env(tenv_s);
        db_request rq = {DB_MODE_RANK + (int)(next() % 4), (int)(next() % 2), (int)(next() % 2), 0};
        db_node_input ni = {next(),
                            next() % 3,
                            1 + next() % 4,
                            next() % 4,
                            1 + next() % 16,
                            1 + next() % 8,
                            (const char *const *)senv,
                            0,
                            0,
                            0,
                            0,
                            NULL,
                            0};
        db_task_input ti = {next() % 16, next() % 8, (const char *const *)tenv};
        db_node_plan *np = NULL;
        db_task_plan *tp = NULL;
        if (db_node_plan_new(&cfg, &rq, &ni, &np, err, sizeof err) != 0) {
            ck_assert(np == NULL && err[0] != '\0');
        } else if (db_task_plan_new(np, &ti, &tp, err, sizeof err) != 0) {
            ck_assert(tp == NULL && err[0] != '\0');
        }
        db_task_plan_free(tp);
        db_node_plan_free(np);
        free_env(senv);
        free_env(tenv);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("properties");
    TCase *tc = tcase_create("props");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, generated_layouts);
    tcase_add_test(tc, garbage_never_crashes);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
