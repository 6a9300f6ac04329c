// The task's share of the plan (slurmstepd, task_init): the rank
// variables, the task's own GPUs and the lists it is shown, the verbose
// line, and what an enclosing step's dist-bind left behind.
#include <algorithm>
#include <cstring>

#include "plan.hh"
#include "record.hh"
#include "text.hh"

namespace db {

namespace {

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

bool is_first_n(const std::vector<std::string> &list) {
    for (size_t i = 0; i < list.size(); i++)
        if (list[i] != std::to_string(i)) return false;
    return true;
}

// Whether the step's GPU binding is "none" (--gpu-bind=none), as Slurm tells
// the task in SLURMD_TRES_BIND: "gpu:none" (22.05), "gres/gpu:none" (23.11
// on), options after the colon separated by ',', TRES by '+'.
bool gpu_bind_none(const char *tres_bind) {
    if (!tres_bind) return false;
    const std::string tb = tres_bind;
    size_t start = 0;
    while (start <= tb.size()) {
        size_t end = tb.find('+', start);
        if (end == std::string::npos) end = tb.size();
        const std::string tres = tb.substr(start, end - start);
        const size_t colon = tres.find(':');
        const std::string name = tres.substr(0, colon);
        if (colon != std::string::npos && (name == "gpu" || name == "gres/gpu")) {
            const std::string opts = tres.substr(colon + 1);
            size_t o = 0;
            while (o <= opts.size()) {
                size_t comma = opts.find(',', o);
                if (comma == std::string::npos) comma = opts.size();
                if (opts.compare(o, comma - o, "none") == 0 && comma - o == 4) return true;
                o = comma + 1;
            }
        }
        start = end + 1;
    }
    return false;
}

// Unset what an enclosing step's dist-bind set and this plan does not set;
// `record_follows`: the plan writes its record after this (an active plan
// does, and its record replaces the enclosing step's).
void drop_inherited(const TaskEnv &task, TaskPlan &tp, bool record_follows) {
    if (!task.inherited) return;
    auto is_set = [&](std::string_view name) {
        return (record_follows && name == DB_SET_RECORD) || tp.plans(task, name);
    };
    const auto master = inherited_master(task.env.get(DB_MASTER_MARK));
    for (const char *name : kOwnVars)
        if (task.env.get(name) && !is_set(name)) tp.unset.emplace_back(name);
    const std::pair<const char *, const std::string *> ours[] = {{"MASTER_ADDR", &master.first},
                                                                 {"MASTER_PORT", &master.second}};
    for (const auto &o : ours) {
        const char *v = task.env.get(o.first);
        if (v && !o.second->empty() && *o.second == v && !is_set(o.first)) tp.unset.emplace_back(o.first);
    }
}

// One task's GPU planning: what Slurm gave it, what it owns, what it sees.
class TaskGpus {
  public:
    TaskGpus(const NodePlan &np, const TaskEnv &task, TaskPlan &tp, std::vector<std::string> &notes)
        : np_(np), task_(task), tp_(tp), notes_(notes), step_(np.gpus[0].step), mode_(np.req.mode) {}

    void plan() {
        const GpuVar &primary = np_.gpus[0];
        task_list_ = task_.env.get(primary.name);
        // No list for the task (--gpu-bind=none): as if Slurm had not bound
        // it, every GPU of the step on the node is its to use.
        mine_ = task_list_ ? parse_gpu_list(task_list_, primary.name) : step_;
        if (!task_list_)
            notes_.push_back("Slurm set no " + primary.name +
                             " for this task: the lists are built from the step's GPUs on the node");
        // Slurm never lists a GPU outside the step's: such a list was set
        // by a plugin that ran before dist-bind in task_init (a container
        // plugin copying an image's CUDA_VISIBLE_DEVICES).  It must not
        // widen what the task is shown: as if Slurm had not bound the task.
        for (const std::string &g : mine_)
            if (std::find(step_.begin(), step_.end(), g) == step_.end()) {
                notes_.push_back(quoted(primary.name, task_list_) + " names GPU " + g +
                                 ", not one of the step's GPUs on node " + np_.host + " (" + join(step_) +
                                 "): not Slurm's (set by a plugin before dist-bind, e.g. a container image); "
                                 "ignored, the task's GPUs come from the step's list");
                mine_ = step_;
                untrusted_ = true;
                break;
            }
        // Slurm bound no GPU per task (--gpu-bind=none) and still gave the
        // task a narrower list than the step's: 26.05 does so on a node
        // whose step GPUs do not start at the node's GPU 0 (another job
        // holds it): every task there gets the same one GPU.  That list is
        // no binding, and no task's own GPU.
        if (task_list_ && !untrusted_ && mine_ != step_ && gpu_bind_none(task_.env.get("SLURMD_TRES_BIND"))) {
            notes_.push_back(quoted(primary.name, task_list_) + " is narrower than the step's GPUs on node " +
                             np_.host + " (" + join(step_) + ") under " +
                             quoted("SLURMD_TRES_BIND", task_.env.get("SLURMD_TRES_BIND")) +
                             " (Slurm bound no GPU per task): ignored, the task's GPUs come from the step's list");
            mine_ = step_;
            untrusted_ = true;
        }
        if (confined()) return keep_slurms_lists();
        choose_own();
        choose_visible();
        write();
    }

    std::string gpus_shown = "none", visible_shown = "unset", device_shown = "none";

  private:
    void set(std::string_view name, std::string value) { tp_.put(task_, name, std::move(value)); }
    // A node's only task whose device is 0 gets no DIST_BIND_DEVICE: it owns
    // its node's GPUs, device 0 is CUDA's default and libdistbind's choice
    // (LOCAL_RANK), and a launcher it starts (torchrun) copies its
    // environment into every worker, where a DIST_BIND_DEVICE=0 would name
    // the launcher's device as each worker's.
    bool lone_on_zero(const std::string &device) const { return np_.local_ntasks == 1 && device == "0"; }
    // Slurm narrowed this task's list: it bound it per task.  Up to 25.05 it
    // never binds a node's only task (its list is the step's); from 25.11 it
    // does (--gpu-bind, --gpus-per-task), with a device cgroup of its own
    // under ConstrainDevices.
    bool bound_per_task() const { return task_list_ && !untrusted_ && mine_ != step_; }

    // A task Slurm bound per task under a device cgroup can open only its
    // own GPUs, which Slurm numbers 0..k-1 (a list that is not, under
    // --gres-flags=allow-task-sharing, is numbered step-wide instead).
    bool confined() const {
        if (np_.devices != Devices::Confined || np_.task_sharing || !bound_per_task()) return false;
        uint64_t v;
        const bool numeric =
            std::all_of(mine_.begin(), mine_.end(), [&](const std::string &g) { return parse_uint(g, 999999, v); });
        return !numeric || is_first_n(mine_);
    }

    // Nothing else can be shown: rank/closest cannot keep their promise,
    // isolate and env find Slurm's own lists already right.
    void keep_slurms_lists() {
        const std::string mode = db_mode_name(mode_);
        if (mode_ == DB_MODE_RANK || mode_ == DB_MODE_CLOSEST)
            throw NodeError(
                "node " + np_.host + ": Slurm confines each task of step " + step_name(np_.job_id, np_.step_id) +
                " to the GPU it bound it to (task/cgroup with ConstrainDevices=yes), so --dist-bind=" + mode +
                " cannot show a task the node's other GPUs of the step. Add --gpu-bind=none to srun, sbatch or "
                "salloc (each task can then open the step's GPUs, and dist-bind gives each its own), or use "
                "--gres-flags=allow-task-sharing (Slurm 23.11.4 and later), or --dist-bind=isolate");
        notes_.push_back(
            "Slurm confines this task to its own GPUs (device cgroup) and numbers them inside it: "
            "its lists are kept as Slurm set them");
        set("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        if (!lone_on_zero("0")) set("DIST_BIND_DEVICE", "0");
        set("DIST_BIND_GPUS", join(mine_));
        gpus_shown = join(mine_);
        visible_shown = task_list_;
        device_shown = "0";
    }

    // The task's own GPUs: in closest mode the node's topology choice; else
    // what Slurm bound it to, else the local_rank-th of the step's GPUs (a
    // node's only task owns them all).
    void choose_own() {
        const bool bound = mine_ != step_ || np_.local_ntasks == 1;
        near_ = mode_ == DB_MODE_CLOSEST && np_.closest.chosen ? &np_.closest.tasks[task_.local_rank] : nullptr;
        // The topology choice was made for k GPUs per task before the tasks
        // existed; where Slurm bound this task to another number, rank's
        // rule keeps the promise instead.
        if (near_ && mine_ != step_ && near_->gpus.size() != mine_.size()) {
            notes_.push_back("closest: Slurm gave this task " + std::to_string(mine_.size()) +
                             " GPUs, the topology choice has " + std::to_string(near_->gpus.size()) +
                             ", choosing as rank");
            near_ = nullptr;
        }
        const size_t n = step_.size();
        if (near_) {
            own_ = near_->gpus;
        } else if (bound) {
            own_ = positions(step_, mine_);
        } else {
            // k GPUs each where the step asked for k per task and they fit.
            const size_t k = np_.gpus_per_task && np_.local_ntasks * np_.gpus_per_task <= n ? np_.gpus_per_task : 1;
            for (size_t j = 0; j < k; j++) own_.push_back((task_.local_rank * k + j) % n);
        }
        const size_t k = own_.size();
        overflow_ = static_cast<uint64_t>(np_.local_ntasks) * k > n;
        if (overflow_ && !np_.req.share && mode_ != DB_MODE_ENV)
            throw NodeError("node " + np_.host + " runs " + std::to_string(np_.local_ntasks) + " tasks of step " +
                            step_name(np_.job_id, np_.step_id) + " with " + std::to_string(k) +
                            " GPUs each but has only " + std::to_string(n) + " GPUs of the step (" + np_.gpus[0].name +
                            "=" + join(step_) + "): add \"share\" (--dist-bind=" + db_mode_name(mode_) +
                            ",share) to share GPUs round-robin");
    }

    // The visible list, as positions in the step's list, and the device
    // ordinal of the task's first GPU in it.
    void choose_visible() {
        const size_t n = step_.size(), k = own_.size();
        const bool mig =
            std::any_of(step_.begin(), step_.end(), [](const std::string &g) { return g.compare(0, 4, "MIG-") == 0; });
        if (mode_ == DB_MODE_ENV) {
            visible_ = positions(step_, mine_);
            device_ = static_cast<size_t>(std::find(visible_.begin(), visible_.end(), own_[0]) - visible_.begin());
        } else if (mode_ == DB_MODE_ISOLATE) {
            visible_ = own_;
        } else if (mig) {
            // A CUDA process uses only the first MIG instance it is shown.
            visible_ = own_;
            notes_.push_back(
                "MIG: a CUDA process uses only the first MIG instance it is shown, so this task is "
                "shown its own alone, as device 0");
        } else if (overflow_) {
            // Shared round-robin: everyone sees the step's list as Slurm
            // ordered it; DIST_BIND_DEVICE says which device is this task's.
            visible_.reserve(n);
            for (size_t i = 0; i < n; i++) visible_.push_back(i);
            device_ = own_[0];
            notes_.push_back("share: " + std::to_string(np_.local_ntasks) + " tasks on " + std::to_string(n) +
                             " GPUs, device " + std::to_string(device_) + " is this task's");
        } else {
            // rank/closest: own GPUs at LOCAL_RANK*k, the rest in Slurm's order.
            device_ = static_cast<size_t>(task_.local_rank) * k;
            visible_.reserve(n);
            std::vector<bool> taken(n, false);
            for (size_t p : own_) taken[p] = true;
            size_t next = 0;
            for (size_t slot = 0; slot < n; slot++) {
                if (slot >= device_ && slot < device_ + k) {
                    visible_.push_back(own_[slot - device_]);
                } else {
                    while (taken[next]) next++;
                    visible_.push_back(next++);
                }
            }
        }
    }

    // Every list Slurm set (for the task, or for the step where it set none
    // for the task).  ROCm applies ROCR_VISIBLE_DEVICES first, then
    // HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES) and, for OpenCL,
    // GPU_DEVICE_ORDINAL as ordinals among what remains: where Slurm set
    // ROCR_VISIBLE_DEVICES with the others, it alone orders the GPUs for
    // ROCm and the second stage is 0..m-1; CUDA reads CUDA_VISIBLE_DEVICES
    // alone, so it keeps the order.
    void write_lists() {
        auto has = [&](const char *name) {
            return std::any_of(np_.gpus.begin(), np_.gpus.end(),
                               [&](const GpuVar &g) { return g.name == name && (!task_list_ || task_.env.get(name)); });
        };
        const bool rocr = has("ROCR_VISIBLE_DEVICES");
        const std::string ordinals = rocr ? first_n(visible_.size()) : std::string();
        for (const GpuVar &g : np_.gpus) {
            if (task_list_ && !task_.env.get(g.name)) continue;
            const bool second_stage = rocr && g.name == "GPU_DEVICE_ORDINAL";
            set(g.name, second_stage ? ordinals : pick(g.step, visible_));
        }
        if (rocr && has("CUDA_VISIBLE_DEVICES")) {
            const char *user = task_.env.get("HIP_VISIBLE_DEVICES");
            if (user && !task_.inherited && ordinals != user)
                notes_.push_back(quoted("HIP_VISIBLE_DEVICES", user) +
                                 " replaced: ROCR_VISIBLE_DEVICES already orders the GPUs for ROCm");
            set("HIP_VISIBLE_DEVICES", ordinals);
        }
    }

    void write() {
        if (mode_ != DB_MODE_ENV || untrusted_) write_lists();
        set("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        std::string device = std::to_string(device_);
        if (mode_ == DB_MODE_ENV && !task_list_) {
            // Nothing listed: CUDA numbers every GPU the task can open, in
            // the numbering of Slurm's step list.
            uint64_t v;
            device = parse_uint(step_[own_[0]], 999999, v) ? step_[own_[0]] : "";
            if (device.empty()) notes_.push_back("no list and GPU names, not indices: DIST_BIND_DEVICE not set");
        }
        if (!device.empty() && !lone_on_zero(device)) set("DIST_BIND_DEVICE", device);
        set("DIST_BIND_GPUS", pick(np_.gpu_names, own_));
        if (near_) {
            // Where the task sits; a value the user exported wins.
            auto where = [&](const char *name, const std::string &value) {
                if (value.empty()) return;
                if (task_.env.get(name) && !task_.inherited)
                    notes_.push_back(std::string(name) + " set by user wins over " + value);
                else
                    set(name, value);
            };
            where("DIST_BIND_NUMA", near_->numa >= 0 ? std::to_string(near_->numa) : std::string());
            where("DIST_BIND_NICS", near_->nics);
        }
        gpus_shown = pick(np_.gpu_names, own_);
        visible_shown =
            mode_ == DB_MODE_ENV && !untrusted_ ? (task_list_ ? task_list_ : "unset") : pick(step_, visible_);
        device_shown = device.empty() ? "none" : device;
    }

    const NodePlan &np_;
    const TaskEnv &task_;
    TaskPlan &tp_;
    std::vector<std::string> &notes_;
    const std::vector<std::string> &step_;
    const int mode_;
    const char *task_list_ = nullptr;
    std::vector<std::string> mine_;
    const ClosestTask *near_ = nullptr;
    std::vector<size_t> own_, visible_;
    size_t device_ = 0;
    bool overflow_ = false;
    bool untrusted_ = false;  // the task's list was not Slurm's
};

void set_rank_vars(const NodePlan &np, const TaskEnv &task, TaskPlan &tp) {
    auto set = [&](const char *name, std::string value) { tp.put(task, name, std::move(value)); };
    set("RANK", std::to_string(task.global_rank));
    set("LOCAL_RANK", std::to_string(task.local_rank));
    shared_rank_vars(np, true, set);
    for (const char *word : kSrunWordsGone)
        if (task.env.get(word)) tp.unset.emplace_back(word);
    // torchrun reads its flags and their PET_<FLAG> defaults only; one srun
    // task is one of its agents ("nodes").  Defaults: a flag the user types
    // wins (the endpoint follows a typed master), so does a PET_ value
    // exported before srun.
    const std::pair<const char *, std::string> pet[] = {
        {"PET_NNODES", std::to_string(np.ntasks)},    {"PET_NODE_RANK", std::to_string(task.global_rank)},
        {"PET_MASTER_ADDR", np.master_addr},          {"PET_MASTER_PORT", np.master_port},
        {"PET_RDZV_ENDPOINT", torchrun_endpoint(np)}, {"PET_RDZV_ID", step_name(np.job_id, np.step_id)}};
    for (const auto &p : pet)
        if (task.inherited || !task.env.get(p.first)) set(p.first, p.second);
}

// The variables dist-bind sets whose value changed between user_init and
// this task's task_init (Slurm changes none of them there), "A, B".
std::string changed_before(const NodePlan &np, const TaskEnv &task) {
    std::string out;
    auto then = np.step_values.begin();  // in kContainerWatched's order
    for (const char *name : kContainerWatched) {
        const char *now = task.env.get(name);
        const std::string *was = nullptr;
        if (then != np.step_values.end() && then->first == name) was = &(then++)->second;
        if ((now == nullptr) != (was == nullptr) || (now && *was != now)) {
            if (!out.empty()) out += ", ";
            out += name;
        }
    }
    return out;
}

TaskPlan plan_task(const NodePlan &np, const TaskEnv &task);

// The step's secret where srun's --export dropped DB_SECRET_VAR: srun's
// draw, carried.  Outside the record, as libdistbind takes it out of the
// environment.
void pass_secret(const TaskEnv &task, TaskPlan &tp) {
    const char *word = task.env.get(DB_CARRIED(DB_SECRET_VAR)), *var = task.env.get(DB_SECRET_VAR);
    if (word && (!var || std::strcmp(word, var) != 0)) tp.set.emplace_back(DB_SECRET_VAR, word);
}

}  // namespace

TaskEnv::TaskEnv(const NodePlan &np, const db_task_input &in)
    : global_rank(in.global_rank),
      local_rank(in.local_rank),
      env(in.env, np.node_env ? np.node_env->vars.size() - np.node_env->nsets : 0) {
    if (const NodeEnv *ne = node = np.node_env.get()) {
        // The task's environment started from the step's with user_init's
        // writes in it; where the task still holds them, the plan sees
        // what the step's environment held before.
        for (size_t i = 0; i < ne->vars.size(); i++) {
            const NodeVar &v = ne->vars[i];
            const std::string_view name = ne->name(v);
            const EnvIndex::Probe p = env.probe(name, v.hash);
            const char *now = p.value;
            const bool kept = v.unset ? now == nullptr : now && ne->value(v) == now;
            intact[i] = kept;
            if (kept && v.written) env.put(p, name, v.had ? ne->str(v.before) : nullptr);
        }
    }
    step_mark = env.get(DB_STEP_MARK);
    inherited = step_mark && step_name(np.job_id, np.step_id) != step_mark;
}

namespace {

// The task's own part: rank variables, GPUs, what an enclosing step left.
TaskPlan plan_task(const NodePlan &np, const TaskEnv &task) {
    TaskPlan tp;
    // About 30 variables, and their twins after them (add_apptainer_twins):
    // one allocation rather than a copy at every doubling.
    tp.set.reserve(72);
    if (!np.active) {
        if (np.clean_inherited) drop_inherited(task, tp, false);
        return tp;
    }
    // The same for what put() lists and what the plan unsets (about 10).
    tp.planned.reserve(48);
    tp.unset.reserve(16);
    if (task.local_rank >= np.local_ntasks || task.global_rank >= np.ntasks)
        throw Error("task " + std::to_string(task.global_rank) + " (local " + std::to_string(task.local_rank) +
                    ") is outside step " + step_name(np.job_id, np.step_id) + " of " + std::to_string(np.ntasks) +
                    " tasks, " + std::to_string(np.local_ntasks) + " on this node");
    set_rank_vars(np, task, tp);

    std::vector<std::string> &notes = tp.notes;  // the node's come first (the verbose line's head)
    if (np.req.mode == DB_MODE_CLOSEST && !np.gpus.empty()) {
        if (np.closest.chosen)
            notes.push_back("closest: " + np.closest.source);
        else
            notes.push_back("closest: no topology information for these GPUs" +
                            (np.closest.fallback.empty() ? std::string() : " (" + np.closest.fallback + ")") +
                            ", choosing as rank");
    }
    std::string gpus = "none", visible = "unset", device = "none";
    if (!np.gpus.empty()) {
        if (np.devices == Devices::Confined)
            notes.push_back("device cgroup: Slurm numbers GPU lists inside it (" + np.devices_from + ")");
        TaskGpus g(np, task, tp, notes);
        g.plan();
        gpus = g.gpus_shown, visible = g.visible_shown, device = g.device_shown;
    }
    drop_inherited(task, tp, true);
    if (std::string changed = changed_before(np, task); !changed.empty())
        notes.push_back("a plugin that ran before dist-bind in task_init changed " + changed +
                        " (a container plugin such as pyxis copying the image's environment): dist-bind's values "
                        "replace them");
    {
        // The place these values are for (a launcher that re-ranks its
        // workers, torchrun, leaves it behind), every variable the plan
        // sets, the node's too, then what it unsets.
        size_t size = 0;  // ",NAME:HASH" and ",NAME:-"
        for (const TaskPlan::Planned p : tp.planned) size += tp.name(task, p).size() + 10;
        for (const std::string &n : tp.unset) size += n.size() + 3;
        RecordWriter record({task.global_rank, task.local_rank, np.ntasks}, size);
        for (const TaskPlan::Planned p : tp.planned) record.set(tp.name(task, p), tp.value(task, p));
        for (const std::string &n : tp.unset) record.unset(n);
        tp.put(task, DB_SET_RECORD, record.take());
    }

    if (np.req.verbose) {
        // Appended in place: a chain of operator+ made a string per part.
        std::string &v = tp.verbose;
        v.reserve(384);
        auto num = [&](uint64_t n) -> std::string & { return v.append(std::to_string(n)); };
        v.append("dist-bind: rank=");
        num(task.global_rank).append("/");
        num(np.ntasks).append(" host=").append(np.host).append(" local_rank=");
        num(task.local_rank).append("/");
        num(np.local_ntasks).append(" gpus=").append(gpus).append(" visible=").append(visible);
        v.append(" device=").append(device).append(" mode=").append(db_mode_name(np.req.mode));
        v.append(" master=").append(np.master_addr).append(":").append(np.master_port);
        v.append(" (addr ").append(np.master_addr_from).append(", port ").append(np.master_port_from).append(")");
        v.append(" node_rank=");
        num(np.node_rank.rank).append("/");
        num(np.nnodes).append(" (").append(np.node_rank.from).append(")");
        for (const std::string &n : np.notes) v.append("; ").append(n);
    }
    return tp;
}

}  // namespace

TaskPlan task_plan(const NodePlan &np, const db_task_input &in) {
    // A step dist-bind does not plan (mode off, batch and extern steps:
    // most steps on most clusters) has nothing to do in a task without an
    // earlier dist-bind's mark: one scan for it, no index.
    if (!np.active && (!np.clean_inherited || !env_get(in.env, DB_STEP_MARK))) return TaskPlan();
    // Otherwise the task's environment is indexed here, once, for every
    // part of its plan.
    TaskEnv task(np, in);
    TaskPlan tp = np.het && np.active ? plan_task(het_task_view(np, task), task) : plan_task(np, task);
    if (np.active) pass_secret(task, tp);
    add_apptainer_twins(task, tp);
    drop_node_writes(np, task, tp);
    if (!tp.verbose.empty())
        for (const std::string &n : tp.notes) tp.verbose.append("; ").append(n);
    return tp;
}

}  // namespace db
