// Heterogeneous steps (srun A : B, and steps of het jobs): one step for the
// user, one world of ranks, but slurmstepd runs each component as a step of
// its own.  Measured on 22.05 and 26.05: the SPANK items of a component
// (S_JOB_ID, S_JOB_NNODES, S_JOB_NODEID, S_JOB_TOTAL_TASK_COUNT,
// S_TASK_GLOBAL_ID, S_JOB_LOCAL_TO_GLOBAL_ID) count that component only,
// from 0, and its own job id in a het job; the step's environment describes
// the whole step (SLURM_STEP_NUM_TASKS, SLURM_STEP_NUM_NODES,
// SLURM_STEP_TASKS_PER_NODE, SLURM_JOB_ID = the het job's leader), and each
// task's environment its place in it (SLURM_PROCID, SLURM_NODEID,
// SLURM_GTIDS, in Slurm's global order: the components one after another).
// SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE are in sorted node
// order, while SLURM_NODEID counts the components' nodes one after another.
// Slurm gives each component nodes of its own (22.05 refuses to place two
// components on one node).  srun's spank callback runs once per step, and
// what it exports reaches one component only.
#include <algorithm>

#include "options.hh"
#include "plan.hh"
#include "text.hh"

namespace db {

namespace {

uint32_t env_count(const EnvIndex &env, const char *name, uint64_t max, bool zero_ok) {
    const char *v = env.get(name);
    if (!v) throw Error(std::string("heterogeneous step: Slurm set no ") + name);
    uint64_t n;
    if (!parse_uint(v, max, n) || (!zero_ok && n == 0)) throw Error(quoted(name, v) + ": expected a count");
    return static_cast<uint32_t>(n);
}

}  // namespace

bool het_step(const db_node_input &in, const EnvIndex &env) {
    // Every component has at least one task, so the step has more than any
    // one of them.  (SLURM_HET_SIZE is not a test: a step inside a
    // homogeneous allocation has none, and a het job's step may run in one
    // component only.)
    const char *n = env.get("SLURM_STEP_NUM_TASKS");
    uint64_t v;
    return n && parse_uint(n, UINT32_MAX, v) && v != in.ntasks;
}

void plan_het_node(const db_node_input &in, const EnvIndex &env, NodePlan &np) {
    np.het = true;
    const std::string comp = "heterogeneous step " + step_name(in.job_id, in.step_id);
    np.ntasks = env_count(env, "SLURM_STEP_NUM_TASKS", UINT32_MAX, false);
    np.nnodes = env_count(env, "SLURM_STEP_NUM_NODES", UINT32_MAX, false);
    // One job id for every component: the leader's (SLURM_JOB_ID), which
    // also names the step in DIST_BIND_STEP and hashes MASTER_PORT.
    np.job_id = env_count(env, "SLURM_JOB_ID", UINT32_MAX, false);
    if (in.ntasks == 0 || in.local_ntasks == 0 || in.local_ntasks > in.ntasks)
        throw Error("inconsistent " + comp + ": " + std::to_string(in.local_ntasks) + " tasks on this node of " +
                    std::to_string(in.ntasks) + " in its component");
    if (in.ntasks > np.ntasks || in.nnodes > np.nnodes)
        throw Error("inconsistent " + comp + ": its component has " + std::to_string(in.ntasks) + " tasks on " +
                    std::to_string(in.nnodes) + " nodes, the step " + std::to_string(np.ntasks) + " on " +
                    std::to_string(np.nnodes));
    if (const char *tpn = env.get("SLURM_STEP_TASKS_PER_NODE")) {
        std::vector<uint32_t> counts = parse_tasks_per_node(tpn, "SLURM_STEP_TASKS_PER_NODE", np.nnodes,
                                                            "the step has " + std::to_string(np.nnodes));
        uint64_t sum = 0;
        for (uint32_t c : counts) sum += c;
        if (counts.size() != np.nnodes || sum != np.ntasks)
            throw Error(quoted("SLURM_STEP_TASKS_PER_NODE", tpn) + ": " + std::to_string(sum) + " tasks on " +
                        std::to_string(counts.size()) + " nodes, but the step has " + std::to_string(np.ntasks) +
                        " on " + std::to_string(np.nnodes));
    }
    if (const char *name = env.get("SLURMD_NODENAME")) np.node_name = name;
    np.host = np.node_name.empty() ? "#" + std::to_string(in.node_id) : np.node_name;
}

// Rank 0 runs in the first component, on the first node of its step, which
// is the first node of that component's job where the step uses all of
// them (srun A : B without an allocation; a het job's step by default).
// srun's DIST_BIND_RANK0_ADDR is of no help: srun hands it to one component
// only.  Rank 0's own task checks the guess (het_task_view).
void het_master_addr(const db_config &cfg, const EnvIndex &env, NodePlan &np) {
    const char *nodes = env.get("SLURM_JOB_NODELIST_HET_GROUP_0");
    const char *name = "SLURM_JOB_NODELIST_HET_GROUP_0";
    if (!nodes) {
        nodes = env.get("SLURM_JOB_NODELIST_PACK_GROUP_0");
        name = "SLURM_JOB_NODELIST_PACK_GROUP_0";
    }
    if (cfg.addr_kind == DB_ADDR_NODEADDR)
        throw Error(
            "MASTER_ADDR: master_addr=addr needs rank 0's NodeAddr, which only srun knows, and srun hands it "
            "to one component of a heterogeneous step only: export MASTER_ADDR before srun");
    if (!nodes)
        throw Error("heterogeneous step " + step_name(np.job_id, np.step_id) +
                    " inside a homogeneous allocation: no SLURM_JOB_NODELIST_HET_GROUP_0 tells its first "
                    "component's nodes, so rank 0's node is unknown. Start it as a heterogeneous job (srun A : B "
                    "outside an allocation, or salloc/sbatch A : B), or export MASTER_ADDR before srun");
    np.het_rank0_node = hostlist_nth(nodes, 0);
    np.master_addr = format_master_addr(cfg, np.het_rank0_node, nullptr);
    np.master_addr_from = std::string("first node of the first component (") + name + ")";
}

int het_component(const db_node_input &in, const EnvIndex &env) {
    // SLURM_JOB_ID_HET_GROUP_<i> (PACK_GROUP before 20.11, still set) is
    // component i's job id; a node's S_JOB_ID is its own component's.
    for (int i = 0; i < 1024; i++) {
        const char *id = nullptr;
        for (const char *kind : {"HET", "PACK"})
            if (!id) id = env.get("SLURM_JOB_ID_" + std::string(kind) + "_GROUP_" + std::to_string(i));
        if (!id) return -1;
        if (id == std::to_string(in.job_id)) return i;
    }
    return -1;
}

NodePlan het_task_view(const NodePlan &np, TaskEnv &task) {
    NodePlan v = np;
    const std::string step = step_name(np.job_id, np.step_id);
    uint32_t &global_rank = task.global_rank;
    global_rank = env_count(task.env, "SLURM_PROCID", np.ntasks ? np.ntasks - 1 : 0, true);
    v.node_id = env_count(task.env, "SLURM_NODEID", np.nnodes ? np.nnodes - 1 : 0, true);
    if (const char *name = task.env.get("SLURMD_NODENAME")) v.node_name = name;
    v.host = v.node_name.empty() ? "#" + std::to_string(v.node_id) : v.node_name;

    if (global_rank == 0 && !np.het_rank0_node.empty() && !v.node_name.empty() && v.node_name != np.het_rank0_node)
        throw Error("rank 0 of heterogeneous step " + step + " runs on " + v.node_name + ", not on " +
                    np.het_rank0_node +
                    ", the first node of the first component's allocation, which every "
                    "component took for MASTER_ADDR: export MASTER_ADDR before srun, or let the first "
                    "component's step use all of its nodes");
    const char *gtids = task.env.get("SLURM_GTIDS");
    if (!gtids) throw Error("heterogeneous step " + step + ": Slurm set no SLURM_GTIDS");
    uint32_t lowest = UINT32_MAX;
    bool mine = false;
    for (std::string_view g : split(gtids, ',')) {
        uint64_t r;
        if (!parse_uint(g, np.ntasks ? np.ntasks - 1 : 0, r))
            throw Error(quoted("SLURM_GTIDS", gtids) + ": expected the node's ranks below " +
                        std::to_string(np.ntasks));
        lowest = std::min(lowest, static_cast<uint32_t>(r));
        mine = mine || r == global_rank;
    }
    if (!mine)
        throw Error(quoted("SLURM_GTIDS", gtids) + " does not hold this task's SLURM_PROCID " +
                    std::to_string(global_rank));

    // NODE_RANK: SLURM_NODEID (srun's DIST_BIND_NODE_RANKS reaches one
    // component only), right wherever each node's lowest rank orders the
    // nodes as Slurm does: not so with -m arbitrary.
    v.node_rank.rank = v.node_id;
    v.node_rank.from = "Slurm's node index (SLURM_NODEID)";
    if ((lowest == 0) != (v.node_id == 0))
        throw NodeError("node " + v.host + " is node " + std::to_string(v.node_id) + " of heterogeneous step " + step +
                        " but its lowest rank is " + std::to_string(lowest) +
                        ": NODE_RANK would not start at rank 0's node (is --distribution=arbitrary in use?)");
    return v;
}

}  // namespace db
