// The node's share of the plan (slurmstepd, user_init): checks of the
// step's counts, MASTER_ADDR/MASTER_PORT, the step's GPU lists on this node
// and how Slurm numbers them, closest's choice.
#include <algorithm>
#include <cstring>

#include "distbind_version.h"
#include "options.hh"
#include "plan.hh"
#include "text.hh"

namespace db {

std::string step_name(uint32_t job, uint32_t step) { return std::to_string(job) + "." + std::to_string(step); }

std::pair<std::string, std::string> inherited_master(const char *mark) {
    if (!mark) return {};
    std::string m(mark);
    size_t colon = m.rfind(':');
    if (colon == std::string::npos) return {};
    return {m.substr(0, colon), m.substr(colon + 1)};
}

namespace {

// The GPU lists Slurm sets for a task; the first one present is primary.
constexpr const char *kGpuVars[] = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
                                    "ZE_AFFINITY_MASK"};

// The step's task counts per node in Slurm's node order, checked against
// the items (empty where Slurm set no SLURM_STEP_TASKS_PER_NODE).
std::vector<uint32_t> check_counts(const db_node_input &in, const EnvIndex &env) {
    auto bad = [&](const std::string &what) {
        throw Error("inconsistent step " + step_name(in.job_id, in.step_id) + ": " + what);
    };
    if (in.nnodes == 0) bad("0 nodes");
    if (in.ntasks == 0) bad("0 tasks");
    if (in.local_ntasks == 0) bad("0 tasks on this node");
    if (in.node_id >= in.nnodes)
        bad("node index " + std::to_string(in.node_id) + " >= node count " + std::to_string(in.nnodes));
    if (in.local_ntasks > in.ntasks)
        bad(std::to_string(in.local_ntasks) + " tasks on this node > " + std::to_string(in.ntasks) + " in the step");

    // Slurm's own summary must agree with the items.
    const char *tpn = env.get("SLURM_STEP_TASKS_PER_NODE");
    if (!tpn) return {};
    {
        std::vector<uint32_t> counts = parse_tasks_per_node(tpn, "SLURM_STEP_TASKS_PER_NODE", in.nnodes,
                                                            "the step has " + std::to_string(in.nnodes));
        uint64_t sum = 0;
        for (uint32_t c : counts) sum += c;
        const std::string what = quoted("SLURM_STEP_TASKS_PER_NODE", tpn);
        if (counts.size() != in.nnodes)
            throw Error(what + ": " + std::to_string(counts.size()) + " nodes, but the step has " +
                        std::to_string(in.nnodes));
        if (sum != in.ntasks)
            throw Error(what + ": " + std::to_string(sum) + " tasks, but the step has " + std::to_string(in.ntasks));
        if (counts[in.node_id] != in.local_ntasks)
            throw Error(what + ": " + std::to_string(counts[in.node_id]) + " tasks on node " +
                        std::to_string(in.node_id) + ", but it runs " + std::to_string(in.local_ntasks));
        return counts;
    }
}

// The lowest rank node `id` runs where Slurm lays the step out in its node
// order (slurm_step_layout.c): block, the default, fills the nodes one
// after another; cyclic deals the first task of every node first; plane
// deals up to its size to each node in turn.  -1 where the distribution
// does not say (arbitrary, or a word this code does not know).
int64_t node_order_lowest(const db_node_input &in, const EnvIndex &env, const std::vector<uint32_t> &counts) {
    const char *dist = env.get("SLURM_DISTRIBUTION");
    std::string_view d = dist ? dist : "";
    d = d.substr(0, d.find_first_of(":,="));
    uint64_t plane = 0;
    if (d == "plane") {
        const char *size = env.get("SLURM_DIST_PLANESIZE");
        if (!size || !parse_uint(size, UINT32_MAX, plane) || plane == 0) return -1;
    } else if (d == "cyclic") {
        return in.node_id;
    } else if (!d.empty() && d != "block" && d != "*") {
        return -1;
    }
    int64_t lowest = 0;
    for (uint32_t i = 0; i < in.node_id && i < counts.size(); i++)
        lowest += plane ? std::min<uint64_t>(plane, counts[i]) : counts[i];
    return lowest;
}

// The user's own value: set, and not what dist-bind set for an enclosing step.
const char *users(const EnvIndex &env, const char *name, const std::string &inherited) {
    const char *v = env.get(name);
    if (!v || !*v || (!inherited.empty() && inherited == v)) return nullptr;
    return v;
}

// srun's dist-bind release, as srun announced it, where it is not this
// node's; nullptr where srun said none or the same.
const char *other_srun_release(const EnvIndex &env) {
    const char *said = srun_word(env, DB_CARRIED(DB_SRUN_VERSION_HINT)).value;
    return said && std::strcmp(said, DISTBIND_VERSION_STRING) != 0 ? said : nullptr;
}

}  // namespace

std::string srun_fix(const EnvIndex &env) {
    const std::string mine = DISTBIND_VERSION_STRING;
    const char *said = srun_word(env, DB_CARRIED(DB_SRUN_VERSION_HINT)).value;
    if (const char *other = other_srun_release(env))
        return std::string("srun's dist-bind is ") + other + ", this node's " + mine +
               ": the login nodes and every node of a step need the same dist-bind (upgrade the older)";
    // srun's devices word (every release sets it for rank, closest and
    // isolate) without its version: a release before 0.2.0.
    if (!said && srun_word(env, DB_CARRIED(DB_DEVICES_HINT)).value)
        return "srun's dist-bind is older than this node's " + mine +
               " (0.1.0 or earlier: it does not say its version): the login nodes and every node of a step need "
               "the same dist-bind (upgrade the package srun loads)";
    return "Load dist-bind in the plugstack.conf srun reads, and do not use srun --async with --dist-bind";
}

namespace {

// NODE_RANK: srun's word from the step's layout; without it Slurm's node
// index, which is right only where rank 0 runs on the step's first node.
// The two nodes that can see it is not (the one running rank 0 and the
// first one) stop the step rather than start it with node ranks that do not
// begin at rank 0's node.
void plan_node_rank(const db_node_input &in, const EnvIndex &env, const std::vector<uint32_t> &counts, NodePlan &np) {
    const std::string step = step_name(in.job_id, in.step_id);
    const std::string lowest =
        in.lowest_rank == 0 ? "rank 0" : "no rank 0 (its lowest is " + std::to_string(in.lowest_rank) + ")";
    if (const SrunWord hint = srun_word(env, DB_CARRIED(DB_NODE_RANKS_HINT)); hint.value) {
        np.node_rank = parse_node_ranks(hint.name, hint.value, in.nnodes, in.node_id);
        if (in.lowest_rank_known && (in.lowest_rank == 0) != (np.node_rank.rank == 0))
            throw Error(quoted(hint.name, hint.value) + " makes node " + np.host + " node rank " +
                        std::to_string(np.node_rank.rank) + " of step " + step + ", but it runs " + lowest +
                        ": the value does not describe this step (was it exported before srun?)");
        return;
    }
    np.node_rank.rank = in.node_id;
    np.node_rank.from = "Slurm's node index: a layout in Slurm's node order";
    if (!in.lowest_rank_known) return;
    const std::string load = ". " + srun_fix(env);
    const std::string fix = std::string(", and srun passed no ") + DB_NODE_RANKS_HINT +
                            ": NODE_RANK would not start at rank 0's node" + load;
    if (in.lowest_rank == 0 && in.node_id != 0)
        throw Error("node " + np.host + " runs rank 0 of step " + step + " but is node " + std::to_string(in.node_id) +
                    " in Slurm's order" + fix);
    if (in.lowest_rank != 0 && in.node_id == 0)
        throw Error("node " + np.host + " is the first node of step " + step + " in Slurm's order but runs " + lowest +
                    fix);
    // Every node checks its own ranks against the layout Slurm's node order
    // gives: where Slurm placed the tasks otherwise (a topology's node
    // ranking srun did not foresee), no node runs with a wrong NODE_RANK.
    const int64_t expected = counts.size() == in.nnodes ? node_order_lowest(in, env, counts) : -1;
    if (expected >= 0 && expected != in.lowest_rank)
        throw Error("node " + np.host + " is node " + std::to_string(in.node_id) + " of step " + step +
                    " in Slurm's order, where its lowest rank would be " + std::to_string(expected) + ", but it runs " +
                    lowest + ": Slurm did not lay the step out in its node order, and srun passed no " +
                    DB_NODE_RANKS_HINT + ", so NODE_RANK cannot be told" + load);
}

void plan_port(const db_config &cfg, const db_node_input &in, const EnvIndex &env, NodePlan &np,
               const std::pair<std::string, std::string> &inherited);

void plan_master(const db_config &cfg, const db_node_input &in, const EnvIndex &env, NodePlan &np) {
    const auto inherited = inherited_master(env.get(DB_MASTER_MARK));
    const char *user_addr = users(env, "MASTER_ADDR", inherited.first);
    // srun's word reaches only one component of a heterogeneous step.
    const char *hint = np.het ? nullptr : srun_word(env, DB_CARRIED(DB_RANK0_HINT)).value;
    if (user_addr) {
        np.master_addr = user_addr;
        np.master_addr_from = "set by user";
    } else if (hint && *hint) {
        np.master_addr = hint;
        np.master_addr_from = "from srun";
    } else if (np.het) {
        het_master_addr(cfg, env, np);
    } else {
        const char *dist = env.get("SLURM_DISTRIBUTION");
        const char *why = nullptr;
        if (cfg.addr_kind == DB_ADDR_NODEADDR)
            why = "master_addr=addr needs rank 0's NodeAddr";
        else if (distribution_is_arbitrary(dist))
            why = "with --distribution=arbitrary only srun knows rank 0's node";
        if (why)
            throw Error(std::string("MASTER_ADDR: ") + why + ", but srun did not pass " + DB_RANK0_HINT + ". " +
                        srun_fix(env));
        // Every other distribution (block, cyclic, plane) starts on the
        // step's first node.
        const char *nodes = env.get("SLURM_STEP_NODELIST");
        if (!nodes) throw Error("SLURM_STEP_NODELIST is not set: cannot tell rank 0's node for MASTER_ADDR");
        np.master_addr = format_master_addr(cfg, hostlist_nth(nodes, 0), nullptr);
        np.master_addr_from = "first node of the step";
    }

    plan_port(cfg, in, env, np, inherited);
}

void plan_port(const db_config &cfg, const db_node_input &in, const EnvIndex &env, NodePlan &np,
               const std::pair<std::string, std::string> &inherited) {
    const char *user_port = users(env, "MASTER_PORT", inherited.second);
    const char *resv = env.get("SLURM_STEP_RESV_PORTS");
    if (user_port) {
        uint64_t p;
        if (!parse_uint(user_port, 65535, p) || p == 0)
            throw Error(quoted("MASTER_PORT", user_port) + " (set before srun): expected a port 1..65535");
        np.master_port = user_port;
        np.master_port_from = "set by user";
    } else if (np.req.port) {
        np.master_port = std::to_string(np.req.port);
        np.master_port_from = "port=";
    } else if (resv && *resv && !np.het) {  // each component reserves its own
        np.master_port = std::to_string(first_port(resv, "SLURM_STEP_RESV_PORTS"));
        np.master_port_from = "reserved port";
    } else {
        np.master_port = std::to_string(hashed_port(cfg, np.job_id, in.step_id));
        np.master_port_from = "hashed";
    }
    if (user_port && np.req.port && std::to_string(np.req.port) != user_port)
        np.notes.push_back("MASTER_PORT set by user wins over port=" + std::to_string(np.req.port));
}

void plan_gpus(const db_node_input &in, const EnvIndex &env, NodePlan &np) {
    // Slurm names the step's GPUs in SLURM_STEP_GPUS whenever it allocated
    // some; without it, any GPU list here is the user's, not Slurm's.
    if (!env.get("SLURM_STEP_GPUS")) return;
    for (const char *name : kGpuVars) {
        const char *v = env.get(name);
        if (!v) continue;
        if (np.gpus.empty()) {
            np.gpus.push_back(GpuVar{name, parse_gpu_list(v, name)});
            continue;
        }
        // A further list Slurm was not told to set (gres.conf Flags=) keeps
        // the user's value: rewrite it only where it matches the first.
        try {
            GpuVar g{name, parse_gpu_list(v, name)};
            if (g.step.size() == np.gpus[0].step.size()) {
                np.gpus.push_back(std::move(g));
                continue;
            }
        } catch (const Error &) {}
        np.notes.push_back(quoted(name, v) + " does not match " + np.gpus[0].name + ": left alone");
    }
    if (np.gpus.empty()) return;
    const size_t n = np.gpus[0].step.size();
    const int m = np.req.mode;
    const bool picks = m == DB_MODE_RANK || m == DB_MODE_CLOSEST || m == DB_MODE_ISOLATE;
    if (picks && !np.req.share && in.local_ntasks > n)
        throw Error("node " + np.host + " runs " + std::to_string(in.local_ntasks) + " tasks of step " +
                    step_name(in.job_id, in.step_id) + " but has only " + std::to_string(n) + " GPUs of the step (" +
                    np.gpus[0].name + "=" + join(np.gpus[0].step) + "): add \"share\" (--dist-bind=" + db_mode_name(m) +
                    ",share) to share GPUs round-robin, or request a GPU per task (--gpus-per-task=1)");
}

// GPUs per task from the step's environment, where srun's word has none:
// SLURM_GPUS_PER_TASK (before 23.11), else the gres/gpu items of
// SLURM_TRES_PER_TASK; several types add up.  0: not asked.
size_t step_gpus_per_task(const EnvIndex &env) {
    uint64_t k = 0;
    if (const char *g = env.get("SLURM_GPUS_PER_TASK")) {
        if (!gpus_per_task_count(g, k))
            throw Error(quoted("SLURM_GPUS_PER_TASK", g) + ": expected a count (N, TYPE:N, or TYPE:N,TYPE:M,...)");
    } else if (const char *t = env.get("SLURM_TRES_PER_TASK")) {
        if (!tres_gpu_count(t, k))
            throw Error(quoted("SLURM_TRES_PER_TASK", t) +
                        ": expected GPU counts as gres/gpu=N or gres/gpu:TYPE=N (or none)");
    }
    return static_cast<size_t>(k);
}

// Does Slurm confine each task it binds to its own GPUs (task/cgroup with
// ConstrainDevices=yes)?  Then it numbers every list inside the cgroup
// ("0" is the first GPU the process can open) and a task it bound per task
// can open only its own GPUs.  Slurm's lists say so where they can: a
// numeric step list that is not 0..n-1 is numbered node-wide, one that
// differs from SLURM_STEP_GPUS (the node's names) is numbered inside the
// cgroup.  Otherwise the node's own configuration decides (the glue reads
// it in slurmstepd), else srun's word.
void plan_devices(const db_node_input &in, const EnvIndex &env, NodePlan &np) {
    if (np.gpus.empty()) return;
    const std::vector<std::string> &step = np.gpus[0].step;
    bool numeric = true, from_zero = true;
    for (size_t i = 0; i < step.size(); i++) {
        uint64_t v;
        if (!parse_uint(step[i], 999999, v)) numeric = false;
        if (step[i] != std::to_string(i)) from_zero = false;
    }
    // Indices may be numbered inside a cgroup; UUIDs name GPUs everywhere.
    np.gpu_names = step;
    const char *names = env.get("SLURM_STEP_GPUS");
    if (names && numeric) {
        try {
            std::vector<std::string> g = parse_gpu_list(names, "SLURM_STEP_GPUS");
            if (g.size() == step.size()) np.gpu_names = std::move(g);
        } catch (const Error &) {}
    }
    Devices seen = Devices::Unknown;
    if (numeric && !from_zero)
        seen = Devices::Open;
    else if (numeric && np.gpu_names != step)
        seen = Devices::Confined;

    const Devices said = read_devices_hint(in, env, np);
    const Devices own = in.node_devices == DB_DEVICES_CONFINED ? Devices::Confined
                        : in.node_devices == DB_DEVICES_OPEN   ? Devices::Open
                                                               : Devices::Unknown;
    if (!np.gpus_per_task) np.gpus_per_task = step_gpus_per_task(env);
    if (seen != Devices::Unknown) {
        np.devices = seen;
        np.devices_from = "from Slurm's GPU lists";
        if (own != Devices::Unknown && own != seen)
            np.notes.push_back("this node's TaskPlugin and cgroup.conf disagree with Slurm's GPU lists here");
        else if (own == Devices::Unknown && said != Devices::Unknown && said != seen)
            np.notes.push_back(std::string("srun's ") + DB_DEVICES_HINT + " disagrees with Slurm's GPU lists here");
    } else if (own != Devices::Unknown) {
        np.devices = own;
        np.devices_from = "from this node's TaskPlugin and cgroup.conf";
    } else if (said != Devices::Unknown) {
        np.devices = said;
        np.devices_from = "from srun's TaskPlugin";
    } else {
        np.devices = Devices::Open;
        np.devices_from = std::string("assumed: srun passed no ") + DB_DEVICES_HINT;
    }
}

}  // namespace

unsigned hashed_port(const db_config &cfg, uint32_t job_id, uint32_t step_id) {
    // splitmix64 finaliser spreads jobs over the range; adding the step id
    // afterwards keeps the steps of one job on consecutive, distinct ports.
    uint64_t x = job_id + 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    const uint64_t span = static_cast<uint64_t>(cfg.port_hi) - cfg.port_lo + 1;
    return static_cast<unsigned>(cfg.port_lo + (x + step_id) % span);
}

NodePlan plan_node(const db_config &cfg, const db_request &eff, const db_node_input &in) {
    NodePlan np;
    np.req = eff;
    np.job_id = in.job_id;
    np.step_id = in.step_id;
    np.nnodes = in.nnodes;
    np.node_id = in.node_id;
    np.ntasks = in.ntasks;
    np.local_ntasks = in.local_ntasks;
    if (in.step_id > DB_MAX_NORMAL_STEP_ID) {
        np.skip_reason = "not a job step started by srun (batch, extern or interactive step)";
        return np;
    }
    if (eff.mode == DB_MODE_OFF || eff.mode == DB_MODE_UNSET) {
        np.skip_reason = "mode off";
        np.clean_inherited = true;
        return np;
    }
    const EnvIndex env(in.env);
    if (const char *other = other_srun_release(env))
        np.notes.push_back(std::string("srun's dist-bind is ") + other + ", this node's " + DISTBIND_VERSION_STRING);
    if (het_step(in, env)) {
        plan_het_node(in, env, np);
    } else {
        const std::vector<uint32_t> counts = check_counts(in, env);
        const char *nodes = env.get("SLURM_STEP_NODELIST");
        if (nodes) np.node_name = hostlist_nth(nodes, in.node_id);
        np.host = nodes ? np.node_name : "#" + std::to_string(in.node_id);
        plan_node_rank(in, env, counts, np);
    }
    plan_master(cfg, in, env, np);
    np.torchrun = torchrun_flags(in.argc, in.argv);
    if (np.torchrun.typed_master && !np.torchrun.rdzv_endpoint)
        np.notes.push_back("torchrun's typed --master-addr/--master-port: PET_RDZV_ENDPOINT=" + torchrun_endpoint(np));
    plan_gpus(in, env, np);
    plan_devices(in, env, np);
    if (const char *bundle = env.get("SLURM_CONTAINER"); bundle && in.container_env_early)
        np.notes.push_back("srun --container=" + std::string(bundle) +
                           ": this Slurm (before 23.02) writes the container's environment before SPANK task_init, "
                           "so none of dist-bind's variables (nor Slurm's per-task ones) reach the program inside "
                           "the container; Slurm 23.02 and later pass them");
    for (const char *name : kContainerWatched)
        if (const char *v = env.get(name)) np.step_values.emplace_back(name, v);
    np.active = true;
    plan_node_env(env, np);
    return np;
}

void set_closest(NodePlan &np, const db_closest_input &c) {
    Closest out;
    if (c.source) out.source = c.source;
    if (c.fallback) {
        out.fallback = c.fallback;
        np.closest = std::move(out);
        return;
    }
    if (np.req.mode != DB_MODE_CLOSEST || !np.active) throw Error("closest: the plan is not in closest mode");
    if (np.gpus.empty()) throw Error("closest: the step has no GPUs on this node");
    const size_t n = np.gpus[0].step.size();
    if (c.ntasks != np.local_ntasks || (c.ntasks && !c.tasks))
        throw Error("closest: a choice for " + std::to_string(c.ntasks) + " tasks, but node " + np.host + " runs " +
                    std::to_string(np.local_ntasks));
    std::vector<bool> used(n, false);
    for (size_t t = 0; t < c.ntasks; t++) {
        const db_closest_task &ct = c.tasks[t];
        if (ct.ngpus == 0 || !ct.gpus || ct.ngpus != c.tasks[0].ngpus)
            throw Error("closest: task " + std::to_string(t) + " got " + std::to_string(ct.ngpus) +
                        " GPUs; every task needs the same number, at least 1");
        ClosestTask task;
        for (size_t i = 0; i < ct.ngpus; i++) {
            const size_t p = ct.gpus[i];
            if (p >= n || used[p])
                throw Error("closest: task " + std::to_string(t) + " got GPU position " + std::to_string(p) +
                            (p >= n ? " of " + std::to_string(n) : " twice"));
            used[p] = true;
            task.gpus.push_back(p);
        }
        task.numa = ct.numa < 0 ? -1 : ct.numa;
        if (ct.nics) task.nics = ct.nics;
        out.tasks.push_back(std::move(task));
    }
    out.chosen = true;
    np.closest = std::move(out);
}

}  // namespace db
