/*
 * The plan, table-driven: one row per layout Slurm produces (the lab-notes
 * table and more), per mode, per malformed input.  Each row is the snapshot
 * the glue would take (items, step env at user_init, task env at task_init),
 * the option and plugstack config, and what must come out.
 */
#include <stdint.h>

#include "db_core.h"
#include "distbind_version.h"
#include "plan_view.h"
#include "unit.h"

struct row {
    const char *name;
    const char *opt;  /* --dist-bind value; NULL: option not given */
    const char *conf; /* plugstack.conf arguments */
    uint32_t job, step, nnodes, node_id, ntasks, local_ntasks;
    const char *step_env; /* "K=V|K=V" */
    uint32_t rank, local;
    const char *task_env;
    const char *want;    /* "K=V|..."; "-K": not set; "~K": unset; "^K=S": set, S not in it; "!": nothing */
    const char *err;     /* expected error: '&'-separated substrings */
    const char *verbose; /* substring of the verbose line */
};

#define STEP2(tpn) "SLURM_STEP_NODELIST=node[1-2]|SLURM_STEP_TASKS_PER_NODE=" tpn
#define GPUS(l) "|SLURM_STEP_GPUS=" l "|CUDA_VISIBLE_DEVICES=" l "|GPU_DEVICE_ORDINAL=" l "|ROCR_VISIBLE_DEVICES=" l
#define TASK(l) "CUDA_VISIBLE_DEVICES=" l "|GPU_DEVICE_ORDINAL=" l "|ROCR_VISIBLE_DEVICES=" l
/* A heterogeneous step of 2+3 tasks, the first component on node2, as its
 * step environment (SLURM_JOB_NODELIST_<g> names the first component's nodes). */
#define HET(g)                                                                            \
    "SLURM_STEP_NODELIST=node[1-2]|SLURM_STEP_TASKS_PER_NODE=3,2|SLURM_STEP_NUM_TASKS=5|" \
    "SLURM_STEP_NUM_NODES=2|SLURM_JOB_ID=7|SLURM_HET_SIZE=2|SLURM_JOB_NODELIST_" g
#define SEED_N1 STEP2("3,2") GPUS("0,1,2")
#define SEED_N2 STEP2("3,2") GPUS("0,1")
/* In a row's step environment: the node's lowest global rank, which the glue
 * reads with S_JOB_LOCAL_TO_GLOBAL_ID (not known without it). */
#define LOWEST_RANK "TEST_LOWEST_RANK"
#define LOWEST(r) "|" LOWEST_RANK "=" #r
/* In a row's step environment: the step's program and arguments (S_JOB_ARGV),
 * words separated by spaces. */
#define JOB_ARGV "TEST_JOB_ARGV"
/* In a row's step environment: the node's own word on device cgroups
 * (the glue reads TaskPlugin and cgroup.conf in slurmstepd), enum db_node_devices. */
#define NODE_DEVICES "TEST_NODE_DEVICES"
#define OWN_CONFINED "|" NODE_DEVICES "=2"
#define OWN_OPEN "|" NODE_DEVICES "=1"
/* In a row's step environment: the glue's container_env_early (Slurm < 23.02). */
#define EARLY "TEST_CONTAINER_EARLY=1"
#define RANKVARS(r, ws, l, lws, n, nn)                                                                     \
    "RANK=" r "|WORLD_SIZE=" ws "|LOCAL_RANK=" l "|LOCAL_WORLD_SIZE=" lws "|NODE_RANK=" n "|GROUP_RANK=" n \
    "|GROUP_WORLD_SIZE=" nn

static const struct row rows[] = {
    /* --- the seed layout: -N2 -n5 --gpus-per-task=1 (3+2) ------------------------ */
    {"seed rank0", "", "", 7, 0, 2, 0, 5, 3, SEED_N1, 0, 0, TASK("0"),
     RANKVARS("0", "5", "0", "3", "0",
              "2") "|MASTER_ADDR=node1|CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=0|"
                   "DIST_BIND_GPUS=0|GPU_DEVICE_ORDINAL=0,1,2|ROCR_VISIBLE_DEVICES=0,1,2|CUDA_DEVICE_ORDER=PCI_BUS_ID|"
                   "DIST_BIND_MODE=rank|DIST_BIND_STEP=7.0",
     NULL, NULL},
    {"seed rank2", "", "", 7, 0, 2, 0, 5, 3, SEED_N1, 2, 2, TASK("2"),
     RANKVARS("2", "5", "2", "3", "0", "2") "|MASTER_ADDR=node1|CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=2|"
                                            "DIST_BIND_GPUS=2",
     NULL, NULL},
    {"seed rank4 on node2", "", "", 7, 0, 2, 1, 5, 2, SEED_N2, 4, 1, TASK("1"),
     RANKVARS("4", "5", "1", "2", "1", "2") "|MASTER_ADDR=node1|CUDA_VISIBLE_DEVICES=0,1|DIST_BIND_DEVICE=1|"
                                            "DIST_BIND_GPUS=1",
     NULL, NULL},
    {"seed verbose", "verbose", "", 7, 0, 2, 1, 5, 2, SEED_N2, 3, 0, TASK("0"), "RANK=3", NULL,
     "dist-bind: rank=3/5 host=node2 local_rank=0/2 gpus=0 visible=0,1 device=0 mode=rank master=node1:"},
    {"not verbose: no line", "", "", 7, 0, 2, 1, 5, 2, SEED_N2, 3, 0, TASK("0"), "RANK=3", NULL, ""},

    /* --- every mode on rank 1 of the seed layout ----------------------------------- */
    {"mode isolate", "isolate", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"),
     "CUDA_VISIBLE_DEVICES=1|ROCR_VISIBLE_DEVICES=1|GPU_DEVICE_ORDINAL=0|HIP_VISIBLE_DEVICES=0|DIST_BIND_DEVICE=0|"
     "DIST_BIND_GPUS=1|DIST_BIND_MODE=isolate",
     NULL, NULL},
    {"mode closest falls back to rank", "closest,verbose", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"),
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=1|DIST_BIND_MODE=closest", NULL, "closest: no topology"},
    {"mode env leaves GPUs alone", "env", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"),
     "RANK=1|LOCAL_RANK=1|-CUDA_VISIBLE_DEVICES|-GPU_DEVICE_ORDINAL|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=1|"
     "DIST_BIND_MODE=env",
     NULL, NULL},
    {"mode off", "off", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"), "!", NULL, NULL},
    {"option not given, default off", NULL, "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"), "!", NULL, NULL},
    {"admin default isolate", NULL, "default=isolate", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"),
     "CUDA_VISIBLE_DEVICES=1|DIST_BIND_MODE=isolate", NULL, NULL},
    {"--dist-bind=off beats admin default", "off", "default=rank", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"), "!",
     NULL, NULL},
    {"--dist-bind beats admin default", "", "default=isolate", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"),
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_MODE=rank", NULL, NULL},
    {"admin default with verbose", NULL, "default=rank,verbose", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"), "RANK=1",
     NULL, "dist-bind: rank=1/5"},

    /* --- --gpus-per-node=4, no binding: local task i owns GPU i ---------------------- */
    {"gpus-per-node unbound", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") GPUS("0,1,2,3"), 2, 2, TASK("0,1,2,3"),
     "CUDA_VISIBLE_DEVICES=0,1,2,3|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2", NULL, NULL},
    {"gpus-per-node unbound isolate", "isolate", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") GPUS("0,1,2,3"), 2, 2,
     TASK("0,1,2,3"), "CUDA_VISIBLE_DEVICES=2|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=2", NULL, NULL},
    {"gpus-per-node unbound env", "env", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") GPUS("0,1,2,3"), 2, 2, TASK("0,1,2,3"),
     "-CUDA_VISIBLE_DEVICES|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2", NULL, NULL},

    /* --- --gpu-bind=map_gpu:1,0,3 with 4 GPUs per node ------------------------------ */
    {"map_gpu task0", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") GPUS("0,1,2,3"), 0, 0, TASK("1"),
     "CUDA_VISIBLE_DEVICES=1,0,2,3|ROCR_VISIBLE_DEVICES=1,0,2,3|GPU_DEVICE_ORDINAL=0,1,2,3|"
     "HIP_VISIBLE_DEVICES=0,1,2,3|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=1",
     NULL, NULL},
    {"map_gpu task1", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") GPUS("0,1,2,3"), 1, 1, TASK("0"),
     "CUDA_VISIBLE_DEVICES=1,0,2,3|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=0", NULL, NULL},
    {"map_gpu task2", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") GPUS("0,1,2,3"), 2, 2, TASK("3"),
     "CUDA_VISIBLE_DEVICES=0,1,3,2|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=3", NULL, NULL},
    {"map_gpu isolate", "isolate", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") GPUS("0,1,2,3"), 2, 2, TASK("3"),
     "CUDA_VISIBLE_DEVICES=3|DIST_BIND_DEVICE=0", NULL, NULL},

    /* --- cyclic: ranks 0,2,4 on node1, 1,3 on node2 --------------------------------- */
    {"cyclic rank3", "", "", 7, 0, 2, 1, 5, 2, SEED_N2 "|SLURM_DISTRIBUTION=cyclic", 3, 1, TASK("1"),
     RANKVARS("3", "5", "1", "2", "1", "2") "|MASTER_ADDR=node1|CUDA_VISIBLE_DEVICES=0,1|DIST_BIND_DEVICE=1", NULL,
     NULL},
    {"cyclic rank4", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|SLURM_DISTRIBUTION=cyclic", 4, 2, TASK("2"),
     RANKVARS("4", "5", "2", "3", "0", "2") "|MASTER_ADDR=node1|DIST_BIND_DEVICE=2", NULL, NULL},
    {"plane", "", "", 7, 0, 2, 1, 5, 2, SEED_N2 "|SLURM_DISTRIBUTION=plane", 4, 1, TASK("1"), "MASTER_ADDR=node1", NULL,
     NULL},

    /* --- arbitrary: rank 0 on node2; srun passes its address --------------------------- */
    {"arbitrary with srun's hint", "", "", 7, 0, 2, 0, 5, 2,
     STEP2("2,3") "|SLURM_DISTRIBUTION=arbitrary|" DB_RANK0_HINT "=node2" GPUS("0,1,2,3"), 1, 0,
     TASK("0,1,2,3") "|" DB_RANK0_HINT "=node2",
     RANKVARS("1", "5", "0", "2", "0", "2") "|MASTER_ADDR=node2|~" DB_RANK0_HINT, NULL, NULL},
    /* srun's --export dropped the plain names: the carried ones (SLURM_...) */
    {"arbitrary with srun's carried hint", "", "", 7, 0, 2, 0, 5, 2,
     STEP2("2,3") "|SLURM_DISTRIBUTION=arbitrary|" DB_CARRIED(DB_RANK0_HINT) "=node2" GPUS("0,1,2,3"), 1, 0,
     TASK("0,1,2,3") "|" DB_CARRIED(DB_RANK0_HINT) "=node2",
     RANKVARS("1", "5", "0", "2", "0", "2") "|MASTER_ADDR=node2|~" DB_CARRIED(DB_RANK0_HINT), NULL, NULL},
    {"arbitrary: the carried hint before the plain one", "", "", 7, 0, 2, 0, 5, 2,
     STEP2("2,3") "|SLURM_DISTRIBUTION=arbitrary|" DB_RANK0_HINT "=node9|" DB_CARRIED(DB_RANK0_HINT) "=node2", 1, 0,
     DB_RANK0_HINT "=node9|" DB_CARRIED(DB_RANK0_HINT) "=node2",
     "MASTER_ADDR=node2|~" DB_RANK0_HINT "|~" DB_CARRIED(DB_RANK0_HINT), NULL, NULL},
    {"arbitrary without hint", "", "", 7, 0, 2, 0, 5, 2, STEP2("2,3") "|SLURM_DISTRIBUTION=arbitrary", 1, 0, "", NULL,
     "MASTER_ADDR&arbitrary&" DB_RANK0_HINT, NULL},
    {"arbitrary, user's MASTER_ADDR needs no hint", "", "", 7, 0, 2, 0, 5, 2,
     STEP2("2,3") "|SLURM_DISTRIBUTION=arbitrary|MASTER_ADDR=10.1.2.3", 1, 0, "MASTER_ADDR=10.1.2.3",
     "MASTER_ADDR=10.1.2.3", NULL, NULL},

/* --- NODE_RANK: the step's nodes in the order of the lowest rank each runs ----------------
 *     -m arbitrary -w node2,node1,node2,node1,node2: ranks 1,3 on node1 (index 0), 0,2,4
 *     on node2 (index 1); srun passes "1,0" ------------------------------------------------- */
#define ARB STEP2("2,3") "|SLURM_DISTRIBUTION=arbitrary|" DB_RANK0_HINT "=node2|" DB_NODE_RANKS_HINT "=1,0"
    {"arbitrary: node1 is node rank 1", "", "", 7, 0, 2, 0, 5, 2, ARB LOWEST(1), 3, 1, DB_NODE_RANKS_HINT "=1,0",
     RANKVARS("3", "5", "1", "2", "1", "2") "|MASTER_ADDR=node2|~" DB_NODE_RANKS_HINT, NULL, NULL},
    {"arbitrary: node2 is node rank 0", "verbose", "", 7, 0, 2, 1, 5, 3, ARB LOWEST(0), 0, 0, "",
     RANKVARS("0", "5", "0", "3", "0", "2") "|MASTER_ADDR=node2", NULL, "node_rank=0/2 (srun's layout)"},
    {"arbitrary: node ranks carried", "", "", 7, 0, 2, 0, 5, 2,
     STEP2("2,3") "|SLURM_DISTRIBUTION=arbitrary|" DB_CARRIED(DB_RANK0_HINT) "=node2|" DB_CARRIED(
         DB_NODE_RANKS_HINT) "=1,0" LOWEST(1),
     3, 1, DB_CARRIED(DB_NODE_RANKS_HINT) "=1,0",
     RANKVARS("3", "5", "1", "2", "1", "2") "|MASTER_ADDR=node2|~" DB_CARRIED(DB_NODE_RANKS_HINT), NULL, NULL},
    {"arbitrary: bad carried node ranks named", "", "", 7, 0, 2, 0, 5, 2,
     STEP2("2,3") "|" DB_NODE_RANKS_HINT "=1,0|" DB_CARRIED(DB_NODE_RANKS_HINT) "=0,0" LOWEST(1), 1, 0, "", NULL,
     DB_CARRIED(DB_NODE_RANKS_HINT) "=\"0,0\"", NULL},
    {"arbitrary: the same without knowing the node's ranks", "", "", 7, 0, 2, 1, 5, 3, ARB, 4, 2, "",
     RANKVARS("4", "5", "2", "3", "0", "2"), NULL, NULL},
/* 26.05, topology/tree: rank 0 on gpu03, then gpu04, gpu01, gpu02 (2 tasks each). */
#define TOPO4(n) \
    "SLURM_STEP_NODELIST=gpu[01-04]|SLURM_STEP_TASKS_PER_NODE=2(x4)|" DB_RANK0_HINT "=gpu03|" DB_NODE_RANKS_HINT "=" n
    {"topology: gpu03 runs rank 0", "", "", 7, 0, 4, 2, 8, 2, TOPO4("2-3,0-1") LOWEST(0), 1, 1, "",
     RANKVARS("1", "8", "1", "2", "0", "4") "|MASTER_ADDR=gpu03", NULL, NULL},
    {"topology: gpu01 is node rank 2", "", "", 7, 0, 4, 0, 8, 2, TOPO4("2-3,0-1") LOWEST(4), 4, 0, "",
     RANKVARS("4", "8", "0", "2", "2", "4") "|MASTER_ADDR=gpu03", NULL, NULL},
    {"identity from srun", "verbose", "", 7, 0, 2, 1, 5, 2, SEED_N2 "|" DB_NODE_RANKS_HINT "=0-1" LOWEST(3), 3, 0,
     TASK("0"), RANKVARS("3", "5", "0", "2", "1", "2") "|MASTER_ADDR=node1", NULL, "node_rank=1/2 (srun's layout)"},
    /* Without srun's word: Slurm's node index, where it cannot be wrong. */
    {"no hint: node index", "verbose", "", 7, 0, 2, 1, 5, 2, SEED_N2 LOWEST(3), 3, 0, TASK("0"),
     RANKVARS("3", "5", "0", "2", "1", "2"), NULL,
     "node_rank=1/2 (Slurm's node index: a layout in Slurm's node order)"},
    {"no hint: the first node runs rank 0", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 LOWEST(0), 0, 0, TASK("0"),
     RANKVARS("0", "5", "0", "3", "0", "2"), NULL, NULL},
#define NOHINT4 "SLURM_STEP_NODELIST=gpu[01-04]|SLURM_STEP_TASKS_PER_NODE=2(x4)"
    {"no hint: rank 0 runs on node index 2", "", "", 7, 0, 4, 2, 8, 2, NOHINT4 LOWEST(0), 0, 0, "", NULL,
     "node gpu03 runs rank 0 of step 7.0 but is node 2 in Slurm's order&srun passed no " DB_NODE_RANKS_HINT
     "&plugstack.conf srun reads&--async",
     NULL},
    /* srun's dist-bind of another release: where its word is missing, the
     * message names both versions (0.1.0 says none, but sets its devices
     * word); where nothing is missing, verbose says so and the step runs. */
    {"srun of 0.1.0, no node ranks", "", "", 7, 0, 4, 2, 8, 2, NOHINT4 "|" DB_DEVICES_HINT "=none" LOWEST(0), 0, 0, "",
     NULL,
     "srun passed no " DB_NODE_RANKS_HINT "&srun's dist-bind is older than this node's " DISTBIND_VERSION_STRING
     "&0.1.0 or earlier&the same dist-bind",
     NULL},
    {"srun of another release, no node ranks", "", "", 7, 0, 4, 2, 8, 2,
     NOHINT4 "|" DB_SRUN_VERSION_HINT "=0.9.1" LOWEST(0), 0, 0, "", NULL,
     "srun's dist-bind is 0.9.1, this node's " DISTBIND_VERSION_STRING "&the same dist-bind", NULL},
    {"srun of another release, no rank 0 for arbitrary", "", "", 7, 0, 2, 0, 5, 2,
     STEP2("2,3") "|SLURM_DISTRIBUTION=arbitrary|" DB_SRUN_VERSION_HINT "=0.9.1", 1, 0, "", NULL,
     "MASTER_ADDR&" DB_RANK0_HINT "&srun's dist-bind is 0.9.1, this node's " DISTBIND_VERSION_STRING, NULL},
    {"srun of another release, its version carried", "", "", 7, 0, 4, 2, 8, 2,
     NOHINT4 "|" DB_CARRIED(DB_SRUN_VERSION_HINT) "=0.9.1" LOWEST(0), 0, 0, "", NULL,
     "srun's dist-bind is 0.9.1, this node's " DISTBIND_VERSION_STRING "&the same dist-bind", NULL},
    {"srun of another release, nothing missing", "verbose", "", 7, 0, 2, 1, 5, 2,
     SEED_N2 "|" DB_SRUN_VERSION_HINT "=0.9.1" LOWEST(3), 3, 0, TASK("0") "|" DB_SRUN_VERSION_HINT "=0.9.1",
     RANKVARS("3", "5", "0", "2", "1", "2") "|~" DB_SRUN_VERSION_HINT, NULL,
     "srun's dist-bind is 0.9.1, this node's " DISTBIND_VERSION_STRING},
    {"srun of this release: no note, its version removed", "verbose", "", 7, 0, 2, 1, 5, 2,
     SEED_N2 "|" DB_SRUN_VERSION_HINT "=" DISTBIND_VERSION_STRING LOWEST(3), 3, 0,
     TASK("0") "|" DB_SRUN_VERSION_HINT "=" DISTBIND_VERSION_STRING,
     RANKVARS("3", "5", "0", "2", "1", "2") "|~" DB_SRUN_VERSION_HINT, NULL, "node_rank=1/2"},
    {"no hint: the first node does not run rank 0", "", "", 7, 0, 4, 0, 8, 2, NOHINT4 LOWEST(4), 4, 0, "", NULL,
     "node gpu01 is the first node of step 7.0 in Slurm's order but runs no rank 0 (its lowest is "
     "4)&" DB_NODE_RANKS_HINT,
     NULL},
    /* Each node checks its own ranks against the layout in Slurm's node
     * order: 26.05's topology ranking with rank 0 on the first node still
     * moves the others (gpu01, gpu03, gpu02, gpu04 here). */
    {"no hint, block: gpu02 runs ranks from 4, not 2", "", "", 7, 0, 4, 1, 8, 2, NOHINT4 LOWEST(4), 4, 0, "", NULL,
     "node gpu02 is node 1 of step 7.0 in Slurm's order, where its lowest rank would be 2, but it runs no rank 0 "
     "(its lowest is 4)&srun passed no " DB_NODE_RANKS_HINT "&NODE_RANK cannot be told",
     NULL},
    {"no hint, block: gpu03 runs ranks from 4", "", "", 7, 0, 4, 2, 8, 2, NOHINT4 LOWEST(4), 4, 0, "",
     RANKVARS("4", "8", "0", "2", "2", "4"), NULL, NULL},
    {"no hint, uneven block: node index 2 of 3,1,2,2", "", "", 7, 0, 4, 2, 8, 2,
     "SLURM_STEP_NODELIST=gpu[01-04]|SLURM_STEP_TASKS_PER_NODE=3,1,2(x2)" LOWEST(4), 5, 1, "",
     RANKVARS("5", "8", "1", "2", "2", "4"), NULL, NULL},
    {"no hint, cyclic: node index 2 runs rank 2 first", "", "", 7, 0, 4, 2, 8, 2,
     NOHINT4 "|SLURM_DISTRIBUTION=cyclic" LOWEST(2), 6, 1, "", RANKVARS("6", "8", "1", "2", "2", "4"), NULL, NULL},
    {"no hint, cyclic:block: the node part decides", "", "", 7, 0, 4, 2, 8, 2,
     NOHINT4 "|SLURM_DISTRIBUTION=cyclic:block" LOWEST(4), 4, 0, "", NULL, "lowest rank would be 2", NULL},
    {"no hint, plane=2 over 3,1,3,1: node index 2 starts at 3", "", "", 7, 0, 4, 2, 8, 3,
     "SLURM_STEP_NODELIST=gpu[01-04]|SLURM_STEP_TASKS_PER_NODE=3,1,3,1|SLURM_DISTRIBUTION=plane|"
     "SLURM_DIST_PLANESIZE=2" LOWEST(3),
     3, 0, "", RANKVARS("3", "8", "0", "3", "2", "4"), NULL, NULL},
    {"no hint, plane without its size: no expectation", "", "", 7, 0, 4, 2, 8, 2,
     NOHINT4 "|SLURM_DISTRIBUTION=plane" LOWEST(5), 5, 0, "", RANKVARS("5", "8", "0", "2", "2", "4"), NULL, NULL},
    {"no hint, arbitrary: node2 runs rank 0", "", "", 7, 0, 2, 1, 5, 3,
     STEP2("2,3") "|SLURM_DISTRIBUTION=arbitrary|" DB_RANK0_HINT "=node2" LOWEST(0), 0, 0, "", NULL,
     "node node2 runs rank 0&" DB_NODE_RANKS_HINT, NULL},
    /* The hint crosses a boundary (a user can export it): strictly a permutation. */
    {"node ranks: disagrees with the node's ranks", "", "", 7, 0, 2, 1, 5, 3,
     STEP2("2,3") "|" DB_NODE_RANKS_HINT "=0-1" LOWEST(0), 0, 0, "", NULL,
     DB_NODE_RANKS_HINT "=\"0-1\" makes node node2 node rank 1 of step 7.0, but it runs rank 0&exported before srun",
     NULL},
    {"node ranks: not rank 0's node", "", "", 7, 0, 2, 0, 5, 2, STEP2("2,3") "|" DB_NODE_RANKS_HINT "=0,1" LOWEST(1), 1,
     0, "", NULL, "node node1 node rank 0&runs no rank 0 (its lowest is 1)", NULL},
    {"node ranks: twice", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_NODE_RANKS_HINT "=0,0", 0, 0, "", NULL,
     DB_NODE_RANKS_HINT "=\"0,0\"&node rank 0 given twice&expected a permutation of 0..1&srun's dist-bind", NULL},
    {"node ranks: too many", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_NODE_RANKS_HINT "=0-1,0", 0, 0, "", NULL,
     DB_NODE_RANKS_HINT "=\"0-1,0\"&more than the step's 2 node ranks", NULL},
    {"node ranks: too few", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_NODE_RANKS_HINT "=0", 0, 0, "", NULL,
     "1 node ranks for the step's 2 nodes", NULL},
    {"node ranks: out of range", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_NODE_RANKS_HINT "=0,2", 0, 0, "", NULL,
     "\"2\" is not a node rank or range of them below 2", NULL},
    {"node ranks: huge range", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_NODE_RANKS_HINT "=0-4294967295", 0, 0, "", NULL,
     "\"0-4294967295\" is not a node rank", NULL},
    {"node ranks: backwards range", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_NODE_RANKS_HINT "=1-0", 0, 0, "", NULL,
     "\"1-0\" is not a node rank", NULL},
    {"node ranks: garbage", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_NODE_RANKS_HINT "=first", 0, 0, "", NULL,
     DB_NODE_RANKS_HINT "=\"first\"", NULL},
    {"node ranks: empty", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_NODE_RANKS_HINT "=", 0, 0, "", NULL,
     DB_NODE_RANKS_HINT "=\"\"&empty entry", NULL},
    {"node ranks: trailing comma", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_NODE_RANKS_HINT "=1,0,", 0, 0, "", NULL,
     "empty entry", NULL},
    {"node ranks: sign", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_NODE_RANKS_HINT "=+1,0", 0, 0, "", NULL, "\"+1\"",
     NULL},

    /* --- k GPUs per task ----------------------------------------------------------------- */
    {"k=2 rank", "", "", 7, 0, 2, 0, 3, 2, STEP2("2,1") GPUS("0,1,2,3"), 1, 1, TASK("2,3"),
     "CUDA_VISIBLE_DEVICES=0,1,2,3|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2,3", NULL, NULL},
    {"k=2 isolate", "isolate", "", 7, 0, 2, 0, 3, 2, STEP2("2,1") GPUS("0,1,2,3"), 1, 1, TASK("2,3"),
     "CUDA_VISIBLE_DEVICES=2,3|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=2,3", NULL, NULL},
    {"k=2 permuted binding", "", "", 7, 0, 1, 0, 2, 2,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=2" GPUS("0,1,2,3"), 0, 0, TASK("3,1"),
     "CUDA_VISIBLE_DEVICES=3,1,0,2|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=3,1", NULL, NULL},
    {"node's only task owns all its GPUs", "isolate", "", 7, 0, 2, 1, 3, 1, STEP2("2,1") GPUS("0,1"), 2, 0, TASK("0,1"),
     "CUDA_VISIBLE_DEVICES=0,1|-DIST_BIND_DEVICE|DIST_BIND_GPUS=0,1", NULL, NULL},

    /* --- 8 GPUs per node, 8 tasks ---------------------------------------------------------- */
    {"8 per node rank7", "", "", 9, 3, 2, 1, 16, 8, STEP2("8(x2)") GPUS("0,1,2,3,4,5,6,7"), 15, 7, TASK("7"),
     RANKVARS("15", "16", "7", "8", "1", "2") "|CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7|DIST_BIND_DEVICE=7", NULL, NULL},
    {"8 per node isolate", "isolate", "", 9, 3, 2, 1, 16, 8, STEP2("8(x2)") GPUS("0,1,2,3,4,5,6,7"), 13, 5, TASK("5"),
     "CUDA_VISIBLE_DEVICES=5|DIST_BIND_DEVICE=0", NULL, NULL},

    /* --- tasks-per-node strings --------------------------------------------------------------- */
    {"tpn 2(x3),1 last node", "", "", 7, 0, 4, 3, 7, 1,
     "SLURM_STEP_NODELIST=gpu[01-04]|SLURM_STEP_TASKS_PER_NODE=2(x3),1" GPUS("0"), 6, 0, TASK("0"),
     RANKVARS("6", "7", "0", "1", "3", "4") "|MASTER_ADDR=gpu01|CUDA_VISIBLE_DEVICES=0", NULL, NULL},
    {"tpn 2(x3),1 second node", "", "", 7, 0, 4, 1, 7, 2,
     "SLURM_STEP_NODELIST=gpu[01-04]|SLURM_STEP_TASKS_PER_NODE=2(x3),1" GPUS("0,1"), 3, 1, TASK("1"),
     RANKVARS("3", "7", "1", "2", "1", "4") "|DIST_BIND_DEVICE=1", NULL, NULL},

    /* --- GPU numbering as Slurm gave it --------------------------------------------------------- */
    {"global numbering", "", "", 7, 0, 1, 0, 4, 4, "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=4" GPUS("4,5,6,7"),
     2, 2, TASK("6"), "CUDA_VISIBLE_DEVICES=4,5,6,7|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=6", NULL, NULL},
    {"global numbering isolate", "isolate", "", 7, 0, 1, 0, 4, 4,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=4" GPUS("4,5,6,7"), 2, 2, TASK("6"),
     "CUDA_VISIBLE_DEVICES=6|DIST_BIND_GPUS=6", NULL, NULL},
    {"cgroup-local numbering", "", "", 7, 0, 1, 0, 2, 2,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=2|SLURM_STEP_GPUS=2,3|CUDA_VISIBLE_DEVICES=0,1", 1, 1,
     "SLURM_STEP_GPUS=3|CUDA_VISIBLE_DEVICES=1",
     "CUDA_VISIBLE_DEVICES=0,1|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=3|-SLURM_STEP_GPUS", NULL, NULL},
    {"GPU UUIDs", "", "", 7, 0, 1, 0, 2, 2,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=2|SLURM_STEP_GPUS=0,1|CUDA_VISIBLE_DEVICES=GPU-aa11,GPU-bb22", 1,
     1, "CUDA_VISIBLE_DEVICES=GPU-bb22",
     "CUDA_VISIBLE_DEVICES=GPU-aa11,GPU-bb22|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=GPU-bb22", NULL, NULL},
    {"AMD: ROCR only", "", "", 7, 0, 1, 0, 2, 2,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=2|SLURM_STEP_GPUS=0,1|ROCR_VISIBLE_DEVICES=0,1", 0, 0,
     "ROCR_VISIBLE_DEVICES=1", "ROCR_VISIBLE_DEVICES=1,0|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=1|-CUDA_VISIBLE_DEVICES",
     NULL, NULL},

/* --- device cgroups (task/cgroup, ConstrainDevices=yes): Slurm numbers the lists
 *     inside the cgroup; a task bound per task can open only its own GPU ------------ */
#define CG_N1 STEP2("3,2") GPUS("0,1,2") "|" DB_DEVICES_HINT "=cgroup"
#define CG_TASK(l, names)                                                                                   \
    "CUDA_VISIBLE_DEVICES=" l "|GPU_DEVICE_ORDINAL=" l "|ROCR_VISIBLE_DEVICES=" l "|SLURM_STEP_GPUS=" names \
    "|" DB_DEVICES_HINT "=cgroup"
    {"cgroup, bound per task: rank cannot keep its promise", "", "", 7, 0, 2, 0, 5, 3, CG_N1, 1, 1, CG_TASK("0", "0"),
     NULL, "node node1&confines each task of step 7.0&--gpu-bind=none&allow-task-sharing&isolate", NULL},
    {"cgroup, bound per task: closest neither", "closest", "", 7, 0, 2, 0, 5, 3, CG_N1, 2, 2, CG_TASK("0", "0"), NULL,
     "--dist-bind=closest&--gpu-bind=none", NULL},
    {"cgroup, bound per task: rank,share neither", "share", "", 7, 0, 2, 0, 5, 3, CG_N1, 0, 0, CG_TASK("0", "0"), NULL,
     "--gpu-bind=none", NULL},
    {"cgroup, bound per task: isolate keeps Slurm's lists", "isolate,verbose", "", 7, 0, 2, 0, 5, 3, CG_N1, 1, 1,
     CG_TASK("0", "0"),
     "-CUDA_VISIBLE_DEVICES|-ROCR_VISIBLE_DEVICES|-HIP_VISIBLE_DEVICES|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=0|"
     "~" DB_DEVICES_HINT,
     NULL, "confines this task to its own GPUs&from srun's TaskPlugin"},
    {"cgroup, bound per task: env", "env", "", 7, 0, 2, 0, 5, 3, CG_N1, 2, 2, CG_TASK("0", "0"),
     "-CUDA_VISIBLE_DEVICES|DIST_BIND_DEVICE=0", NULL, NULL},
    {"cgroup, task sharing: bound, not confined", "", "", 7, 0, 2, 0, 5, 3,
     STEP2("3,2") GPUS("0,1,2") "|" DB_DEVICES_HINT "=cgroup,task-sharing", 1, 1, CG_TASK("1", "1"),
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=1", NULL, NULL},
    {"cgroup, task sharing carried", "", "", 7, 0, 2, 0, 5, 3,
     STEP2("3,2") GPUS("0,1,2") "|" DB_CARRIED(DB_DEVICES_HINT) "=cgroup,task-sharing", 1, 1, CG_TASK("1", "1"),
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=1", NULL, NULL},
    {"cgroup, task sharing first task", "", "", 7, 0, 2, 0, 5, 3,
     STEP2("3,2") GPUS("0,1,2") "|" DB_DEVICES_HINT "=cgroup,task-sharing", 0, 0, CG_TASK("0", "0"),
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=0", NULL, NULL},
    {"cgroup, a list not numbered 0..k-1 is step-wide", "", "", 7, 0, 2, 0, 5, 3, CG_N1, 2, 2, CG_TASK("2", "2"),
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=2", NULL, NULL},
    {"cgroup, not bound (--gpus-per-node): every step GPU openable", "", "", 7, 0, 2, 0, 5, 3, CG_N1, 2, 2,
     CG_TASK("0,1,2", "0,1,2"), "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2", NULL, NULL},
    {"cgroup, not bound, task 0", "", "", 7, 0, 2, 1, 5, 2, STEP2("3,2") GPUS("0,1,2") "|" DB_DEVICES_HINT "=cgroup", 3,
     0, CG_TASK("0,1,2", "0,1,2"), "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=0", NULL, NULL},
    {"cgroup, the node's only task owns all", "", "", 7, 0, 2, 1, 5, 1,
     STEP2("4,1") GPUS("0,1") "|" DB_DEVICES_HINT "=cgroup", 4, 0, CG_TASK("0,1", "0,1"),
     "CUDA_VISIBLE_DEVICES=0,1|-DIST_BIND_DEVICE|DIST_BIND_GPUS=0,1", NULL, NULL},
/* 26.05, --gpu-bind=none, another job holds GPU 0 of node2: the step's
 * GPUs there are 1,2 (0,1 in the cgroup), and Slurm gives every task of
 * the node the same one-GPU list.  No binding: local task i owns the
 * i-th step GPU. */
#define HELD_N2 \
    STEP2("3,2") "|SLURM_STEP_GPUS=1,2|CUDA_VISIBLE_DEVICES=0,1|GPU_DEVICE_ORDINAL=0,1|SLURMD_TRES_BIND=gres/gpu:none"
#define HELD_TASK "CUDA_VISIBLE_DEVICES=1|GPU_DEVICE_ORDINAL=1|SLURM_STEP_GPUS=2|SLURMD_TRES_BIND=gres/gpu:none"
    {"gpu-bind=none, GPU 0 held, cgroup: a narrow list is no binding", "verbose", "", 7, 0, 2, 1, 5, 2,
     HELD_N2 "|" DB_DEVICES_HINT "=cgroup", 3, 0, HELD_TASK "|" DB_DEVICES_HINT "=cgroup",
     "CUDA_VISIBLE_DEVICES=0,1|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=1", NULL, "Slurm bound no GPU per task"},
    {"gpu-bind=none, GPU 0 held, cgroup: second task", "", "", 7, 0, 2, 1, 5, 2, HELD_N2 "|" DB_DEVICES_HINT "=cgroup",
     4, 1, HELD_TASK "|" DB_DEVICES_HINT "=cgroup", "CUDA_VISIBLE_DEVICES=0,1|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=2",
     NULL, NULL},
    {"gpu-bind=none, GPU 0 held, isolate", "isolate", "", 7, 0, 2, 1, 5, 2, HELD_N2 "|" DB_DEVICES_HINT "=cgroup", 3, 0,
     HELD_TASK "|" DB_DEVICES_HINT "=cgroup", "CUDA_VISIBLE_DEVICES=0|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=1", NULL, NULL},
    {"gpu-bind=verbose,none counts", "", "", 7, 0, 2, 1, 5, 2,
     STEP2("3,2") "|SLURM_STEP_GPUS=1,2|CUDA_VISIBLE_DEVICES=1,2|SLURMD_TRES_BIND=gres/gpu:verbose,none", 3, 0,
     "CUDA_VISIBLE_DEVICES=2|SLURM_STEP_GPUS=2|SLURMD_TRES_BIND=gres/gpu:verbose,none",
     "CUDA_VISIBLE_DEVICES=1,2|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=1", NULL, NULL},
    {"a per-task binding is one", "", "", 7, 0, 2, 1, 5, 2,
     STEP2("3,2") "|SLURM_STEP_GPUS=1,2|CUDA_VISIBLE_DEVICES=1,2|SLURMD_TRES_BIND=gres/gpu:per_task:1", 3, 0,
     "CUDA_VISIBLE_DEVICES=2|SLURM_STEP_GPUS=2|SLURMD_TRES_BIND=gres/gpu:per_task:1",
     "CUDA_VISIBLE_DEVICES=2,1|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=2", NULL, NULL},
    /* The node's own TaskPlugin and cgroup.conf decide over srun's word. */
    {"own configuration confines, srun's word says none", "", "", 7, 0, 2, 0, 5, 3,
     STEP2("3,2") GPUS("0,1,2") "|" DB_DEVICES_HINT "=none" OWN_CONFINED, 1, 1, TASK("0"), NULL,
     "node node1&confines each task of step 7.0&--gpu-bind=none", NULL},
    {"own configuration confines, srun said nothing: isolate", "isolate,verbose", "", 7, 0, 2, 0, 5, 3,
     STEP2("3,2") GPUS("0,1,2") OWN_CONFINED, 1, 1, TASK("0"), "-CUDA_VISIBLE_DEVICES|DIST_BIND_DEVICE=0", NULL,
     "confines this task to its own GPUs&from this node's TaskPlugin and cgroup.conf"},
    {"task/cgroup without ConstrainDevices: not confined", "verbose", "", 7, 0, 2, 0, 5, 3, CG_N1 OWN_OPEN, 0, 0,
     CG_TASK("0", "0"), "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=0", NULL, NULL},
/* A node's only task: up to 25.05 Slurm never binds it (its list is the
 * step's, --gpus-per-node=3 --ntasks-per-node=1); from 25.11 it does
 * (--gpu-bind, --gpus-per-task), and under ConstrainDevices confines it
 * to its own GPU, numbered 0 inside its cgroup. */
#define LONE(hint) "SLURM_STEP_NODELIST=node2|SLURM_STEP_TASKS_PER_NODE=1" GPUS("0,1,2") hint
    {"lone task, not bound (22.05), no cgroup", "", "", 7, 0, 1, 0, 1, 1, LONE(""), 0, 0, TASK("0,1,2"),
     "CUDA_VISIBLE_DEVICES=0,1,2|-DIST_BIND_DEVICE|DIST_BIND_GPUS=0,1,2", NULL, NULL},
    {"lone task, not bound (22.05), cgroup", "", "", 7, 0, 1, 0, 1, 1, LONE("|" DB_DEVICES_HINT "=cgroup"), 0, 0,
     CG_TASK("0,1,2", "0,1,2"), "CUDA_VISIBLE_DEVICES=0,1,2|-DIST_BIND_DEVICE|DIST_BIND_GPUS=0,1,2", NULL, NULL},
    {"lone task, not bound (22.05), cgroup, isolate", "isolate", "", 7, 0, 1, 0, 1, 1,
     LONE("|" DB_DEVICES_HINT "=cgroup"), 0, 0, CG_TASK("0,1,2", "0,1,2"),
     "CUDA_VISIBLE_DEVICES=0,1,2|-DIST_BIND_DEVICE|DIST_BIND_GPUS=0,1,2", NULL, NULL},
    {"lone task bound (25.11), no cgroup: rank", "", "", 7, 0, 1, 0, 1, 1, LONE("|" DB_DEVICES_HINT "=none"), 0, 0,
     TASK("1"), "CUDA_VISIBLE_DEVICES=1,0,2|-DIST_BIND_DEVICE|DIST_BIND_GPUS=1", NULL, NULL},
    {"lone task bound (25.11), no cgroup: isolate", "isolate", "", 7, 0, 1, 0, 1, 1, LONE("|" DB_DEVICES_HINT "=none"),
     0, 0, TASK("1"), "CUDA_VISIBLE_DEVICES=1|-DIST_BIND_DEVICE|DIST_BIND_GPUS=1", NULL, NULL},
    {"lone task bound (25.11), cgroup: rank cannot keep its promise", "", "", 7, 0, 1, 0, 1, 1,
     LONE("|" DB_DEVICES_HINT "=cgroup"), 0, 0, CG_TASK("0", "1"), NULL,
     "node node2&confines each task of step 7.0&--gpu-bind=none", NULL},
    {"lone task bound (25.11), cgroup: closest neither", "closest", "", 7, 0, 1, 0, 1, 1,
     LONE("|" DB_DEVICES_HINT "=cgroup"), 0, 0, CG_TASK("0", "1"), NULL, "--dist-bind=closest&--gpu-bind=none", NULL},
    {"lone task bound (25.11), cgroup: isolate keeps Slurm's lists", "isolate,verbose", "", 7, 0, 1, 0, 1, 1,
     LONE("|" DB_DEVICES_HINT "=cgroup"), 0, 0, CG_TASK("0", "1"),
     "-CUDA_VISIBLE_DEVICES|-ROCR_VISIBLE_DEVICES|-DIST_BIND_DEVICE|DIST_BIND_GPUS=0", NULL,
     "confines this task to its own GPUs"},
    {"lone task bound (25.11), cgroup seen in the lists", "", "", 7, 0, 1, 0, 1, 1,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=1|SLURM_STEP_GPUS=1,3|CUDA_VISIBLE_DEVICES=0,1", 0, 0,
     "CUDA_VISIBLE_DEVICES=0|SLURM_STEP_GPUS=3", NULL, "confines each task", NULL},
    {"cgroup seen in the lists, no hint", "", "", 7, 0, 1, 0, 2, 2,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=2|SLURM_STEP_GPUS=1,3|CUDA_VISIBLE_DEVICES=0,1", 1, 1,
     "CUDA_VISIBLE_DEVICES=0|SLURM_STEP_GPUS=1", NULL, "confines each task", NULL},
    {"node-wide numbering seen, the hint is overruled", "verbose", "", 7, 0, 1, 0, 2, 2,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=2" GPUS("2,3") "|" DB_DEVICES_HINT "=cgroup", 0, 0, TASK("3"),
     "CUDA_VISIBLE_DEVICES=3,2|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=3", NULL, "disagrees with Slurm's GPU lists"},
    {"no hint, nothing seen: assumed open", "verbose", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"),
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=1", NULL, NULL},
    {"hint none", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_DEVICES_HINT "=none", 1, 1,
     TASK("1") "|" DB_DEVICES_HINT "=none", "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=1|~" DB_DEVICES_HINT, NULL,
     NULL},
    {"hint garbage", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_DEVICES_HINT "=cgroups", 1, 1, TASK("1"), NULL,
     DB_DEVICES_HINT "=\"cgroups\"&expected \"none\" or \"cgroup\"", NULL},
    {"hint: task-sharing without cgroup", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_DEVICES_HINT "=none,task-sharing", 1,
     1, TASK("1"), NULL, DB_DEVICES_HINT "=\"none,task-sharing\"", NULL},
    {"hint: bad GPU count", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|" DB_DEVICES_HINT "=none,gpus-per-task=0", 1, 1,
     TASK("1"), NULL, DB_DEVICES_HINT "=\"none,gpus-per-task=0\"", NULL},
    {"hint: huge GPU count", "", "", 7, 0, 2, 0, 5, 3,
     SEED_N1 "|" DB_DEVICES_HINT "=none,gpus-per-task=99999999999999999999", 1, 1, TASK("1"), NULL,
     "gpus-per-task=99999999999999999999", NULL},

/* --- --gpu-bind=none: Slurm sets no list for the task; every step GPU is openable
 *     (inside the step's cgroup, numbered from 0; without cgroups, node-wide) ---------- */
#define NOBIND_N1 STEP2("3,2") "|SLURM_STEP_GPUS=1,2,3|CUDA_VISIBLE_DEVICES=0,1,2|" DB_DEVICES_HINT "=cgroup"
    {"gpu-bind=none, cgroup: rank", "verbose", "", 7, 0, 2, 0, 5, 3, NOBIND_N1, 1, 1, "SLURMD_TRES_BIND=gpu:none",
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=2|CUDA_DEVICE_ORDER=PCI_BUS_ID", NULL,
     "Slurm set no CUDA_VISIBLE_DEVICES for this task"},
    {"gpu-bind=none, cgroup: rank task 2", "", "", 7, 0, 2, 0, 5, 3, NOBIND_N1, 2, 2, "",
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=3", NULL, NULL},
    {"gpu-bind=none, cgroup: isolate", "isolate", "", 7, 0, 2, 0, 5, 3, NOBIND_N1, 2, 2, "",
     "CUDA_VISIBLE_DEVICES=2|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=3", NULL, NULL},
    {"gpu-bind=none, cgroup: env leaves it unset", "env", "", 7, 0, 2, 0, 5, 3, NOBIND_N1, 2, 2, "",
     "-CUDA_VISIBLE_DEVICES|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=3", NULL, NULL},
    {"gpu-bind=none, no cgroup: node-wide numbers", "", "", 7, 0, 2, 0, 5, 3,
     STEP2("3,2") "|SLURM_STEP_GPUS=1,2,3|CUDA_VISIBLE_DEVICES=1,2,3", 0, 0, "",
     "CUDA_VISIBLE_DEVICES=1,2,3|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=1", NULL, NULL},
    {"gpu-bind=none, no cgroup: env", "env", "", 7, 0, 2, 0, 5, 3,
     STEP2("3,2") "|SLURM_STEP_GPUS=1,2,3|CUDA_VISIBLE_DEVICES=1,2,3", 2, 2, "",
     "-CUDA_VISIBLE_DEVICES|DIST_BIND_DEVICE=3|DIST_BIND_GPUS=3", NULL, NULL},
    {"gpu-bind=none, 2 GPUs per task asked", "", "", 7, 0, 2, 0, 3, 2,
     STEP2("2,1") "|SLURM_STEP_GPUS=0,1,2,3|CUDA_VISIBLE_DEVICES=0,1,2,3|" DB_DEVICES_HINT "=none,gpus-per-task=2", 1,
     1, "", "CUDA_VISIBLE_DEVICES=0,1,2,3|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2,3", NULL, NULL},
    {"gpu-bind=none, 2 per task isolate", "isolate", "", 7, 0, 2, 0, 3, 2,
     STEP2("2,1") "|SLURM_STEP_GPUS=0,1,2,3|CUDA_VISIBLE_DEVICES=0,1,2,3|" DB_DEVICES_HINT "=none,gpus-per-task=2", 1,
     1, "", "CUDA_VISIBLE_DEVICES=2,3|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=2,3", NULL, NULL},
    {"gpu-bind=none, asked more per task than fit: one each", "", "", 7, 0, 2, 0, 3, 2,
     STEP2("2,1") "|SLURM_STEP_GPUS=0,1,2|CUDA_VISIBLE_DEVICES=0,1,2|" DB_DEVICES_HINT "=none,gpus-per-task=2", 1, 1,
     "", "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=1", NULL, NULL},
    /* srun's word has no count (srun could not read slurmctld's configuration):
     * the step's environment says; from 25.05 per type, summed. */
    {"gpu-bind=none, 2 per task from SLURM_GPUS_PER_TASK", "", "", 7, 0, 2, 0, 3, 2,
     STEP2("2,1") "|SLURM_STEP_GPUS=0,1,2,3|CUDA_VISIBLE_DEVICES=0,1,2,3|SLURM_GPUS_PER_TASK=2", 1, 1, "",
     "CUDA_VISIBLE_DEVICES=0,1,2,3|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2,3", NULL, NULL},
    {"gpu-bind=none, two types per task from SLURM_GPUS_PER_TASK", "", "", 7, 0, 2, 0, 3, 2,
     STEP2("2,1") "|SLURM_STEP_GPUS=0,1,2,3|CUDA_VISIBLE_DEVICES=0,1,2,3|SLURM_GPUS_PER_TASK=a100:1,v100:1", 1, 1, "",
     "CUDA_VISIBLE_DEVICES=0,1,2,3|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2,3", NULL, NULL},
    {"gpu-bind=none, two types per task from SLURM_TRES_PER_TASK", "isolate", "", 7, 0, 2, 0, 3, 2,
     STEP2("2,1") "|SLURM_STEP_GPUS=0,1,2,3|CUDA_VISIBLE_DEVICES=0,1,2,3|"
                  "SLURM_TRES_PER_TASK=cpu=2,gres/gpu:a100=1,gres/gpu:v100=1",
     1, 1, "", "CUDA_VISIBLE_DEVICES=2,3|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=2,3", NULL, NULL},
    {"gpu-bind=none, srun's count wins", "", "", 7, 0, 2, 0, 3, 2,
     STEP2("2,1") "|SLURM_STEP_GPUS=0,1,2,3|CUDA_VISIBLE_DEVICES=0,1,2,3|SLURM_GPUS_PER_TASK=1|" DB_DEVICES_HINT
                  "=none,gpus-per-task=2",
     1, 1, "", "DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2,3", NULL, NULL},
    {"gpu-bind=none, SLURM_TRES_PER_TASK without GPUs", "", "", 7, 0, 2, 0, 3, 2,
     STEP2("2,1") "|SLURM_STEP_GPUS=0,1,2,3|CUDA_VISIBLE_DEVICES=0,1,2,3|SLURM_TRES_PER_TASK=cpu=2", 1, 1, "",
     "DIST_BIND_DEVICE=1|DIST_BIND_GPUS=1", NULL, NULL},
    {"bad SLURM_GPUS_PER_TASK", "", "", 7, 0, 2, 0, 3, 2,
     STEP2("2,1") "|SLURM_STEP_GPUS=0,1,2,3|CUDA_VISIBLE_DEVICES=0,1,2,3|SLURM_GPUS_PER_TASK=a100:1,v100", 1, 1, "",
     NULL, "SLURM_GPUS_PER_TASK=\"a100:1,v100\"&expected a count", NULL},
    {"bad SLURM_TRES_PER_TASK", "", "", 7, 0, 2, 0, 3, 2,
     STEP2("2,1") "|SLURM_STEP_GPUS=0,1,2,3|CUDA_VISIBLE_DEVICES=0,1,2,3|SLURM_TRES_PER_TASK=gres/gpu:a100=x", 1, 1, "",
     NULL, "SLURM_TRES_PER_TASK=\"gres/gpu:a100=x\"", NULL},
    {"gpu-bind=none, more tasks than GPUs", "", "", 7, 0, 1, 0, 3, 3,
     "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=3" GPUS("0,1"), 2, 2, "", NULL, "node1&3 tasks&2 GPUs", NULL},

/* --- MIG: a CUDA process uses only the first MIG instance it is shown ------------------ */
#define MIGS                                                                                                         \
    "MIG-1111aaaa-0000-0000-0000-000000000001,MIG-1111aaaa-0000-0000-0000-000000000002,MIG-2222bbbb-0000-0000-0000-" \
    "000000000003"
    {"MIG, bound: own instance alone", "verbose", "", 7, 0, 1, 0, 3, 3,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=3|SLURM_STEP_GPUS=0,1,2|CUDA_VISIBLE_DEVICES=" MIGS, 1, 1,
     "CUDA_VISIBLE_DEVICES=MIG-1111aaaa-0000-0000-0000-000000000002",
     "CUDA_VISIBLE_DEVICES=MIG-1111aaaa-0000-0000-0000-000000000002|DIST_BIND_DEVICE=0|"
     "DIST_BIND_GPUS=MIG-1111aaaa-0000-0000-0000-000000000002",
     NULL, "MIG: a CUDA process uses only the first MIG instance"},
    {"MIG, unbound: the local_rank-th instance alone", "", "", 7, 0, 1, 0, 3, 3,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=3|CUDA_VISIBLE_DEVICES=" MIGS "|SLURM_STEP_GPUS=0,1,2", 2, 2,
     "CUDA_VISIBLE_DEVICES=" MIGS, "CUDA_VISIBLE_DEVICES=MIG-2222bbbb-0000-0000-0000-000000000003|DIST_BIND_DEVICE=0",
     NULL, NULL},
    {"MIG, isolate: the same", "isolate", "", 7, 0, 1, 0, 3, 3,
     "SLURM_STEP_NODELIST=n1|SLURM_STEP_TASKS_PER_NODE=3|CUDA_VISIBLE_DEVICES=" MIGS "|SLURM_STEP_GPUS=0,1,2", 0, 0,
     "CUDA_VISIBLE_DEVICES=" MIGS, "CUDA_VISIBLE_DEVICES=MIG-1111aaaa-0000-0000-0000-000000000001|DIST_BIND_DEVICE=0",
     NULL, NULL},

    /* --- no GPUs / GPU binding off -------------------------------------------------------------- */
    {"no GPUs: rank variables only", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2"), 1, 1, "",
     RANKVARS("1", "5", "1", "3", "0", "2") "|MASTER_ADDR=node1|DIST_BIND_MODE=rank|-CUDA_VISIBLE_DEVICES|"
                                            "-DIST_BIND_DEVICE|-DIST_BIND_GPUS|-CUDA_DEVICE_ORDER",
     NULL, NULL},
    {"gpu-bind=none: lists from the step's GPUs", "", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, "",
     "RANK=1|CUDA_VISIBLE_DEVICES=0,1,2|ROCR_VISIBLE_DEVICES=0,1,2|GPU_DEVICE_ORDINAL=0,1,2|DIST_BIND_DEVICE=1|"
     "DIST_BIND_GPUS=1",
     NULL, NULL},

    /* --- more tasks than GPUs --------------------------------------------------------------------- */
    {"more tasks than GPUs", "", "", 7, 0, 1, 0, 3, 3,
     "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=3" GPUS("0,1"), 2, 2, TASK("0,1"), NULL,
     "node1&3 tasks&2 GPUs&share", NULL},
    {"more tasks than GPUs isolate", "isolate", "", 7, 0, 1, 0, 3, 3,
     "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=3" GPUS("0,1"), 2, 2, TASK("0,1"), NULL,
     "node1&3 tasks&2 GPUs", NULL},
    {"more tasks than GPUs, share", "share", "", 7, 0, 1, 0, 3, 3,
     "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=3" GPUS("0,1"), 2, 2, TASK("0,1"),
     "CUDA_VISIBLE_DEVICES=0,1|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=0", NULL, NULL},
    {"more tasks than GPUs, share, task 1", "share", "", 7, 0, 1, 0, 3, 3,
     "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=3" GPUS("0,1"), 1, 1, TASK("0,1"),
     "CUDA_VISIBLE_DEVICES=0,1|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=1", NULL, NULL},
    {"more tasks than GPUs, isolate share", "isolate,share", "", 7, 0, 1, 0, 3, 3,
     "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=3" GPUS("0,1"), 2, 2, TASK("0,1"),
     "CUDA_VISIBLE_DEVICES=0|DIST_BIND_DEVICE=0", NULL, NULL},
    {"more tasks than GPUs, env mode does not fail", "env", "", 7, 0, 1, 0, 3, 3,
     "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=3" GPUS("0,1"), 2, 2, TASK("0,1"),
     "RANK=2|-CUDA_VISIBLE_DEVICES|DIST_BIND_DEVICE=0", NULL, NULL},
    {"bound k=2 overlapping", "", "", 7, 0, 1, 0, 2, 2,
     "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=2" GPUS("0,1,2"), 1, 1, TASK("1,2"), NULL,
     "node1&2 tasks&2 GPUs each&3 GPUs", NULL},

    /* --- MASTER_PORT ------------------------------------------------------------------------------- */
    {"port= option", "port=29500", "", 7, 0, 2, 0, 5, 3, SEED_N1, 0, 0, TASK("0"), "MASTER_PORT=29500", NULL, NULL},
    {"reserved port", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|SLURM_STEP_RESV_PORTS=12000-12003", 0, 0, TASK("0"),
     "MASTER_PORT=12000", NULL, NULL},
    {"reserved port list", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|SLURM_STEP_RESV_PORTS=12007,12009", 0, 0, TASK("0"),
     "MASTER_PORT=12007", NULL, NULL},
    {"port= beats reserved", "port=29500", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|SLURM_STEP_RESV_PORTS=12000-12003", 0, 0,
     TASK("0"), "MASTER_PORT=29500", NULL, NULL},
    {"user's MASTER_PORT wins", "port=29500,verbose", "", 7, 0, 2, 0, 5, 3,
     SEED_N1 "|MASTER_PORT=31337|SLURM_STEP_RESV_PORTS=12000-12003", 0, 0, TASK("0"), "MASTER_PORT=31337", NULL,
     "set by user wins over port=29500"},
    {"user's MASTER_ADDR wins", "", "master_addr=suffix:-ib", 7, 0, 2, 0, 5, 3, SEED_N1 "|MASTER_ADDR=head0", 0, 0,
     TASK("0"), "MASTER_ADDR=head0", NULL, NULL},
    {"hashed port in a 1-port range", "", "ports=23456-23456", 7, 0, 2, 0, 5, 3, SEED_N1, 0, 0, TASK("0"),
     "MASTER_PORT=23456|DIST_BIND_MASTER=node1:23456", NULL, NULL},

    /* --- master_addr= ------------------------------------------------------------------------------- */
    {"master_addr=suffix", "", "master_addr=suffix:-ib", 7, 0, 2, 1, 5, 2, SEED_N2, 3, 0, TASK("0"),
     "MASTER_ADDR=node1-ib", NULL, NULL},
    {"master_addr=addr via srun", "", "master_addr=addr", 7, 0, 2, 1, 5, 2, SEED_N2 "|" DB_RANK0_HINT "=127.0.0.2", 3,
     0, TASK("0"), "MASTER_ADDR=127.0.0.2", NULL, NULL},
    {"master_addr=addr without srun", "", "master_addr=addr", 7, 0, 2, 1, 5, 2, SEED_N2, 3, 0, TASK("0"), NULL,
     "MASTER_ADDR&NodeAddr&" DB_RANK0_HINT, NULL},
    {"multi-dimensional node names", "verbose", "", 7, 0, 4, 2, 4, 1,
     "SLURM_STEP_NODELIST=r[1-2]n[07-08]|SLURM_STEP_TASKS_PER_NODE=1(x4)", 2, 0, "", "MASTER_ADDR=r1n07|NODE_RANK=2",
     NULL, "host=r2n07"},

    /* --- steps that get nothing ----------------------------------------------------------------------- */
    {"batch step", "", "", 7, 0xfffffffbu, 1, 0, 1, 1, "SLURM_STEP_NODELIST=node1" GPUS("0,1"), 0, 0, TASK("0,1"), "!",
     NULL, NULL},
    {"extern step", "", "", 7, 0xfffffffcu, 1, 0, 1, 1, "SLURM_STEP_NODELIST=node1", 0, 0, "", "!", NULL, NULL},
    {"interactive step", "", "", 7, 0xfffffffau, 1, 0, 1, 1, "SLURM_STEP_NODELIST=node1", 0, 0, "", "!", NULL, NULL},

    /* --- malformed input: one clear error, nothing set -------------------------------------------------- */
    {"garbage GPU id", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") "|SLURM_STEP_GPUS=0,1,2|CUDA_VISIBLE_DEVICES=0,x,2", 0, 0,
     TASK("0"), NULL, "CUDA_VISIBLE_DEVICES=\"0,x,2\"&\"x\" is not a GPU", NULL},
    {"overflowing GPU id", "", "", 7, 0, 2, 0, 5, 3,
     STEP2("3,2") "|SLURM_STEP_GPUS=0,1|CUDA_VISIBLE_DEVICES=0,99999999999999999999", 0, 0, TASK("0"), NULL,
     "CUDA_VISIBLE_DEVICES&99999999999999999999&expected an index", NULL},
    {"negative GPU id", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") "|SLURM_STEP_GPUS=0|CUDA_VISIBLE_DEVICES=-1", 0, 0, "",
     NULL, "CUDA_VISIBLE_DEVICES&\"-1\"", NULL},
    {"duplicate GPU id", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") "|SLURM_STEP_GPUS=0,1,2|CUDA_VISIBLE_DEVICES=0,1,1", 0,
     0, TASK("0"), NULL, "CUDA_VISIBLE_DEVICES=\"0,1,1\"&GPU 1 is listed twice", NULL},
    {"empty GPU list", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") "|SLURM_STEP_GPUS=0|CUDA_VISIBLE_DEVICES=", 0, 0,
     TASK("0"), NULL, "CUDA_VISIBLE_DEVICES=\"\"&empty", NULL},
    {"empty GPU entry", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") "|SLURM_STEP_GPUS=0,1|CUDA_VISIBLE_DEVICES=0,,1", 0, 0,
     TASK("0"), NULL, "CUDA_VISIBLE_DEVICES&empty entry", NULL},
    /* A list naming a GPU outside the step's is not Slurm's (a container
     * plugin before dist-bind copied an image's): never shown, the task's
     * GPUs come from the step's list, in every mode. */
    {"unknown GPU in task", "verbose", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("0,1,2,3"),
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=1|GPU_DEVICE_ORDINAL=0,1,2", NULL,
     "CUDA_VISIBLE_DEVICES=\"0,1,2,3\" names GPU 3, not one of the step's GPUs on node node1 (0,1,2)&ignored"},
    {"unknown GPU in task, isolate", "isolate", "", 7, 0, 2, 0, 5, 3, SEED_N1, 2, 2, TASK("7"),
     "CUDA_VISIBLE_DEVICES=2|DIST_BIND_DEVICE=0|DIST_BIND_GPUS=2", NULL, NULL},
    {"unknown GPU in task, env mode: the step's list", "env", "", 7, 0, 2, 0, 5, 3, SEED_N1, 2, 2, TASK("0,1,2,3"),
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=2", NULL, NULL},
    /* A container plugin before dist-bind (pyxis with an image setting
     * them, enroot's PyTorch hook): dist-bind's values win, verbose says so. */
    {"container plugin before dist-bind", "verbose", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1,
     TASK("1") "|LOCAL_RANK=0|MASTER_PORT=61234|MASTER_ADDR=image-master|WORLD_SIZE=1",
     RANKVARS("1", "5", "1", "3", "0", "2") "|MASTER_ADDR=node1|DIST_BIND_DEVICE=1", NULL,
     "a plugin that ran before dist-bind in task_init changed WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT "
     "(a container plugin"},
    /* srun --container: Slurm before 23.02 (EARLY: the glue's
     * container_env_early) writes the container's environment before
     * task_init; verbose says nothing reaches the program.  Later releases:
     * no such note. */
    {"srun --container on Slurm 22.05", "verbose", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|SLURM_CONTAINER=/b|" EARLY, 1, 1,
     TASK("1"), "RANK=1", NULL,
     "srun --container=/b: this Slurm (before 23.02) writes the container's environment "
     "before SPANK task_init, so none of dist-bind's variables"},
    {"srun --container on Slurm 23.02+", "verbose", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|SLURM_CONTAINER=/b", 1, 1,
     TASK("1"), "RANK=1", NULL, "device=1 mode=rank"},
    {"a user's LOCAL_RANK is no container's", "verbose", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|LOCAL_RANK=9", 1, 1,
     TASK("1") "|LOCAL_RANK=9", "LOCAL_RANK=1", NULL, "device=1"},
    {"garbage task GPU list", "", "", 7, 0, 2, 0, 5, 3, SEED_N1, 0, 0, "CUDA_VISIBLE_DEVICES=zero", NULL,
     "CUDA_VISIBLE_DEVICES=\"zero\"", NULL},
    {"a list Slurm did not set is left alone", "verbose", "", 7, 0, 2, 0, 5, 3,
     STEP2("3,2") "|SLURM_STEP_GPUS=0,1,2|CUDA_VISIBLE_DEVICES=0,1,2|ROCR_VISIBLE_DEVICES=0,1|ZE_AFFINITY_MASK=0.0", 1,
     1, "CUDA_VISIBLE_DEVICES=1|ROCR_VISIBLE_DEVICES=0,1|ZE_AFFINITY_MASK=0.0",
     "CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=1|-ROCR_VISIBLE_DEVICES|-ZE_AFFINITY_MASK", NULL,
     "ROCR_VISIBLE_DEVICES=\"0,1\" does not match CUDA_VISIBLE_DEVICES: left alone&ZE_AFFINITY_MASK=\"0.0\""},
    {"user's GPU list without Slurm GPUs", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,2") "|ROCR_VISIBLE_DEVICES=0", 2, 2,
     "ROCR_VISIBLE_DEVICES=0", "RANK=2|-ROCR_VISIBLE_DEVICES|-DIST_BIND_DEVICE|-CUDA_DEVICE_ORDER", NULL, NULL},
    /* --- heterogeneous step: srun -w node2 -n2 : -w node1 -n3 (measured on 22.05): each
     * component's items count from 0 (its own job id 8 for the second); the step's and the
     * task's environment describe the whole step. ------------------------------------------ */
    {"het: second component, node1", "", "", 8, 0, 1, 0, 3, 3, HET("HET_GROUP_0=node2") GPUS("0,1,2"), 1, 1,
     TASK("1") "|SLURM_PROCID=3|SLURM_NODEID=1|SLURM_GTIDS=2,3,4|SLURMD_NODENAME=node1",
     RANKVARS("3", "5", "1", "3", "1", "2") "|MASTER_ADDR=node2|CUDA_VISIBLE_DEVICES=0,1,2|DIST_BIND_DEVICE=1|"
                                            "DIST_BIND_GPUS=1|DIST_BIND_STEP=7.0",
     NULL, NULL},
    {"het: rank 0 in the first component", "verbose", "", 7, 0, 1, 0, 2, 2, HET("PACK_GROUP_0=node2") GPUS("0,1"), 0, 0,
     TASK("0") "|SLURM_PROCID=0|SLURM_NODEID=0|SLURM_GTIDS=0,1|SLURMD_NODENAME=node2",
     RANKVARS("0", "5", "0", "2", "0", "2") "|MASTER_ADDR=node2|CUDA_VISIBLE_DEVICES=0,1|DIST_BIND_STEP=7.0", NULL,
     "rank=0/5 host=node2 local_rank=0/2"},
    {"het: rank 0 not on the first component's first node", "", "", 7, 0, 1, 0, 2, 2, HET("HET_GROUP_0=node[1-2]"), 0,
     0, "SLURM_PROCID=0|SLURM_NODEID=0|SLURM_GTIDS=0,1|SLURMD_NODENAME=node2", NULL,
     "rank 0 of heterogeneous step 7.0 runs on node2, not on node1&export MASTER_ADDR", NULL},
    {"het: inside a homogeneous allocation", "", "", 7, 0, 1, 0, 3, 3, HET("X=y"), 0, 0, "", NULL,
     "inside a homogeneous allocation&export MASTER_ADDR", NULL},
    {"het: inside a homogeneous allocation, MASTER_ADDR exported", "", "", 7, 0, 1, 0, 3, 3,
     HET("X=y") "|MASTER_ADDR=head", 2, 2, "SLURM_PROCID=2|SLURM_NODEID=0|SLURM_GTIDS=0,1,2",
     RANKVARS("2", "5", "2", "3", "0", "2") "|MASTER_ADDR=head", NULL, NULL},
    {"het: arbitrary order caught", "", "", 8, 0, 1, 0, 3, 3, HET("HET_GROUP_0=node2"), 1, 1,
     "SLURM_PROCID=0|SLURM_NODEID=1|SLURM_GTIDS=0,3,4", NULL, "node #1 is node 1&lowest rank is 0", NULL},
    {"het: bad SLURM_PROCID", "", "", 8, 0, 1, 0, 3, 3, HET("HET_GROUP_0=node2"), 1, 1,
     "SLURM_PROCID=5|SLURM_NODEID=1|SLURM_GTIDS=2,3,4", NULL, "SLURM_PROCID=\"5\"", NULL},
/* srun's DIST_BIND_SRUN_DEVICES for srun -n2 --gpus-per-task=1 : -n3 --gpus-per-task=2
 * (--gpu-bind=none): one section per component; the node takes its own by its job id. */
#define HET_HINT(h) "|SLURM_JOB_ID_HET_GROUP_0=7|SLURM_JOB_ID_HET_GROUP_1=8|" DB_DEVICES_HINT "=" h
#define HET_N1_TASK1 "SLURM_PROCID=3|SLURM_NODEID=1|SLURM_GTIDS=2,3,4|SLURMD_NODENAME=node1"
    {"het: the second component's own GPUs per task", "verbose", "", 8, 0, 1, 0, 3, 3,
     HET("HET_GROUP_0=node2") GPUS("0,1,2,3,4,5") HET_HINT("cgroup,gpus-per-task=1;cgroup,gpus-per-task=2"), 1, 1,
     HET_N1_TASK1, "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2,3", NULL,
     "from srun's TaskPlugin"},
    {"het: the first component's section in the first component", "", "", 7, 0, 1, 0, 2, 2,
     HET("HET_GROUP_0=node2") GPUS("0,1,2,3") HET_HINT("none,gpus-per-task=2;none,gpus-per-task=1"), 1, 1,
     "SLURM_PROCID=1|SLURM_NODEID=0|SLURM_GTIDS=0,1|SLURMD_NODENAME=node2",
     "CUDA_VISIBLE_DEVICES=0,1,2,3|DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2,3", NULL, NULL},
    {"het: sections but no component job ids: GPUs per task unknown", "verbose", "", 8, 0, 1, 0, 3, 3,
     HET("HET_GROUP_0=node2") GPUS("0,1,2,3,4,5") "|" DB_DEVICES_HINT "=cgroup,gpus-per-task=1;cgroup,gpus-per-task=2",
     1, 1, HET_N1_TASK1, "DIST_BIND_DEVICE=1|DIST_BIND_GPUS=1", NULL,
     "names 2 components, and Slurm's SLURM_JOB_ID_HET_GROUP_* do not say which"},
    {"het: sections disagreeing on device cgroups", "", "", 8, 0, 1, 0, 3, 3,
     HET("HET_GROUP_0=node2") GPUS("0,1,2") HET_HINT("cgroup;none"), 1, 1, HET_N1_TASK1, NULL,
     DB_DEVICES_HINT "=\"cgroup;none\"&once per component", NULL},
    {"het: an empty section", "", "", 8, 0, 1, 0, 3, 3, HET("HET_GROUP_0=node2") GPUS("0,1,2") HET_HINT("cgroup;"), 1,
     1, HET_N1_TASK1, NULL, DB_DEVICES_HINT "=\"cgroup;\"", NULL},
    {"het: no step task count", "", "", 8, 0, 1, 0, 3, 3,
     "SLURM_STEP_NUM_TASKS=5|SLURM_JOB_ID=7|SLURM_JOB_NODELIST_HET_GROUP_0=node2", 1, 1, "", NULL,
     "Slurm set no SLURM_STEP_NUM_NODES", NULL},

    /* --- an srun inside a task (srun --pty bash, then srun): what dist-bind set
     *     for the enclosing step 7.0 is not the user's ------------------------- */
    {"nested: inherited MASTER_* are not the user's", "", "ports=23000-23000", 7, 1, 2, 0, 5, 3,
     SEED_N1 "|MASTER_ADDR=node2|MASTER_PORT=24000|DIST_BIND_MASTER=node2:24000|DIST_BIND_STEP=7.0", 0, 0,
     TASK("0") "|DIST_BIND_STEP=7.0",
     "MASTER_ADDR=node1|MASTER_PORT=23000|DIST_BIND_STEP=7.1|DIST_BIND_MASTER=node1:23000", NULL, NULL},
    {"nested: a MASTER_PORT the user changed wins", "", "ports=23000-23000", 7, 1, 2, 0, 5, 3,
     SEED_N1 "|MASTER_ADDR=node2|MASTER_PORT=31000|DIST_BIND_MASTER=node2:24000|DIST_BIND_STEP=7.0", 0, 0, TASK("0"),
     "MASTER_ADDR=node1|MASTER_PORT=31000", NULL, NULL},
    {"nested, no GPUs: inherited GPU variables dropped", "", "", 7, 1, 2, 0, 5, 3, STEP2("3,2") "|DIST_BIND_STEP=7.0",
     1, 1, "DIST_BIND_STEP=7.0|DIST_BIND_DEVICE=1|DIST_BIND_GPUS=1|DIST_BIND_NUMA=0",
     "RANK=1|~DIST_BIND_DEVICE|~DIST_BIND_GPUS|~DIST_BIND_NUMA|DIST_BIND_STEP=7.1", NULL, NULL},
    {"nested, mode off: everything inherited dropped", "off", "", 7, 1, 2, 0, 5, 3, SEED_N1, 1, 1,
     TASK("1") "|DIST_BIND_STEP=7.0|DIST_BIND_MASTER=node1:24000|MASTER_ADDR=node1|MASTER_PORT=24000|RANK=4|"
               "WORLD_SIZE=5|LOCAL_RANK=1|DIST_BIND_MODE=rank|DIST_BIND_DEVICE=1|OTHER=x",
     "~RANK|~WORLD_SIZE|~LOCAL_RANK|~DIST_BIND_MODE|~DIST_BIND_DEVICE|~DIST_BIND_STEP|~DIST_BIND_MASTER|~MASTER_ADDR|"
     "~MASTER_PORT|-OTHER|-CUDA_VISIBLE_DEVICES",
     NULL, NULL},
    {"nested, mode off: the user's MASTER_PORT kept", "off", "", 7, 1, 2, 0, 5, 3, SEED_N1, 1, 1,
     "DIST_BIND_STEP=7.0|DIST_BIND_MASTER=node1:24000|MASTER_ADDR=node1|MASTER_PORT=31000|RANK=4",
     "~RANK|~MASTER_ADDR|-MASTER_PORT", NULL, NULL},
    /* --- Apptainer's twins: APPTAINERENV_<NAME> for each variable set or unset ------ */
    {"twins: seed rank1", "", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"),
     "APPTAINERENV_RANK=1|APPTAINERENV_WORLD_SIZE=5|APPTAINERENV_LOCAL_RANK=1|APPTAINERENV_MASTER_ADDR=node1|"
     "APPTAINERENV_CUDA_VISIBLE_DEVICES=0,1,2|APPTAINERENV_DIST_BIND_DEVICE=1|APPTAINERENV_CUDA_DEVICE_ORDER=PCI_BUS_"
     "ID|"
     "APPTAINERENV_DIST_BIND_STEP=7.0|-APPTAINERENV_SLURM_PROCID",
     NULL, NULL},
    {"twins: the step's secret from srun", "", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1") "|DIST_BIND_SECRET=00ff",
     "APPTAINERENV_DIST_BIND_SECRET=00ff|APPTAINERENV_RANK=1", NULL, NULL},
    {"secret: carried only (--export dropped it)", "", "", 7, 0, 2, 0, 5, 3,
     SEED_N1 "|" DB_CARRIED(DB_SECRET_VAR) "=00ff", 1, 1, TASK("1") "|" DB_CARRIED(DB_SECRET_VAR) "=00ff",
     "DIST_BIND_SECRET=00ff|APPTAINERENV_DIST_BIND_SECRET=00ff|~" DB_CARRIED(
         DB_SECRET_VAR) "|^DIST_BIND_SET=,DIST_BIND_SECRET:",
     NULL, NULL},
    {"secret: carried and plain alike", "", "", 7, 0, 2, 0, 5, 3,
     SEED_N1 "|DIST_BIND_SECRET=00ff|" DB_CARRIED(DB_SECRET_VAR) "=00ff", 1, 1,
     TASK("1") "|DIST_BIND_SECRET=00ff|" DB_CARRIED(DB_SECRET_VAR) "=00ff",
     "-DIST_BIND_SECRET|APPTAINERENV_DIST_BIND_SECRET=00ff|~" DB_CARRIED(DB_SECRET_VAR), NULL, NULL},
    {"secret: carried wins over another", "", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1,
     TASK("1") "|DIST_BIND_SECRET=aaaa|" DB_CARRIED(DB_SECRET_VAR) "=00ff",
     "DIST_BIND_SECRET=00ff|APPTAINERENV_DIST_BIND_SECRET=00ff|~" DB_CARRIED(DB_SECRET_VAR), NULL, NULL},
    {"twins: no secret without a plan", "off", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1") "|DIST_BIND_SECRET=00ff",
     "!", NULL, NULL},
    {"twins: env mode, Slurm's lists kept", "env", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1, TASK("1"),
     "-CUDA_VISIBLE_DEVICES|APPTAINERENV_CUDA_VISIBLE_DEVICES=1|APPTAINERENV_GPU_DEVICE_ORDINAL=1|"
     "APPTAINERENV_ROCR_VISIBLE_DEVICES=1|-APPTAINERENV_ZE_AFFINITY_MASK",
     NULL, NULL},
    {"twins: isolate", "isolate", "", 7, 0, 2, 0, 5, 3, SEED_N1, 2, 2, TASK("2"),
     "CUDA_VISIBLE_DEVICES=2|APPTAINERENV_CUDA_VISIBLE_DEVICES=2|APPTAINERENV_DIST_BIND_DEVICE=0", NULL, NULL},
    {"twins: one the user exported wins", "verbose", "", 7, 0, 2, 0, 5, 3, SEED_N1, 1, 1,
     TASK("1") "|APPTAINERENV_MASTER_PORT=31000", "RANK=1|APPTAINERENV_RANK=1|-APPTAINERENV_MASTER_PORT", NULL,
     "APPTAINERENV_MASTER_PORT set by user wins"},
    {"twins: an enclosing step's are replaced or dropped", "", "", 7, 1, 2, 0, 5, 3, STEP2("3,2") "|DIST_BIND_STEP=7.0",
     1, 1, "DIST_BIND_STEP=7.0|DIST_BIND_DEVICE=1|APPTAINERENV_DIST_BIND_DEVICE=1|APPTAINERENV_RANK=4",
     "RANK=1|APPTAINERENV_RANK=1|~DIST_BIND_DEVICE|~APPTAINERENV_DIST_BIND_DEVICE|APPTAINERENV_DIST_BIND_STEP=7.1",
     NULL, NULL},
    {"twins: mode off drops an enclosing step's", "off", "", 7, 1, 2, 0, 5, 3, SEED_N1, 1, 1,
     "DIST_BIND_STEP=7.0|RANK=4|APPTAINERENV_RANK=4|APPTAINERENV_DIST_BIND_STEP=7.0",
     "~RANK|~APPTAINERENV_RANK|~APPTAINERENV_DIST_BIND_STEP", NULL, NULL},
    {"mode off, nothing inherited: nothing at all", "off", "", 7, 1, 2, 0, 5, 3, SEED_N1, 1, 1,
     TASK("1") "|RANK=9|MASTER_PORT=5", "!", NULL, NULL},
    /* --- launchers, one task per node (-N2 --ntasks-per-node=1 --gpus-per-node=3):
     *     the node's only task owns all its GPUs in every mode; torchrun's PET_*
     *     defaults (the place they were set for opens DIST_BIND_SET: set_record) ---- */
    {"torchrun agent, rank", "port=23456", "", 7, 0, 2, 1, 2, 1, STEP2("1,1") GPUS("0,1,2"), 1, 0, TASK("0,1,2"),
     RANKVARS("1", "2", "0", "1", "1", "2") "|CUDA_VISIBLE_DEVICES=0,1,2|-DIST_BIND_DEVICE|DIST_BIND_GPUS=0,1,2|"
                                            "-DIST_BIND_TASK|PET_NNODES=2|PET_NODE_RANK=1|PET_MASTER_ADDR=node1|"
                                            "PET_MASTER_PORT=23456|PET_RDZV_ENDPOINT=node1:23456|PET_RDZV_ID=7.0",
     NULL, NULL},
    {"torchrun agent, isolate", "isolate", "", 7, 0, 2, 1, 2, 1, STEP2("1,1") GPUS("0,1,2"), 1, 0, TASK("0,1,2"),
     "CUDA_VISIBLE_DEVICES=0,1,2|-DIST_BIND_DEVICE|DIST_BIND_GPUS=0,1,2|PET_NODE_RANK=1", NULL, NULL},
    {"torchrun agent, closest", "closest", "", 7, 0, 2, 1, 2, 1, STEP2("1,1") GPUS("0,1,2"), 1, 0, TASK("0,1,2"),
     "CUDA_VISIBLE_DEVICES=0,1,2|-DIST_BIND_DEVICE|DIST_BIND_GPUS=0,1,2|PET_NODE_RANK=1", NULL, NULL},
    {"torchrun agent, env", "env", "", 7, 0, 2, 1, 2, 1, STEP2("1,1") GPUS("0,1,2"), 1, 0, TASK("0,1,2"),
     "-CUDA_VISIBLE_DEVICES|-DIST_BIND_DEVICE|DIST_BIND_GPUS=0,1,2|PET_NODE_RANK=1", NULL, NULL},
    {"torchrun agent, --gpu-bind=none", "isolate", "", 7, 0, 2, 0, 2, 1,
     STEP2("1,1") "|SLURM_STEP_GPUS=1,2,3|CUDA_VISIBLE_DEVICES=1,2,3", 0, 0, "",
     "CUDA_VISIBLE_DEVICES=1,2,3|-DIST_BIND_DEVICE|DIST_BIND_GPUS=1,2,3|PET_NODE_RANK=0", NULL, NULL},
    {"torchrun: second agent of a node (-n3 over two nodes)", "", "", 7, 0, 2, 0, 3, 2, STEP2("2,1") GPUS("0,1,2,3"), 1,
     1, TASK("2,3"), "DIST_BIND_DEVICE=2|DIST_BIND_GPUS=2,3|-DIST_BIND_TASK|PET_NNODES=3|PET_NODE_RANK=1", NULL, NULL},
    {"torchrun: PET_ values exported before srun win", "", "", 7, 0, 2, 1, 2, 1, STEP2("1,1") GPUS("0,1,2"), 1, 0,
     TASK("0,1,2") "|PET_NNODES=1:4|PET_RDZV_ENDPOINT=", "-PET_NNODES|-PET_RDZV_ENDPOINT|PET_NODE_RANK=1", NULL, NULL},
/* The program's argv (S_JOB_ARGV): a master typed on torchrun's command line makes
 * the endpoint, which torchrun's static rendezvous prefers over it. */
#define TR(argv) STEP2("1,1") GPUS("0,1,2") "|" JOB_ARGV "=" argv
    {"torchrun: typed --master-port makes the endpoint", "port=23456,verbose", "", 7, 0, 2, 1, 2, 1,
     TR("torchrun --nproc-per-node=3 --master-port=31555 train.py"), 1, 0, TASK("0,1,2"),
     "PET_MASTER_PORT=23456|PET_RDZV_ENDPOINT=node1:31555|PET_MASTER_ADDR=node1", NULL,
     "torchrun's typed --master-addr/--master-port: PET_RDZV_ENDPOINT=node1:31555"},
    {"torchrun 1.13 spelling, values as separate words", "port=23456", "", 7, 0, 2, 1, 2, 1,
     TR("/usr/bin/torchrun --standalone --nproc_per_node 3 --master_addr node2 train.py"), 1, 0, TASK("0,1,2"),
     "PET_RDZV_ENDPOINT=node2:23456", NULL, NULL},
    {"torchrun: both typed, IPv6", "port=23456", "", 7, 0, 2, 1, 2, 1,
     TR("torchrun -m --master-addr=fe80::1 --master-port 5 -r 3 mod"), 1, 0, TASK("0,1,2"),
     "PET_RDZV_ENDPOINT=[fe80::1]:5", NULL, NULL},
    {"torchrun: a typed --rdzv-endpoint wins itself", "port=23456", "", 7, 0, 2, 1, 2, 1,
     TR("torchrun --master-port=5 --rdzv_endpoint=h:6 train.py"), 1, 0, TASK("0,1,2"), "PET_RDZV_ENDPOINT=node1:23456",
     NULL, NULL},
    {"torchrun: the training script's own flags are not torchrun's", "port=23456", "", 7, 0, 2, 1, 2, 1,
     TR("torchrun --nproc-per-node 2 train.py --master-port=5"), 1, 0, TASK("0,1,2"), "PET_RDZV_ENDPOINT=node1:23456",
     NULL, NULL},
    {"python -m torch.distributed.run", "port=23456", "", 7, 0, 2, 1, 2, 1,
     TR("python3 -u -m torch.distributed.run --master-port=7 train.py"), 1, 0, TASK("0,1,2"),
     "PET_RDZV_ENDPOINT=node1:7", NULL, NULL},
    {"not torchrun: a program's --master-port is its own", "port=23456", "", 7, 0, 2, 1, 2, 1,
     TR("python3 train.py --master-port=7"), 1, 0, TASK("0,1,2"), "PET_RDZV_ENDPOINT=node1:23456", NULL, NULL},
    {"nested: an enclosing step's PET_ values replaced", "port=23456", "", 7, 1, 2, 1, 2, 1, STEP2("1,1") GPUS("0,1,2"),
     1, 0, TASK("0,1,2") "|DIST_BIND_STEP=7.0|PET_NNODES=5|PET_RDZV_ID=7.0|PET_RDZV_ENDPOINT=node2:1",
     "PET_NNODES=2|PET_RDZV_ID=7.1|PET_RDZV_ENDPOINT=node1:23456", NULL, NULL},
    {"nested, mode off: PET_ values and the record dropped", "off", "", 7, 1, 2, 1, 2, 1, STEP2("1,1") GPUS("0,1,2"), 1,
     0, TASK("0,1,2") "|DIST_BIND_STEP=7.0|PET_NNODES=5|DIST_BIND_SET=1,0,5;RANK:-",
     "~PET_NNODES|~DIST_BIND_SET|-PET_NODE_RANK", NULL, NULL},
    {"user MASTER_PORT garbage", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|MASTER_PORT=http", 0, 0, TASK("0"), NULL,
     "MASTER_PORT=\"http\"&expected a port 1..65535", NULL},
    {"user MASTER_PORT too big", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|MASTER_PORT=70000", 0, 0, TASK("0"), NULL,
     "MASTER_PORT=\"70000\"", NULL},
    {"reserved ports garbage", "", "", 7, 0, 2, 0, 5, 3, SEED_N1 "|SLURM_STEP_RESV_PORTS=abc", 0, 0, TASK("0"), NULL,
     "SLURM_STEP_RESV_PORTS=\"abc\"", NULL},
    {"tasks-per-node garbage", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,x"), 0, 0, "", NULL,
     "SLURM_STEP_TASKS_PER_NODE=\"3,x\"&bad count", NULL},
    {"tasks-per-node bad repeat", "", "", 7, 0, 2, 0, 5, 3, STEP2("3(x0),2"), 0, 0, "", NULL,
     "SLURM_STEP_TASKS_PER_NODE&bad repeat", NULL},
    {"tasks-per-node overflow", "", "", 7, 0, 2, 0, 5, 3, STEP2("99999999999,2"), 0, 0, "", NULL,
     "SLURM_STEP_TASKS_PER_NODE&99999999999", NULL},
    {"tasks-per-node disagrees with items", "", "", 7, 0, 2, 0, 5, 3, STEP2("2,3"), 0, 0, "", NULL,
     "SLURM_STEP_TASKS_PER_NODE=\"2,3\"&2 tasks on node 0&runs 3", NULL},
    {"tasks-per-node wrong total", "", "", 7, 0, 2, 0, 5, 3, STEP2("3,3"), 0, 0, "", NULL, "6 tasks&has 5", NULL},
    {"bad node list", "", "", 7, 0, 2, 0, 5, 3, "SLURM_STEP_NODELIST=node[1-|SLURM_STEP_TASKS_PER_NODE=3,2", 0, 0, "",
     NULL, "hostlist=\"node[1-\"&unbalanced", NULL},
    {"node list too short", "", "", 7, 0, 2, 1, 5, 2, "SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=3,2", 3, 0,
     "", NULL, "has no host number 1", NULL},
    {"node index out of range", "", "", 7, 0, 2, 2, 5, 3, STEP2("3,2"), 0, 0, "", NULL, "node index 2 >= node count 2",
     NULL},
    {"task outside the step", "", "", 7, 0, 2, 0, 5, 3, SEED_N1, 7, 0, TASK("0"), NULL, "task 7&outside step 7.0",
     NULL},
    {"local task outside the node", "", "", 7, 0, 2, 0, 5, 3, SEED_N1, 2, 3, TASK("0"), NULL, "local 3", NULL},
    {"no node list", "", "", 7, 0, 2, 0, 5, 3, "SLURM_STEP_TASKS_PER_NODE=3,2", 0, 0, "", NULL,
     "SLURM_STEP_NODELIST is not set", NULL},
};

START_TEST(plan_row) {
    const struct row *r = &rows[_i];
    char err[DB_ERRLEN] = "", **argv = NULL, **job_argv = NULL, **senv = make_env(r->step_env),
         **tenv = make_env(r->task_env);
    int argc = make_argv(r->conf, &argv), rc;
    db_config cfg;
    db_request opt, eff;
    db_node_plan *np = NULL;
    struct plan_view v;
    db_node_input ni = {
        r->job, r->step, r->nnodes, r->node_id, r->ntasks, r->local_ntasks, (const char *const *)senv, 0,
        0,      0,       0,         NULL,       0};

    memset(&v, 0, sizeof v);
    if (r->step_env && strstr(r->step_env, EARLY)) ni.container_env_early = 1;
    if (r->step_env && strstr(r->step_env, NODE_DEVICES "="))
        ni.node_devices = atoi(strstr(r->step_env, NODE_DEVICES "=") + strlen(NODE_DEVICES "="));
    if (r->step_env && strstr(r->step_env, JOB_ARGV "=")) {
        char *words = strdup(strstr(r->step_env, JOB_ARGV "=") + strlen(JOB_ARGV "="));
        words[strcspn(words, "|")] = '\0';
        ni.argc = make_argv(words, &job_argv);
        ni.argv = (const char *const *)job_argv;
        free(words);
    }
    if (r->step_env && strstr(r->step_env, LOWEST_RANK "=")) {
        ni.lowest_rank = (uint32_t)strtoul(strstr(r->step_env, LOWEST_RANK "=") + strlen(LOWEST_RANK "="), NULL, 10);
        ni.lowest_rank_known = 1;
    }

    ck_assert_msg(db_config_parse(argc, (const char *const *)argv, &cfg, err, sizeof err) == 0, "%s: config: %s",
                  r->name, err);
    if (r->opt) ck_assert_msg(db_request_parse(r->opt, &opt, err, sizeof err) == 0, "%s: option: %s", r->name, err);
    eff = db_effective(&cfg, r->opt ? &opt : NULL);

    rc = db_node_plan_new(&cfg, &eff, &ni, &np, err, sizeof err);
    if (rc == 0) rc = plan_view_new(np, senv, tenv, r->rank, r->local, &v, err, sizeof err);
    if (r->err) {
        ck_assert_msg(rc != 0, "%s: expected an error containing \"%s\", got success", r->name, r->err);
        ck_assert_msg(v.tp == NULL, "%s: a failed plan returns no variables", r->name);
        assert_contains_all(r->name, err, r->err);
    } else {
        ck_assert_msg(rc == 0, "%s: unexpected error: %s", r->name, err);
        char *want = strdup(r->want), *tok, *save = NULL;
        if (strcmp(r->want, "!") == 0) {
            ck_assert_msg(v.n == 0, "%s: expected no variables, got %zu (first %s)", r->name, v.n,
                          v.n ? v.names[0] : "");
        } else {
            for (tok = strtok_r(want, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
                int at;
                if (tok[0] == '-' || tok[0] == '~') {
                    at = plan_view_find(&v, tok + 1);
                    if (tok[0] == '-' && at >= 0 && v.values[at])
                        ck_abort_msg("%s: %s must not be set, got \"%s\"", r->name, tok + 1, v.values[at]);
                    if (tok[0] == '~')
                        ck_assert_msg(at >= 0 && !v.values[at], "%s: %s should be unset", r->name, tok + 1);
                    continue;
                }
                char *eq = strchr(tok, '=');
                *eq = '\0';
                if (tok[0] == '^') {
                    at = plan_view_find(&v, tok + 1);
                    ck_assert_msg(at >= 0 && v.values[at] && !strstr(v.values[at], eq + 1),
                                  "%s: %s must be set without \"%s\" in it, got \"%s\"", r->name, tok + 1, eq + 1,
                                  at >= 0 && v.values[at] ? v.values[at] : "(unset)");
                    continue;
                }
                at = plan_view_find(&v, tok);
                if (at < 0 && pv_same(pv_get(senv, tok), eq + 1)) {
                    /* The step held dist-bind's value already: nobody
                     * writes it again, the task keeps it. */
                    char **final = plan_view_final(&v);
                    ck_assert_msg(pv_same(pv_get(final, tok), eq + 1), "%s: %s: got \"%s\", want \"%s\"", r->name, tok,
                                  pv_get(final, tok) ? pv_get(final, tok) : "(unset)", eq + 1);
                    free_env(final);
                    continue;
                }
                ck_assert_msg(at >= 0, "%s: %s not set (want \"%s\")", r->name, tok, eq + 1);
                ck_assert_msg(v.values[at] && strcmp(v.values[at], eq + 1) == 0, "%s: %s: got \"%s\", want \"%s\"",
                              r->name, tok, v.values[at] ? v.values[at] : "(unset)", eq + 1);
            }
        }
        free(want);
        if (r->verbose && *r->verbose)
            assert_contains_all(r->name, db_task_plan_verbose(v.tp), r->verbose);
        else if (r->verbose)
            ck_assert_msg(db_task_plan_verbose(v.tp) == NULL, "%s: no verbose line expected", r->name);
        /* Each write names a real variable once: the node's, the task's. */
        for (size_t i = 0; i < db_node_plan_env_count(np); i++)
            for (size_t j = i + 1; j < db_node_plan_env_count(np); j++)
                ck_assert_msg(strcmp(db_node_plan_env_name(np, i), db_node_plan_env_name(np, j)) != 0,
                              "%s: %s written twice by the node", r->name, db_node_plan_env_name(np, i));
        for (size_t i = 0; i < db_task_plan_count(v.tp); i++)
            for (size_t j = i + 1; j < db_task_plan_count(v.tp); j++)
                ck_assert_msg(strcmp(db_task_plan_name(v.tp, i), db_task_plan_name(v.tp, j)) != 0, "%s: %s set twice",
                              r->name, db_task_plan_name(v.tp, i));
        /* Writing the node's variables in user_init changes nothing a task
         * ends up with: the same task planned without them (it then writes
         * everything itself, as before) leaves the same environment, and
         * says the same. */
        {
            db_task_input alone = {r->rank, r->local, (const char *const *)tenv};
            db_task_plan *tp = NULL;
            const char *diff = "";
            ck_assert_msg(db_task_plan_new(np, &alone, &tp, err, sizeof err) == 0, "%s: alone: %s", r->name, err);
            char **before = pv_copy(tenv), **after = plan_view_final(&v);
            for (size_t i = 0; i < db_task_plan_count(tp); i++)
                before = pv_apply(before, db_task_plan_name(tp, i), db_task_plan_value(tp, i));
            ck_assert_msg(pv_env_equal(before, after, &diff), "%s: the node's writes change the task's environment: %s",
                          r->name, diff);
            ck_assert_msg(pv_same(db_task_plan_verbose(tp), db_task_plan_verbose(v.tp)), "%s: verbose differs:\n%s\n%s",
                          r->name, db_task_plan_verbose(tp) ? db_task_plan_verbose(tp) : "",
                          db_task_plan_verbose(v.tp) ? db_task_plan_verbose(v.tp) : "");
            free_env(before);
            free_env(after);
            db_task_plan_free(tp);
        }
    }
    plan_view_free(&v);
    db_node_plan_free(np);
    free_env(senv);
    free_env(tenv);
    free_env(argv);
    free_env(job_argv);
}
END_TEST

/* --- what the node writes once (user_init) and what each task writes ---------------- */
/* The seed layout, every feature on: -N2 -n5 --gpus-per-task=1 with the GPU lists
 * of CUDA, ROCm and OpenCL, srun's three hints, the step's secret, torchrun as the
 * program, --dist-bind=rank,verbose. */
#define FULL(l)                                                                                                   \
    STEP2("3,2")                                                                                                  \
    GPUS(l)                                                                                                       \
    "|" DB_RANK0_HINT "=node1|" DB_NODE_RANKS_HINT "=0-1|" DB_DEVICES_HINT "=none,gpus-per-task=1|" DB_SECRET_VAR \
    "=00ff"
/* The node's writes for rank mode there, in order: 17 variables, their twins and
 * the twins of Slurm's lists (rank shows every task the same lists there), the
 * secret's twin; srun's hints unset.  41 in all. */
#define NODE_VARS                                                                                               \
    "WORLD_SIZE|LOCAL_WORLD_SIZE|NODE_RANK|GROUP_RANK|GROUP_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|DIST_BIND_MODE|" \
    "DIST_BIND_STEP|DIST_BIND_MASTER|PET_NNODES|PET_MASTER_ADDR|PET_MASTER_PORT|PET_RDZV_ENDPOINT|PET_RDZV_ID|" \
    "HIP_VISIBLE_DEVICES|CUDA_DEVICE_ORDER"
#define NODE_TWINS                                                                                                    \
    "APPTAINERENV_WORLD_SIZE|APPTAINERENV_LOCAL_WORLD_SIZE|APPTAINERENV_NODE_RANK|APPTAINERENV_GROUP_RANK|"           \
    "APPTAINERENV_GROUP_WORLD_SIZE|APPTAINERENV_MASTER_ADDR|APPTAINERENV_MASTER_PORT|APPTAINERENV_DIST_BIND_MODE|"    \
    "APPTAINERENV_DIST_BIND_STEP|APPTAINERENV_DIST_BIND_MASTER|APPTAINERENV_PET_NNODES|APPTAINERENV_PET_MASTER_ADDR|" \
    "APPTAINERENV_PET_MASTER_PORT|APPTAINERENV_PET_RDZV_ENDPOINT|APPTAINERENV_PET_RDZV_ID|"                           \
    "APPTAINERENV_CUDA_VISIBLE_DEVICES|APPTAINERENV_ROCR_VISIBLE_DEVICES|APPTAINERENV_GPU_DEVICE_ORDINAL|"            \
    "APPTAINERENV_HIP_VISIBLE_DEVICES|APPTAINERENV_CUDA_DEVICE_ORDER|APPTAINERENV_DIST_BIND_SECRET"
#define NODE_UNSETS "~" DB_RANK0_HINT "|~" DB_NODE_RANKS_HINT "|~" DB_DEVICES_HINT
/* Each task's own: 9 variables and 6 twins (Slurm's lists' twins are the node's). */
#define TASK_VARS                                                                                 \
    "RANK|LOCAL_RANK|PET_NODE_RANK|CUDA_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL|" \
    "DIST_BIND_DEVICE|DIST_BIND_GPUS|DIST_BIND_SET|APPTAINERENV_RANK|APPTAINERENV_LOCAL_RANK|"    \
    "APPTAINERENV_PET_NODE_RANK|APPTAINERENV_DIST_BIND_DEVICE|"                                   \
    "APPTAINERENV_DIST_BIND_GPUS|APPTAINERENV_DIST_BIND_SET"

static const struct hoist_row {
    const char *name, *opt;
    uint32_t node_id, local_ntasks, rank, local;
    const char *step_env; /* at user_init */
    const char *own;      /* what Slurm set for the task over the step's (before task_init) */
    const char *plugin;   /* what a plugin before dist-bind set over the task's in task_init */
    size_t node_n;        /* the node's writes, */
    const char *node;     /* in order: NAME, ~NAME for an unset */
    size_t task_n;        /* the task's */
    const char *task;
    const char *verbose;
} hoist_rows[] = {
    {"seed, rank 1 on node1", "rank,verbose", 0, 3, 1, 1, FULL("0,1,2"), TASK("1"), "", 41,
     NODE_VARS "|" NODE_TWINS "|" NODE_UNSETS, 15, TASK_VARS, "rank=1/5 host=node1 local_rank=1/3"},
    {"seed, rank 4 on node2", "rank,verbose", 1, 2, 4, 1, FULL("0,1"), TASK("1"), "", 41,
     NODE_VARS "|" NODE_TWINS "|" NODE_UNSETS, 15, TASK_VARS, "rank=4/5 host=node2 local_rank=1/2"},
    /* pyxis before dist-bind copied an image's WORLD_SIZE and MASTER_PORT over the
     * task's: those two again (dist-bind's values win), said once. */
    {"a container plugin changed two of the node's", "rank,verbose", 0, 3, 2, 2, FULL("0,1,2"), TASK("2"),
     "WORLD_SIZE=1|MASTER_PORT=61234", 41, NODE_VARS "|" NODE_TWINS "|" NODE_UNSETS, 17,
     "RANK|LOCAL_RANK|WORLD_SIZE|MASTER_PORT|PET_NODE_RANK|CUDA_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|"
     "GPU_DEVICE_ORDINAL|DIST_BIND_DEVICE|DIST_BIND_GPUS|DIST_BIND_SET|APPTAINERENV_RANK|APPTAINERENV_LOCAL_RANK|"
     "APPTAINERENV_PET_NODE_RANK|APPTAINERENV_DIST_BIND_DEVICE|"
     "APPTAINERENV_DIST_BIND_GPUS|APPTAINERENV_DIST_BIND_SET",
     "a plugin that ran before dist-bind in task_init changed WORLD_SIZE, MASTER_PORT (a container plugin"},
    /* ... and one that put a hint back and dropped a twin. */
    {"a container plugin undid an unset and a twin", "rank", 0, 3, 0, 0, FULL("0,1,2"), TASK("0"),
     DB_NODE_RANKS_HINT "=0-1|APPTAINERENV_MASTER_ADDR=", 41, NODE_VARS "|" NODE_TWINS "|" NODE_UNSETS, 17,
     "RANK|LOCAL_RANK|PET_NODE_RANK|CUDA_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL|"
     "DIST_BIND_DEVICE|DIST_BIND_GPUS|DIST_BIND_SET|APPTAINERENV_RANK|APPTAINERENV_LOCAL_RANK|"
     "APPTAINERENV_MASTER_ADDR|APPTAINERENV_PET_NODE_RANK|APPTAINERENV_DIST_BIND_DEVICE|"
     "APPTAINERENV_DIST_BIND_GPUS|APPTAINERENV_DIST_BIND_SET|~" DB_NODE_RANKS_HINT,
     NULL},
    /* A value the node would write the step held already (the user's MASTER_ADDR):
     * not written at all (its twin is). */
    {"the user's MASTER_ADDR is no write", "rank", 0, 3, 1, 1, FULL("0,1,2") "|MASTER_ADDR=head0", TASK("1"), "", 40,
     "WORLD_SIZE|LOCAL_WORLD_SIZE|NODE_RANK|GROUP_RANK|GROUP_WORLD_SIZE|MASTER_PORT|DIST_BIND_MODE|DIST_BIND_STEP|"
     "DIST_BIND_MASTER|PET_NNODES|PET_MASTER_ADDR|PET_MASTER_PORT|PET_RDZV_ENDPOINT|PET_RDZV_ID|HIP_VISIBLE_DEVICES|"
     "CUDA_DEVICE_ORDER|" NODE_TWINS "|" NODE_UNSETS,
     15, TASK_VARS, NULL},
    /* isolate: each task's lists differ, so do their twins (and HIP_VISIBLE_DEVICES). */
    {"seed, isolate", "isolate", 0, 3, 1, 1, FULL("0,1,2"), TASK("1"), "", 36,
     "WORLD_SIZE|LOCAL_WORLD_SIZE|NODE_RANK|GROUP_RANK|GROUP_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|DIST_BIND_MODE|"
     "DIST_BIND_STEP|DIST_BIND_MASTER|PET_NNODES|PET_MASTER_ADDR|PET_MASTER_PORT|PET_RDZV_ENDPOINT|PET_RDZV_ID|"
     "CUDA_DEVICE_ORDER|APPTAINERENV_WORLD_SIZE|APPTAINERENV_LOCAL_WORLD_SIZE|APPTAINERENV_NODE_RANK|"
     "APPTAINERENV_GROUP_RANK|APPTAINERENV_GROUP_WORLD_SIZE|APPTAINERENV_MASTER_ADDR|APPTAINERENV_MASTER_PORT|"
     "APPTAINERENV_DIST_BIND_MODE|APPTAINERENV_DIST_BIND_STEP|APPTAINERENV_DIST_BIND_MASTER|APPTAINERENV_PET_NNODES|"
     "APPTAINERENV_PET_MASTER_ADDR|APPTAINERENV_PET_MASTER_PORT|APPTAINERENV_PET_RDZV_ENDPOINT|"
     "APPTAINERENV_PET_RDZV_ID|APPTAINERENV_CUDA_DEVICE_ORDER|APPTAINERENV_DIST_BIND_SECRET|" NODE_UNSETS,
     20,
     "RANK|LOCAL_RANK|PET_NODE_RANK|CUDA_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL|"
     "HIP_VISIBLE_DEVICES|DIST_BIND_DEVICE|DIST_BIND_GPUS|DIST_BIND_SET|APPTAINERENV_RANK|APPTAINERENV_LOCAL_RANK|"
     "APPTAINERENV_PET_NODE_RANK|APPTAINERENV_CUDA_VISIBLE_DEVICES|"
     "APPTAINERENV_ROCR_VISIBLE_DEVICES|APPTAINERENV_GPU_DEVICE_ORDINAL|APPTAINERENV_HIP_VISIBLE_DEVICES|"
     "APPTAINERENV_DIST_BIND_DEVICE|APPTAINERENV_DIST_BIND_GPUS|APPTAINERENV_DIST_BIND_SET",
     NULL},
    /* Nothing asked: nothing written, by the node or the task. */
    {"mode off", "off", 0, 3, 1, 1, FULL("0,1,2"), TASK("1"), "", 0, "", 0, "", NULL},
};

/* "A|~B" against what was written, in order. */
static void assert_writes(const char *row, const char *who, size_t n, const char *(*name)(const void *, size_t),
                          const char *(*value)(const void *, size_t), const void *plan, size_t want_n,
                          const char *want) {
    char got[4096] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s%s", i ? "|" : "", value(plan, i) ? "" : "~",
                 name(plan, i));
    ck_assert_msg(n == want_n, "%s: %zu writes by the %s, want %zu: %s", row, n, who, want_n, got);
    ck_assert_msg(strcmp(got, want) == 0, "%s: the %s writes\n  %s\nwant\n  %s", row, who, got, want);
}
static const char *node_name(const void *p, size_t i) { return db_node_plan_env_name(p, i); }
static const char *node_value(const void *p, size_t i) { return db_node_plan_env_value(p, i); }
static const char *task_name(const void *p, size_t i) { return db_task_plan_name(p, i); }
static const char *task_value(const void *p, size_t i) { return db_task_plan_value(p, i); }

START_TEST(hoisted) {
    const struct hoist_row *r = &hoist_rows[_i];
    static const char *const program[] = {"torchrun", "--nproc-per-node=1", "train.py", NULL};
    char err[DB_ERRLEN] = "", **senv = make_env(r->step_env), **task = pv_copy(senv), **own = make_env(r->own),
         **plugin = make_env(r->plugin);
    db_config cfg;
    db_request opt, eff;
    db_node_plan *np = NULL;
    db_task_plan *tp = NULL;
    db_node_input ni = {7, 0, 2, r->node_id, 5, r->local_ntasks, (const char *const *)senv, r->node_id ? 3 : 0,
                        1, 0, 3, program,    0};

    ck_assert(db_config_parse(0, NULL, &cfg, err, sizeof err) == 0);
    ck_assert(db_request_parse(r->opt, &opt, err, sizeof err) == 0);
    eff = db_effective(&cfg, &opt);
    ck_assert_msg(db_node_plan_new(&cfg, &eff, &ni, &np, err, sizeof err) == 0, "%s: %s", r->name, err);
    assert_writes(r->name, "node", db_node_plan_env_count(np), node_name, node_value, np, r->node_n, r->node);
    /* The task's environment: the step's as user_init left it, what Slurm
     * sets for the task, what a plugin before dist-bind set. */
    for (size_t i = 0; i < db_node_plan_env_count(np); i++)
        task = pv_apply(task, db_node_plan_env_name(np, i), db_node_plan_env_value(np, i));
    for (char **layer[] = {own, plugin, NULL}, ***l = layer; *l; l++)
        for (char **e = *l; *e; e++) {
            char *eq = strchr(*e, '=');
            *eq = '\0';
            task = pv_apply(task, *e, eq[1] ? eq + 1 : NULL); /* NAME= : the plugin dropped it */
            *eq = '=';
        }
    db_task_input ti = {r->rank, r->local, (const char *const *)task};
    ck_assert_msg(db_task_plan_new(np, &ti, &tp, err, sizeof err) == 0, "%s: %s", r->name, err);
    assert_writes(r->name, "task", db_task_plan_count(tp), task_name, task_value, tp, r->task_n, r->task);
    if (r->verbose) assert_contains_all(r->name, db_task_plan_verbose(tp), r->verbose);
    /* dist-bind's values win over the plugin's, and the record covers
     * the node's variables as well as the task's. */
    for (size_t i = 0; i < db_task_plan_count(tp); i++)
        task = pv_apply(task, db_task_plan_name(tp, i), db_task_plan_value(tp, i));
    if (r->node_n) {
        char out[256];
        ck_assert_str_eq(pv_get(task, "WORLD_SIZE"), "5");
        ck_assert_msg(pv_get(task, DB_NODE_RANKS_HINT) == NULL, "%s: the hint is gone", r->name);
        ck_assert(db_set_record_mismatches(pv_get(task, "DIST_BIND_SET"), (const char *const *)task, out, sizeof out,
                                           err, sizeof err) == 0);
        ck_assert_msg(strcmp(out, "") == 0, "%s: the record disagrees on %s", r->name, out);
        ck_assert_msg(strstr(pv_get(task, "DIST_BIND_SET"), "WORLD_SIZE:") != NULL, "%s: the record", r->name);
        /* It opens with the place: RANK,LOCAL_RANK,WORLD_SIZE. */
        char place[32];
        snprintf(place, sizeof place, "%u,%u,5;RANK:", r->rank, r->local);
        ck_assert_msg(strncmp(pv_get(task, "DIST_BIND_SET"), place, strlen(place)) == 0, "%s: the record's place: %s",
                      r->name, pv_get(task, "DIST_BIND_SET"));
    }
    db_task_plan_free(tp);
    db_node_plan_free(np);
    free_env(senv);
    free_env(task);
    free_env(own);
    free_env(plugin);
}
END_TEST

/* Concurrent steps of a job get different hashed ports, all in range; the
 * same job and step always get the same one. */
START_TEST(hashed_ports) {
    char err[DB_ERRLEN], **argv = NULL, **senv = make_env(SEED_N1), **tenv = make_env(TASK("0"));
    int argc = make_argv("ports=20000-20009", &argv);
    db_config cfg;
    db_request eff = {DB_MODE_RANK, 0, 0, 0};
    char seen[64][8];
    ck_assert(db_config_parse(argc, (const char *const *)argv, &cfg, err, sizeof err) == 0);
    for (uint32_t step = 0; step < 10; step++) {
        db_node_input ni = {123456, step, 2, 0, 5, 3, (const char *const *)senv, 0, 0, 0, 0, NULL, 0};
        db_node_plan *np;
        struct plan_view v;
        ck_assert(db_node_plan_new(&cfg, &eff, &ni, &np, err, sizeof err) == 0);
        ck_assert(plan_view_new(np, senv, tenv, 0, 0, &v, err, sizeof err) == 0);
        int at = plan_view_find(&v, "MASTER_PORT");
        ck_assert(at >= 0 && v.values[at]);
        snprintf(seen[step], sizeof seen[step], "%s", v.values[at]);
        int port = atoi(seen[step]);
        ck_assert_msg(port >= 20000 && port <= 20009, "step %u: port %d outside 20000-20009", step, port);
        for (uint32_t s = 0; s < step; s++)
            ck_assert_msg(strcmp(seen[s], seen[step]) != 0, "steps %u and %u share port %s", s, step, seen[s]);
        plan_view_free(&v);
        db_node_plan_free(np);
    }
    free_env(senv);
    free_env(tenv);
    free_env(argv);
}
END_TEST

/* Errors every task of the node would report alike come back as
 * DB_ERR_NODE, so the glue reports them once per node; others as -1. */
START_TEST(node_wide_errors) {
    static const struct {
        const char *step_env, *task_env;
        int want;
    } cases[] = {
        {CG_N1, CG_TASK("0", "0"), DB_ERR_NODE}, /* confined */
        {"SLURM_STEP_NODELIST=node1|SLURM_STEP_TASKS_PER_NODE=2" GPUS("0,1,2"), TASK("1,2"), DB_ERR_NODE}, /* k */
        {SEED_N1, TASK("0,x"), -1}, /* one task's list */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char err[DB_ERRLEN], **senv = make_env(cases[c].step_env), **tenv = make_env(cases[c].task_env);
        db_config cfg;
        db_request eff = {DB_MODE_RANK, 0, 0, 0};
        db_node_plan *np = NULL;
        db_task_plan *tp = NULL;
        int nt = c == 1 ? 2 : 5, local = c == 1 ? 2 : 3;
        ck_assert(db_config_parse(0, NULL, &cfg, err, sizeof err) == 0);
        db_node_input ni = {7, 0, c == 1 ? 1 : 2, 0, (uint32_t)nt, (uint32_t)local, (const char *const *)senv, 0, 0,
                            0, 0, NULL,           0};
        db_task_input ti = {1, 1, (const char *const *)tenv};
        ck_assert_msg(db_node_plan_new(&cfg, &eff, &ni, &np, err, sizeof err) == 0, "case %zu: %s", c, err);
        int rc = db_task_plan_new(np, &ti, &tp, err, sizeof err);
        ck_assert_msg(rc == cases[c].want, "case %zu: rc %d, want %d (%s)", c, rc, cases[c].want, err);
        ck_assert(tp == NULL);
        db_node_plan_free(np);
        free_env(senv);
        free_env(tenv);
    }
}
END_TEST

/* Rank 1 (local 1) on node1 of the seed layout, step 7.`step`, mode rank:
 * the node's plan and what it and the task plan write. */
static void seed_task1_view(uint32_t step, char **senv, char **tenv, db_node_plan **np, struct plan_view *v) {
    char err[DB_ERRLEN] = "";
    db_config cfg;
    db_request eff = {DB_MODE_RANK, 0, 0, 0};
    ck_assert(db_config_parse(0, NULL, &cfg, err, sizeof err) == 0);
    db_node_input ni = {7, step, 2, 0, 5, 3, (const char *const *)senv, 0, 0, 0, 0, NULL, 0};
    ck_assert_msg(db_node_plan_new(&cfg, &eff, &ni, np, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(plan_view_new(*np, senv, tenv, 1, 1, v, err, sizeof err) == 0, "%s", err);
}

/* A nested step (srun --dist-bind inside a task of another): the enclosing
 * step's record is replaced by this step's, never unset after it (the
 * record is how a launcher's re-ranked workers are told apart). */
START_TEST(nested_record) {
#define ENCLOSING "|DIST_BIND_STEP=7.0|DIST_BIND_SET=0,0,1;RANK:340ca71c|APPTAINERENV_DIST_BIND_SET=0,0,1;"
    char err[DB_ERRLEN] = "", out[512], **senv = make_env(SEED_N1 ENCLOSING), **tenv = make_env(TASK("1") ENCLOSING);
#undef ENCLOSING
    db_node_plan *np = NULL;
    struct plan_view v;
    seed_task1_view(1, senv, tenv, &np, &v);
    char **final = plan_view_final(&v);
    static const char *const records[] = {"DIST_BIND_SET", "APPTAINERENV_DIST_BIND_SET"};
    for (size_t i = 0; i < sizeof records / sizeof *records; i++) {
        const char *rec = pv_get(final, records[i]);
        ck_assert_msg(rec && strncmp(rec, "1,1,5;", 6) == 0, "%s at exec: %s", records[i], rec ? rec : "(unset)");
    }
    ck_assert(db_set_record_mismatches(pv_get(final, "DIST_BIND_SET"), (const char *const *) final, out, sizeof out,
                                       err, sizeof err) == 0);
    ck_assert_msg(strcmp(out, "") == 0, "the record disagrees on %s", out);
    free_env(final);
    plan_view_free(&v);
    db_node_plan_free(np);
    free_env(senv);
    free_env(tenv);
}
END_TEST

/* DIST_BIND_SET: the program's environment as the task plan left it
 * matches the record; a variable changed or dropped after it is named. */
START_TEST(set_record) {
    char err[DB_ERRLEN] = "", out[512], **senv = make_env(SEED_N1), **tenv = make_env(TASK("1"));
    db_node_plan *np = NULL;
    struct plan_view v;
    seed_task1_view(0, senv, tenv, &np, &v);
    /* The program's environment: what the node and the task plan set (and
     * nothing they unset). */
    const char *env[128] = {NULL}, *record = NULL;
    char buf[128][256];
    size_t n = 0;
    for (size_t i = 0; i < v.n && n < 120; i++) {
        if (!v.values[i]) continue;
        snprintf(buf[n], sizeof buf[n], "%s=%s", v.names[i], v.values[i]);
        if (strcmp(v.names[i], "DIST_BIND_SET") == 0) record = v.values[i];
        env[n] = buf[n];
        n++;
    }
    ck_assert_msg(record != NULL, "the task plan sets DIST_BIND_SET");
    /* ... which covers the node's variables too. */
    ck_assert_msg(strstr(record, "WORLD_SIZE:") && strstr(record, "MASTER_PORT:") && strstr(record, "RANK:"),
                  "the record names the node's and the task's: %s", record);
    ck_assert(db_set_record_mismatches(record, env, out, sizeof out, err, sizeof err) == 0);
    ck_assert_msg(strcmp(out, "") == 0, "nothing changed, got \"%s\"", out);
    /* An image's LOCAL_RANK and MASTER_PORT copied over the task's after dist-bind. */
    for (size_t i = 0; i < n; i++) {
        if (strncmp(buf[i], "LOCAL_RANK=", 11) == 0) snprintf(buf[i], sizeof buf[i], "LOCAL_RANK=0");
        if (strncmp(buf[i], "MASTER_PORT=", 12) == 0) snprintf(buf[i], sizeof buf[i], "MASTER_PORT=61234");
        if (strncmp(buf[i], "DIST_BIND_DEVICE=", 17) == 0) env[i] = "UNRELATED=1"; /* dropped */
    }
    ck_assert(db_set_record_mismatches(record, env, out, sizeof out, err, sizeof err) == 0);
    ck_assert_msg(strcmp(out, "LOCAL_RANK,MASTER_PORT,DIST_BIND_DEVICE") == 0, "got \"%s\"", out);
    /* Names only, in the record's order; a malformed record is one error. */
    ck_assert(db_set_record_mismatches("1,1,5;RANK=1", env, out, sizeof out, err, sizeof err) == -1);
    assert_contains_all("malformed record", err, "DIST_BIND_SET=\"1,1,5;RANK=1\"&is not NAME:HASH");
    /* ... and so is one without its place, or a place outside its world. */
    static const char *const no_place[] = {
        "RANK:deadbeef", "1,1;RANK:deadbeef", "5,0,5;RANK:deadbeef", "1,x,5;RANK:deadbeef", "0,0,0;", "1,1,5"};
    for (size_t i = 0; i < sizeof no_place / sizeof *no_place; i++) {
        ck_assert(db_set_record_mismatches(no_place[i], env, out, sizeof out, err, sizeof err) == -1);
        assert_contains_all(no_place[i], err, "DIST_BIND_SET=\"&expected RANK,LOCAL_RANK,WORLD_SIZE;NAME:HASH");
    }
    ck_assert_msg(strncmp(record, "1,1,5;", 6) == 0, "the record opens with the place: %s", record);
    ck_assert(db_set_record_mismatches(NULL, env, out, sizeof out, err, sizeof err) == 0 && out[0] == '\0');
    plan_view_free(&v);
    db_node_plan_free(np);
    free_env(senv);
    free_env(tenv);
}
END_TEST

int main(void) {
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("rows");
    tcase_add_loop_test(tc, plan_row, 0, (int)(sizeof rows / sizeof rows[0]));
    tcase_add_loop_test(tc, hoisted, 0, (int)(sizeof hoist_rows / sizeof hoist_rows[0]));
    tcase_add_test(tc, hashed_ports);
    tcase_add_test(tc, node_wide_errors);
    tcase_add_test(tc, set_record);
    tcase_add_test(tc, nested_record);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
