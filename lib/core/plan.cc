#include "plan.hh"

#include <algorithm>

#include "options.hh"
#include "text.hh"

namespace db {

namespace {


// The GPU lists Slurm sets for a task; the first one present is primary.
constexpr const char *kGpuVars[] = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                    "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK"};

// What dist-bind sets in a task; with DB_STEP_MARK naming another step,
// these came from an enclosing step and are dropped where not set anew.
constexpr const char *kOwnVars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK",
                                    "GROUP_RANK", "GROUP_WORLD_SIZE", "DIST_BIND_MODE", "DIST_BIND_DEVICE",
                                    "DIST_BIND_GPUS", "DIST_BIND_NUMA", "DIST_BIND_NICS", DB_STEP_MARK,
                                    DB_MASTER_MARK};

std::string step_name(uint32_t job, uint32_t step) {
    return std::to_string(job) + "." + std::to_string(step);
}

void check_counts(const db_node_input &in) {
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
    if (const char *tpn = env_get(in.env, "SLURM_STEP_TASKS_PER_NODE")) {
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
    }
}

// MASTER_ADDR/MASTER_PORT as dist-bind set them for an enclosing step
// ("ADDR:PORT" in DB_MASTER_MARK), or empty.
std::pair<std::string, std::string> inherited_master(const char *const *env) {
    const char *mark = env_get(env, DB_MASTER_MARK);
    if (!mark) return {};
    std::string m(mark);
    size_t colon = m.rfind(':');
    if (colon == std::string::npos) return {};
    return {m.substr(0, colon), m.substr(colon + 1)};
}

// The user's own value: set, and not what dist-bind set for an enclosing step.
const char *users(const char *const *env, const char *name, const std::string &inherited) {
    const char *v = env_get(env, name);
    if (!v || !*v || (!inherited.empty() && inherited == v)) return nullptr;
    return v;
}

void plan_master(const db_config &cfg, const db_node_input &in, NodePlan &np) {
    const auto inherited = inherited_master(in.env);
    const char *user_addr = users(in.env, "MASTER_ADDR", inherited.first);
    const char *hint = env_get(in.env, DB_RANK0_HINT);
    if (user_addr) {
        np.master_addr = user_addr;
        np.master_addr_from = "set by user";
    } else if (hint && *hint) {
        np.master_addr = hint;
        np.master_addr_from = "from srun";
    } else {
        const char *dist = env_get(in.env, "SLURM_DISTRIBUTION");
        const char *why = nullptr;
        if (cfg.addr_kind == DB_ADDR_NODEADDR)
            why = "master_addr=addr needs rank 0's NodeAddr";
        else if (distribution_is_arbitrary(dist))
            why = "with --distribution=arbitrary only srun knows rank 0's node";
        if (why)
            throw Error(std::string("MASTER_ADDR: ") + why + ", but srun did not pass " + DB_RANK0_HINT +
                        " (is dist-bind in the plugstack.conf srun reads?)");
        // Every other distribution (block, cyclic, plane) starts on the
        // step's first node.
        const char *nodes = env_get(in.env, "SLURM_STEP_NODELIST");
        if (!nodes) throw Error("SLURM_STEP_NODELIST is not set: cannot tell rank 0's node for MASTER_ADDR");
        np.master_addr = format_master_addr(cfg, hostlist_nth(nodes, 0), nullptr);
        np.master_addr_from = "first node of the step";
    }

    const char *user_port = users(in.env, "MASTER_PORT", inherited.second);
    const char *resv = env_get(in.env, "SLURM_STEP_RESV_PORTS");
    if (user_port) {
        uint64_t p;
        if (!parse_uint(user_port, 65535, p) || p == 0)
            throw Error(quoted("MASTER_PORT", user_port) + " (set before srun): expected a port 1..65535");
        np.master_port = user_port;
        np.master_port_from = "set by user";
    } else if (np.req.port) {
        np.master_port = std::to_string(np.req.port);
        np.master_port_from = "port=";
    } else if (resv && *resv) {
        np.master_port = std::to_string(first_port(resv, "SLURM_STEP_RESV_PORTS"));
        np.master_port_from = "reserved port";
    } else {
        np.master_port = std::to_string(hashed_port(cfg, in.job_id, in.step_id));
        np.master_port_from = "hashed";
    }
    if (user_port && np.req.port && std::to_string(np.req.port) != user_port)
        np.notes.push_back("MASTER_PORT set by user wins over port=" + std::to_string(np.req.port));
}

void plan_gpus(const db_node_input &in, NodePlan &np) {
    // Slurm names the step's GPUs in SLURM_STEP_GPUS whenever it allocated
    // some; without it, any GPU list here is the user's, not Slurm's.
    if (!env_get(in.env, "SLURM_STEP_GPUS")) return;
    for (const char *name : kGpuVars) {
        const char *v = env_get(in.env, name);
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
        } catch (const Error &) {
        }
        np.notes.push_back(quoted(name, v) + " does not match " + np.gpus[0].name + ": left alone");
    }
    if (np.gpus.empty()) return;
    const size_t n = np.gpus[0].step.size();
    const int m = np.req.mode;
    const bool picks = m == DB_MODE_RANK || m == DB_MODE_CLOSEST || m == DB_MODE_ISOLATE;
    if (picks && !np.req.share && in.local_ntasks > n)
        throw Error("node " + np.host + " runs " + std::to_string(in.local_ntasks) + " tasks of step " +
                    step_name(in.job_id, in.step_id) + " but has only " + std::to_string(n) +
                    " GPUs of the step (" + np.gpus[0].name + "=" + join(np.gpus[0].step) +
                    "): add \"share\" (--dist-bind=" + db_mode_name(m) +
                    ",share) to share GPUs round-robin, or request a GPU per task (--gpus-per-task=1)");
}

// Position of each of `own` in `step`.
std::vector<size_t> positions(const std::vector<std::string> &step, const std::vector<std::string> &own) {
    std::vector<size_t> pos;
    for (const std::string &g : own)
        pos.push_back(static_cast<size_t>(std::find(step.begin(), step.end(), g) - step.begin()));
    return pos;
}

std::string pick(const std::vector<std::string> &list, const std::vector<size_t> &idx) {
    std::string out;
    for (size_t i = 0; i < idx.size(); i++) {
        if (i) out += ',';
        out += list[idx[i]];
    }
    return out;
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
    // The SPANK items of a heterogeneous step describe one component, while
    // ranks span all of them.
    if (const char *het = env_get(in.env, "SLURM_HET_SIZE"))
        throw Error("heterogeneous steps (srun A : B, SLURM_HET_SIZE=" + std::string(het) +
                    ") are not supported: run each component as its own step, or without --dist-bind");
    check_counts(in);
    const char *nodes = env_get(in.env, "SLURM_STEP_NODELIST");
    if (nodes) np.node_name = hostlist_nth(nodes, in.node_id);
    np.host = nodes ? np.node_name : "#" + std::to_string(in.node_id);
    plan_master(cfg, in, np);
    plan_gpus(in, np);
    np.active = true;
    return np;
}

// Did an enclosing step's dist-bind set this task's variables?
bool inherited_step(const NodePlan &np, const char *const *env) {
    const char *mark = env_get(env, DB_STEP_MARK);
    return mark && step_name(np.job_id, np.step_id) != mark;
}

// Unset what an enclosing step's dist-bind set and this plan does not set.
void drop_inherited(const NodePlan &np, const db_task_input &in, TaskPlan &tp) {
    if (!inherited_step(np, in.env)) return;
    auto is_set = [&](const std::string &name) {
        for (const auto &kv : tp.set)
            if (kv.first == name) return true;
        return false;
    };
    const auto master = inherited_master(in.env);
    for (const char *name : kOwnVars)
        if (env_get(in.env, name) && !is_set(name)) tp.unset.emplace_back(name);
    const std::pair<const char *, const std::string *> ours[] = {{"MASTER_ADDR", &master.first},
                                                                  {"MASTER_PORT", &master.second}};
    for (const auto &o : ours) {
        const char *v = env_get(in.env, o.first);
        if (v && !o.second->empty() && *o.second == v && !is_set(o.first)) tp.unset.emplace_back(o.first);
    }
}

TaskPlan plan_task(const NodePlan &np, const db_task_input &in) {
    TaskPlan tp;
    if (!np.active) {
        if (np.clean_inherited) drop_inherited(np, in, tp);
        return tp;
    }
    if (in.local_rank >= np.local_ntasks || in.global_rank >= np.ntasks)
        throw Error("task " + std::to_string(in.global_rank) + " (local " + std::to_string(in.local_rank) +
                    ") is outside step " + step_name(np.job_id, np.step_id) + " of " + std::to_string(np.ntasks) +
                    " tasks, " + std::to_string(np.local_ntasks) + " on this node");
    auto set = [&](const char *name, std::string value) { tp.set.emplace_back(name, std::move(value)); };
    const std::string mode = db_mode_name(np.req.mode);

    set("RANK", std::to_string(in.global_rank));
    set("WORLD_SIZE", std::to_string(np.ntasks));
    set("LOCAL_RANK", std::to_string(in.local_rank));
    set("LOCAL_WORLD_SIZE", std::to_string(np.local_ntasks));
    set("NODE_RANK", std::to_string(np.node_id));
    set("GROUP_RANK", std::to_string(np.node_id));
    set("GROUP_WORLD_SIZE", std::to_string(np.nnodes));
    set("MASTER_ADDR", np.master_addr);
    set("MASTER_PORT", np.master_port);
    set("DIST_BIND_MODE", mode);
    set(DB_STEP_MARK, step_name(np.job_id, np.step_id));
    set(DB_MASTER_MARK, np.master_addr + ":" + np.master_port);
    if (env_get(in.env, DB_RANK0_HINT)) tp.unset.emplace_back(DB_RANK0_HINT);

    std::vector<std::string> notes = np.notes;
    if (np.req.mode == DB_MODE_CLOSEST && !np.gpus.empty()) {
        if (np.closest.chosen)
            notes.push_back("closest: " + np.closest.source);
        else
            notes.push_back("closest: no topology information for these GPUs" +
                            (np.closest.fallback.empty() ? std::string() : " (" + np.closest.fallback + ")") +
                            ", choosing as rank");
    }
    std::string gpus_shown = "none", visible_shown = "unset", device_shown = "none";
    const char *task_list = np.gpus.empty() ? nullptr : env_get(in.env, np.gpus[0].name.c_str());
    if (!np.gpus.empty() && !task_list)
        notes.push_back("Slurm set no " + np.gpus[0].name + " for this task: GPU variables left alone");
    if (task_list) {
        const std::vector<std::string> &step = np.gpus[0].step;
        const size_t n = step.size();
        const std::vector<std::string> mine = parse_gpu_list(task_list, np.gpus[0].name);
        for (const std::string &g : mine)
            if (std::find(step.begin(), step.end(), g) == step.end())
                throw Error(quoted(np.gpus[0].name, task_list) + ": GPU " + g +
                            " is not one of the step's GPUs on node " + np.host + " (" + join(step) + ")");

        // The task's own GPUs: in closest mode the node's topology choice;
        // else what Slurm bound it to, else the local_rank-th of the step's
        // GPUs (a node's only task owns them all).
        std::vector<size_t> own;
        const bool bound = mine != step || np.local_ntasks == 1;
        const ClosestTask *near = np.req.mode == DB_MODE_CLOSEST && np.closest.chosen
                                      ? &np.closest.tasks[in.local_rank]
                                      : nullptr;
        // The topology choice was made for k GPUs per task before the tasks
        // existed; where Slurm bound this task to another number, rank's
        // rule keeps the promise instead.
        if (near && mine != step && near->gpus.size() != mine.size()) {
            notes.push_back("closest: Slurm gave this task " + std::to_string(mine.size()) +
                            " GPUs, the topology choice has " + std::to_string(near->gpus.size()) +
                            ", choosing as rank");
            near = nullptr;
        }
        if (near) {
            own = near->gpus;
        } else if (bound) {
            own = positions(step, mine);
        } else {
            own.push_back(in.local_rank % n);
        }
        const size_t k = own.size();
        const bool overflow = static_cast<uint64_t>(np.local_ntasks) * k > n;
        const int m = np.req.mode;
        if (overflow && !np.req.share && m != DB_MODE_ENV)
            throw Error("node " + np.host + " runs " + std::to_string(np.local_ntasks) + " tasks of step " +
                        step_name(np.job_id, np.step_id) + " with " + std::to_string(k) + " GPUs each but has only " +
                        std::to_string(n) + " GPUs of the step (" + np.gpus[0].name + "=" + join(step) +
                        "): add \"share\" (--dist-bind=" + mode + ",share) to share GPUs round-robin");

        // The visible list, as positions in the step's list, and the device
        // ordinal of the task's first GPU in it.
        std::vector<size_t> visible;
        size_t device = 0;
        if (m == DB_MODE_ENV) {
            visible = positions(step, mine);
            device = static_cast<size_t>(std::find(visible.begin(), visible.end(), own[0]) - visible.begin());
        } else if (m == DB_MODE_ISOLATE) {
            visible = own;
            device = 0;
        } else if (overflow) {
            // Shared round-robin: everyone sees the step's list as Slurm
            // ordered it; DIST_BIND_DEVICE says which device is this task's.
            for (size_t i = 0; i < n; i++) visible.push_back(i);
            device = own[0];
            notes.push_back("share: " + std::to_string(np.local_ntasks) + " tasks on " + std::to_string(n) +
                            " GPUs, device " + std::to_string(device) + " is this task's");
        } else {
            // rank/closest: own GPUs at LOCAL_RANK*k, the rest in Slurm's order.
            device = static_cast<size_t>(in.local_rank) * k;
            std::vector<bool> taken(n, false);
            for (size_t p : own) taken[p] = true;
            size_t next = 0;
            for (size_t slot = 0; slot < n; slot++) {
                if (slot >= device && slot < device + k) {
                    visible.push_back(own[slot - device]);
                } else {
                    while (taken[next]) next++;
                    visible.push_back(next++);
                }
            }
        }

        if (m != DB_MODE_ENV) {
            for (const GpuVar &g : np.gpus)
                if (env_get(in.env, g.name.c_str())) set(g.name.c_str(), pick(g.step, visible));
        }
        set("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        set("DIST_BIND_DEVICE", std::to_string(device));
        set("DIST_BIND_GPUS", pick(step, own));
        if (near) {
            // Where the task sits; a value the user exported wins.
            const bool ours = inherited_step(np, in.env);
            auto where = [&](const char *name, const std::string &value) {
                if (value.empty()) return;
                if (env_get(in.env, name) && !ours)
                    notes.push_back(std::string(name) + " set by user wins over " + value);
                else
                    set(name, value);
            };
            where("DIST_BIND_NUMA", near->numa >= 0 ? std::to_string(near->numa) : std::string());
            where("DIST_BIND_NICS", near->nics);
        }
        gpus_shown = pick(step, own);
        visible_shown = m == DB_MODE_ENV ? std::string(task_list) : pick(step, visible);
        device_shown = std::to_string(device);
    }

    drop_inherited(np, in, tp);

    if (np.req.verbose) {
        tp.verbose = "dist-bind: rank=" + std::to_string(in.global_rank) + "/" + std::to_string(np.ntasks) +
                     " host=" + np.host + " local_rank=" + std::to_string(in.local_rank) + "/" +
                     std::to_string(np.local_ntasks) + " gpus=" + gpus_shown + " visible=" + visible_shown +
                     " device=" + device_shown + " mode=" + mode + " master=" + np.master_addr + ":" +
                     np.master_port + " (addr " + np.master_addr_from + ", port " + np.master_port_from + ")";
        for (const std::string &n : notes) tp.verbose += "; " + n;
    }
    return tp;
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
