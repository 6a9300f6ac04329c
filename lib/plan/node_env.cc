// What every task of a node gets alike, written once in user_init into the
// step's environment, which slurmstepd copies into each task's before
// task_init (exec_task); and, per task, taking those out of the task's plan.
//
// slurmstepd's spank_setenv costs about 3-7 us a variable (setenvf callocs a
// 256 KiB buffer, then scans the environment), and dist-bind sets some 60;
// more than half are the same in every task of the node.  The task plan
// still decides on the whole list, on the task's environment as it would be
// without user_init's writes (TaskEnv), so that its record (DIST_BIND_SET),
// its verbose line and every decision stay what they were when the task
// wrote everything; a variable the task's environment already holds as the
// plan sets it gets no entry (TaskPlan::put, node_holds_twin), and what the
// task still lists as the node wrote it is dropped (drop_node_writes).  A
// node variable the task's plan does not list after all (a
// guess that did not hold for this task) is put back as the step had it:
// whatever this file decides, a task ends up with the environment it had
// when it wrote everything itself.
#include <algorithm>

#include "plan.hh"
#include "text.hh"

namespace db {

namespace {

constexpr const char *kTwin = "APPTAINERENV_";

class Builder {
  public:
    Builder(const EnvIndex &env, NodeEnv &out) : env_(env), out_(out) {
        // Some 40 variables: no growing (glibc's malloc consolidates its
        // free lists for every request this size).
        out_.text.reserve(4096);
        out_.vars.reserve(64);
    }

    void set(std::string_view name, std::string_view value) { add(name, value, false); }
    void unset(std::string_view name) {
        if (env_.get(name)) add(name, std::string_view(), true);
    }

  private:
    uint32_t text(std::string_view a, std::string_view b = {}, std::string_view c = {}) {
        const size_t at = out_.text.size();
        out_.text.append(a).append(b).append(c).push_back('\0');
        return static_cast<uint32_t>(at);
    }
    void add(std::string_view name, std::string_view value, bool unset) {
        // Left to the tasks: past the bound, or more text than offsets hold.
        if (out_.vars.size() >= kMaxNodeVars || out_.text.size() + 2 * name.size() + 2 * value.size() > UINT32_MAX / 2)
            return;
        NodeVar v;
        const char *before = env_.get(name);
        v.had = before != nullptr;
        v.written = unset ? before != nullptr : !before || value != before;
        v.unset = unset;
        v.name = text(name);
        v.name_len = static_cast<uint32_t>(name.size());
        v.hash = EnvIndex::hash(name);
        v.value = text(value);
        v.value_len = static_cast<uint32_t>(value.size());
        if (before) v.before = text(name, "=", before);
        out_.vars.push_back(v);
    }

    const EnvIndex &env_;
    NodeEnv &out_;
};

// Names no task of this plan sets, which an enclosing step's dist-bind may
// have left (drop_inherited unsets them in every task alike).
bool never_set(const NodePlan &np, std::string_view name) {
    const bool gpus = !np.gpus.empty();
    if (name == "DIST_BIND_DEVICE" || name == "DIST_BIND_GPUS") return !gpus;
    if (name == "DIST_BIND_NUMA" || name == "DIST_BIND_NICS") return !gpus || np.req.mode != DB_MODE_CLOSEST;
    if (name == "HIP_VISIBLE_DEVICES") {
        auto has = [&](const char *list) {
            return std::any_of(np.gpus.begin(), np.gpus.end(), [&](const GpuVar &g) { return g.name == list; });
        };
        return !has("ROCR_VISIBLE_DEVICES") || !has("CUDA_VISIBLE_DEVICES");
    }
    return false;  // set by every task, or by some
}

}  // namespace

void plan_node_env(const EnvIndex &env, NodePlan &np) {
    if (!np.active) return;
    auto out = std::make_shared<NodeEnv>();
    Builder b(env, *out);
    // The decisions the task plan makes from its environment, made here from
    // the step's (TaskEnv answers for these names as the step held them).
    const char *mark = env.get(DB_STEP_MARK);
    const bool marked = mark != nullptr, inherited = marked && step_name(np.job_id, np.step_id) != mark;

    // In the order the task plan sets them: set_rank_vars, then
    // TaskGpus::write (Slurm's lists, which a task sets itself, then these).
    std::vector<std::pair<std::string, std::string>> ranks, gpus, lists;
    auto set = [&](const char *name, std::string value) { ranks.emplace_back(name, std::move(value)); };
    // In a heterogeneous step each task's SLURM_NODEID says its node rank
    // (het_task_view).
    shared_rank_vars(np, !np.het, set);
    const std::pair<const char *, std::string> pet[] = {{"PET_NNODES", std::to_string(np.ntasks)},
                                                        {"PET_MASTER_ADDR", np.master_addr},
                                                        {"PET_MASTER_PORT", np.master_port},
                                                        {"PET_RDZV_ENDPOINT", torchrun_endpoint(np)},
                                                        {"PET_RDZV_ID", step_name(np.job_id, np.step_id)}};
    for (const auto &p : pet)
        if (inherited || !env.get(p.first)) set(p.first, p.second);

    if (!np.gpus.empty()) {
        // rank shows every task the step's GPUs in Slurm's order with its
        // own moved to LOCAL_RANK*k: where Slurm bound the tasks in that
        // order (or not at all), the same list in every task.  Slurm writes
        // each task's own lists after user_init; their twins can be guessed
        // here (a task with another list writes its own twin).
        const std::vector<std::string> &step = np.gpus[0].step;
        const bool mig =
            std::any_of(step.begin(), step.end(), [](const std::string &g) { return g.compare(0, 4, "MIG-") == 0; });
        bool rocr = false, cuda = false;
        for (const GpuVar &g : np.gpus) {
            rocr = rocr || g.name == "ROCR_VISIBLE_DEVICES";
            cuda = cuda || g.name == "CUDA_VISIBLE_DEVICES";
        }
        if (np.req.mode == DB_MODE_RANK && !mig) {
            for (const GpuVar &g : np.gpus)
                lists.emplace_back(g.name,
                                   rocr && g.name == "GPU_DEVICE_ORDINAL" ? first_n(step.size()) : join(g.step));
            if (rocr && cuda) gpus.emplace_back("HIP_VISIBLE_DEVICES", first_n(step.size()));
        }
        gpus.emplace_back("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    }
    for (const auto *part : {&ranks, &gpus})
        for (const auto &kv : *part) b.set(kv.first, kv.second);

    out->first_twin = out->vars.size();
    // Their twins (twins.cc), in the same order, the user's own twin
    // winning unless an enclosing step's dist-bind left it; then the
    // step's secret's.
    for (const auto *part : {&ranks, &lists, &gpus})
        for (const auto &kv : *part) {
            const std::string t = kTwin + kv.first;
            if (marked || !env.get(t)) b.set(t, kv.second);
        }
    if (const char *secret = step_secret(env)) b.set(std::string(kTwin) + DB_SECRET_VAR, secret);
    out->nsets = out->vars.size();

    // What the task plan unsets alike: srun's hints, what an enclosing
    // step's dist-bind left and no task sets, and their twins.
    std::vector<std::string> gone;
    for (const char *word : kSrunWordsGone)
        if (env.get(word)) gone.emplace_back(word);
    if (inherited)
        for (const char *name : kOwnVars)
            if (env.get(name) && never_set(np, name)) gone.emplace_back(name);
    for (const std::string &n : gone) b.unset(n);
    if (marked)
        for (const std::string &n : gone) b.unset(kTwin + n);

    for (size_t i = 0; i < out->vars.size(); i++)
        if (out->vars[i].written) out->writes.push_back(static_cast<uint32_t>(i));
    np.node_env = std::move(out);
}

namespace {

// The node's variables in [j, end) follow the order the plan lists them in:
// NAME is among the next few not found yet.  Its position, marked found
// with `j` past it, or `end`.
size_t find_next(const NodeEnv &ne, std::bitset<kMaxNodeVars> &seen, size_t &j, size_t end, std::string_view name) {
    while (j < end && seen[j]) j++;
    for (size_t t = j; t < end && t < j + 4; t++)
        if (ne.name(ne.vars[t]) == name) {
            seen[t] = true;
            j = t + 1;
            return t;
        }
    return end;
}

}  // namespace

void TaskPlan::put(const TaskEnv &task, std::string_view name, std::string value) {
    if (const NodeEnv *ne = task.node) {
        const size_t t = find_next(*ne, node_seen, node_cursor, ne->nsets, name);
        if (t < ne->nsets && task.intact[t] && ne->value(ne->vars[t]) == value) {
            planned.push_back({true, static_cast<uint32_t>(t)});
            return;
        }
    }
    planned.push_back({false, static_cast<uint32_t>(set.size())});
    set.emplace_back(name, std::move(value));
}

std::string_view TaskPlan::name(const TaskEnv &task, Planned p) const {
    return p.node ? task.node->name(task.node->vars[p.i]) : std::string_view(set[p.i].first);
}

std::string_view TaskPlan::value(const TaskEnv &task, Planned p) const {
    return p.node ? task.node->value(task.node->vars[p.i]) : std::string_view(set[p.i].second);
}

bool TaskPlan::plans(const TaskEnv &task, std::string_view n) const {
    return std::any_of(planned.begin(), planned.end(), [&](Planned p) { return name(task, p) == n; });
}

bool node_holds_twin(const TaskEnv &task, TaskPlan &tp, size_t &cursor, std::string_view base, std::string_view value) {
    const NodeEnv *ne = task.node;
    if (!ne) return false;
    const std::string_view twin(kTwin);
    for (size_t t = cursor; t < ne->nsets && t < cursor + 4; t++) {
        const std::string_view name = ne->name(ne->vars[t]);
        if (name.size() != twin.size() + base.size() || name.compare(0, twin.size(), twin) != 0 ||
            name.compare(twin.size(), base.size(), base) != 0)
            continue;
        cursor = t + 1;
        if (!task.intact[t] || ne->value(ne->vars[t]) != value) return false;
        tp.node_seen[t] = true;
        return true;
    }
    return false;
}

void drop_node_writes(const NodePlan &np, const TaskEnv &task, TaskPlan &tp) {
    const NodeEnv *ne = np.node_env.get();
    if (!ne) return;
    std::bitset<kMaxNodeVars> &seen = tp.node_seen;
    // Both lists follow the node's order: one walk each, which steps over
    // the twins found already and a few node variables this task's plan
    // does not list (a guessed list).
    auto walk = [&](auto &list, size_t j, size_t end, auto name_of, auto same) {
        size_t keep = 0;
        for (size_t i = 0; i < list.size(); i++) {
            const size_t t = find_next(*ne, seen, j, end, name_of(list[i]));
            const bool drop = t < end && task.intact[t] && same(list[i], ne->vars[t]);
            if (!drop) {
                if (keep != i) list[keep] = std::move(list[i]);
                keep++;
            }
        }
        list.resize(keep);
    };
    walk(
        tp.set, 0, ne->nsets, [](const auto &kv) -> const std::string & { return kv.first; },
        [&](const auto &kv, const NodeVar &v) { return kv.second == ne->value(v); });
    walk(
        tp.unset, ne->nsets, ne->vars.size(), [](const std::string &n) -> const std::string & { return n; },
        [](const std::string &, const NodeVar &) { return true; });

    // user_init wrote it, the task still holds it, and this task's plan
    // does not list it where the node's order says: listed elsewhere, the
    // plan's entry stays and wins; not listed, it goes back to what the step
    // held (the plan, seeing the step's value, chose to leave it).
    for (size_t t = 0; t < ne->vars.size(); t++) {
        const NodeVar &v = ne->vars[t];
        if (seen[t] || !task.intact[t] || !v.written) continue;
        const std::string_view name = ne->name(v);
        const bool listed =
            std::any_of(tp.set.begin(), tp.set.end(), [&](const auto &kv) { return kv.first == name; }) ||
            std::find(tp.unset.begin(), tp.unset.end(), name) != tp.unset.end();
        if (listed) continue;
        if (v.had)
            tp.set.emplace_back(name, ne->str(v.before) + name.size() + 1);
        else
            tp.unset.emplace_back(name);
    }
}

}  // namespace db
