/*
 * Every combination of GPU lists Slurm sets (gres.conf Flags=), run through
 * a model of how each runtime reads them, on a node with 4 GPUs:
 *
 *   CUDA    CUDA_VISIBLE_DEVICES over the GPUs the process can open;
 *   HIP     ROCR_VISIBLE_DEVICES first (ROCr), then HIP_VISIBLE_DEVICES,
 *           else CUDA_VISIBLE_DEVICES, as ordinals among what ROCr left;
 *   OpenCL  ROCR_VISIBLE_DEVICES first, then GPU_DEVICE_ORDINAL;
 *   L0      ZE_AFFINITY_MASK.
 *
 * Each list ends at its first entry that names no device (ROCr and CUDA
 * stop there, HIP too).  For every task, mode and combination the device
 * DIST_BIND_DEVICE must be the task's own GPU in every runtime the lists
 * address, and in rank mode device LOCAL_RANK too.
 */
#include <stdint.h>

#include "db_core.h"
#include "unit.h"

#define NODE_GPUS 4
#define MAXL 16

/* Slurm's flag combinations: which lists it sets. */
enum { F_CUDA = 1, F_ROCR = 2, F_GDO = 4, F_ZE = 8 };
static const struct {
    const char *name;
    int lists;
} combos[] = {
    {"default (no Flags)", F_CUDA | F_ROCR | F_GDO},
    {"Flags=nvidia_gpu_env", F_CUDA},
    {"Flags=amd_gpu_env", F_ROCR},
    {"Flags=intel_gpu_env", F_ZE},
    {"Flags=opencl_env", F_GDO},
    {"Flags=amd_gpu_env,opencl_env", F_ROCR | F_GDO},
    {"Flags=nvidia_gpu_env,amd_gpu_env", F_CUDA | F_ROCR},
};

/* Layouts on node1 (3 tasks): the step's GPUs, and each task's own list
 * as Slurm sets it (NULL: none, as with --gpu-bind=none). */
static const struct {
    const char *name, *step, *task[3];
} layouts[] = {
    {"per task", "0,1,2", {"0", "1", "2"}},
    {"map_gpu:3,1,0", "0,1,2,3", {"3", "1", "0"}},
    {"not bound", "0,1,2,3", {"0,1,2,3", "0,1,2,3", "0,1,2,3"}},
    {"step on GPUs 1-3", "1,2,3", {"3", "1", "2"}},
    {"gpu-bind=none", "1,2,3", {NULL, NULL, NULL}},
};

static const char *const modes[] = {"", "isolate", "closest"};

static int parse_list(const char *s, int *out) {
    int n = 0;
    while (s && *s && n < MAXL) {
        char *end;
        long v = strtol(s, &end, 10);
        out[n++] = end == s ? -1 : (int)v;
        s = *end == ',' ? end + 1 : end + strlen(end);
    }
    return n;
}

/* Apply a list (NULL: all of them) to the devices `in` (n of them). */
static int mask(const char *list, const int *in, int n, int *out) {
    int idx[MAXL], m, k = 0;
    if (!list) {
        memcpy(out, in, sizeof *in * (size_t)n);
        return n;
    }
    m = parse_list(list, idx);
    for (int i = 0; i < m; i++) {
        int dup = 0;
        if (idx[i] < 0 || idx[i] >= n) break;
        for (int j = 0; j < k; j++) dup |= out[j] == in[idx[i]];
        if (dup) break;
        out[k++] = in[idx[i]];
    }
    return k;
}

static const char *get(char **env, const char *name) {
    size_t len = strlen(name);
    for (char **e = env; e && *e; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
    return NULL;
}

/* The task's environment after the plan: Slurm's, then the plan's writes. */
static char **apply(char **env, const db_task_plan *tp) {
    size_t n = 0, cap;
    for (char **e = env; *e; e++) n++;
    cap = n + db_task_plan_count(tp) + 1;
    char **out = calloc(cap, sizeof *out);
    for (size_t i = 0; i < n; i++) out[i] = strdup(env[i]);
    for (size_t i = 0; i < db_task_plan_count(tp); i++) {
        const char *name = db_task_plan_name(tp, i), *v = db_task_plan_value(tp, i);
        size_t len = strlen(name), j;
        for (j = 0; j < n; j++)
            if (strncmp(out[j], name, len) == 0 && out[j][len] == '=') break;
        if (j == n) n++;
        free(out[j]);
        out[j] = NULL;
        if (v) {
            out[j] = malloc(len + strlen(v) + 2);
            sprintf(out[j], "%s=%s", name, v);
        } else {
            out[j] = strdup("X_UNSET=");
        }
    }
    return out;
}

START_TEST(combination) {
    const int c = _i / (int)(sizeof layouts / sizeof layouts[0]);
    const int l = _i % (int)(sizeof layouts / sizeof layouts[0]);
    const int lists = combos[c].lists;
    int node[NODE_GPUS];
    for (int g = 0; g < NODE_GPUS; g++) node[g] = g;

    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        for (uint32_t t = 0; t < 3; t++) {
            char step_env[512], task_env[512], err[DB_ERRLEN], what[256];
            const char *tl = layouts[l].task[t];
            snprintf(what, sizeof what, "%s, %s, mode %s, task %u", combos[c].name, layouts[l].name,
                     *modes[m] ? modes[m] : "rank", t);
            snprintf(step_env, sizeof step_env,
                     "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=3|SLURM_STEP_GPUS=%s%s%s%s%s%s%s%s%s",
                     layouts[l].step, lists & F_CUDA ? "|CUDA_VISIBLE_DEVICES=" : "",
                     lists & F_CUDA ? layouts[l].step : "", lists & F_ROCR ? "|ROCR_VISIBLE_DEVICES=" : "",
                     lists & F_ROCR ? layouts[l].step : "", lists & F_GDO ? "|GPU_DEVICE_ORDINAL=" : "",
                     lists & F_GDO ? layouts[l].step : "", lists & F_ZE ? "|ZE_AFFINITY_MASK=" : "",
                     lists & F_ZE ? layouts[l].step : "");
            task_env[0] = '\0';
            if (tl)
                snprintf(task_env, sizeof task_env, "X=1%s%s%s%s%s%s%s%s",
                         lists & F_CUDA ? "|CUDA_VISIBLE_DEVICES=" : "", lists & F_CUDA ? tl : "",
                         lists & F_ROCR ? "|ROCR_VISIBLE_DEVICES=" : "", lists & F_ROCR ? tl : "",
                         lists & F_GDO ? "|GPU_DEVICE_ORDINAL=" : "", lists & F_GDO ? tl : "",
                         lists & F_ZE ? "|ZE_AFFINITY_MASK=" : "", lists & F_ZE ? tl : "");
            char **senv = make_env(step_env), **tenv = make_env(task_env);
            db_config cfg;
            db_request req;
            db_node_plan *np = NULL;
            db_task_plan *tp = NULL;
            ck_assert(db_config_parse(0, NULL, &cfg, err, sizeof err) == 0);
            ck_assert(db_request_parse(modes[m], &req, err, sizeof err) == 0);
            db_node_input ni = {7, 0, 1, 0, 3, 3, (const char *const *)senv, 0, 0, 0, 0, NULL, 0};
            db_task_input ti = {t, t, (const char *const *)tenv};
            ck_assert_msg(db_node_plan_new(&cfg, &req, &ni, &np, err, sizeof err) == 0, "%s: %s", what, err);
            ck_assert_msg(db_task_plan_new(np, &ti, &tp, err, sizeof err) == 0, "%s: %s", what, err);
            char **env = apply(tenv, tp);

            /* The task's own GPU: what Slurm bound it to, else the t-th. */
            int steplist[MAXL], own_list[MAXL], own;
            parse_list(layouts[l].step, steplist);
            if (tl && parse_list(tl, own_list) == 1)
                own = own_list[0];
            else
                own = steplist[t];
            const char *dev = get(env, "DIST_BIND_DEVICE");
            ck_assert_msg(dev != NULL, "%s: DIST_BIND_DEVICE not set", what);
            int d = atoi(dev);

            int seen[MAXL], stage1[MAXL], n, n1;
            if (get(env, "CUDA_VISIBLE_DEVICES")) {
                n = mask(get(env, "CUDA_VISIBLE_DEVICES"), node, NODE_GPUS, seen);
                ck_assert_msg(d < n && seen[d] == own, "%s: CUDA device %d is not GPU %d (CUDA_VISIBLE_DEVICES=%s)",
                              what, d, own, get(env, "CUDA_VISIBLE_DEVICES"));
                if (!*modes[m]) ck_assert_msg((int)t < n && seen[t] == own, "%s: CUDA device LOCAL_RANK", what);
            }
            if (get(env, "ROCR_VISIBLE_DEVICES") || get(env, "CUDA_VISIBLE_DEVICES")) {
                const char *second = get(env, "HIP_VISIBLE_DEVICES");
                if (!second || !*second) second = get(env, "CUDA_VISIBLE_DEVICES");
                n1 = mask(get(env, "ROCR_VISIBLE_DEVICES"), node, NODE_GPUS, stage1);
                n = mask(second, stage1, n1, seen);
                ck_assert_msg(d < n && seen[d] == own,
                              "%s: HIP device %d is not GPU %d (ROCR_VISIBLE_DEVICES=%s, HIP_VISIBLE_DEVICES=%s, "
                              "CUDA_VISIBLE_DEVICES=%s)",
                              what, d, own, get(env, "ROCR_VISIBLE_DEVICES"), get(env, "HIP_VISIBLE_DEVICES"),
                              get(env, "CUDA_VISIBLE_DEVICES"));
                if (!*modes[m]) ck_assert_msg((int)t < n && seen[t] == own, "%s: HIP device LOCAL_RANK", what);
            }
            if (get(env, "GPU_DEVICE_ORDINAL")) {
                n1 = mask(get(env, "ROCR_VISIBLE_DEVICES"), node, NODE_GPUS, stage1);
                n = mask(get(env, "GPU_DEVICE_ORDINAL"), stage1, n1, seen);
                ck_assert_msg(d < n && seen[d] == own, "%s: OpenCL device %d is not GPU %d (GPU_DEVICE_ORDINAL=%s)",
                              what, d, own, get(env, "GPU_DEVICE_ORDINAL"));
            }
            if (get(env, "ZE_AFFINITY_MASK")) {
                n = mask(get(env, "ZE_AFFINITY_MASK"), node, NODE_GPUS, seen);
                ck_assert_msg(d < n && seen[d] == own, "%s: Level Zero device %d is not GPU %d", what, d, own);
            }
            /* Nothing outside the step's GPUs is listed anywhere. */
            const char *all[] = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"};
            int nstep = parse_list(layouts[l].step, steplist);
            for (size_t a = 0; a < 3; a++) {
                int vals[MAXL], k = parse_list(get(env, all[a]), vals);
                for (int i = 0; i < k; i++) {
                    int in_step = 0;
                    for (int j = 0; j < nstep; j++) in_step |= steplist[j] == vals[i];
                    ck_assert_msg(in_step, "%s: %s lists GPU %d outside the step (%s)", what, all[a], vals[i],
                                  layouts[l].step);
                }
            }
            free_env(env);
            db_task_plan_free(tp);
            db_node_plan_free(np);
            free_env(senv);
            free_env(tenv);
        }
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("vendors");
    TCase *tc = tcase_create("combinations");
    tcase_add_loop_test(tc, combination, 0,
                        (int)(sizeof combos / sizeof combos[0] * (sizeof layouts / sizeof layouts[0])));
    suite_add_tcase(s, tc);
    return run_suite(s);
}
