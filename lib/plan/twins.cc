// Apptainer's copies of a task's variables.  Apptainer passes the task's
// environment into the container, but --cleanenv and --containall drop it
// and an image's %environment overrides it; APPTAINERENV_<NAME> arrives as
// <NAME> in every one of those cases and wins over %environment (Apptainer
// 1.4.5: internal/pkg/util/env/create.go, action_script.sh; measured by
// tests/lab/t_apptainer.py, docs/containers.md#apptainer).  So every
// variable the plan sets or unsets, and every GPU list the task keeps from
// Slurm, gets its APPTAINERENV_ twin.
#include <algorithm>

#include "db_core.h"
#include "plan.hh"
#include "text.hh"

namespace db {

void add_apptainer_twins(const TaskEnv &task, TaskPlan &tp) {
    constexpr const char *kPrefix = "APPTAINERENV_";
    // With an enclosing step's mark, twins found in the task are that step's
    // dist-bind's; without, the user exported them, and the user's win.
    // (Any mark counts here, also one naming this step: task.inherited is
    // narrower.)
    const bool marked = task.step_mark != nullptr;
    TaskPlan twins;
    twins.set.reserve(tp.set.size() + 6);
    for (const auto &kv : tp.set) {
        std::string name = kPrefix + kv.first;
        if (!marked && task.env.get(name)) {
            if (!tp.verbose.empty()) tp.verbose += "; " + name + " set by user wins";
            continue;
        }
        twins.set.emplace_back(std::move(name), kv.second);
    }
    // The GPU lists the plan leaves as Slurm set them (env mode, a task
    // Slurm confined to its GPUs) are the task's too: without their twins
    // an image's value would win over them, and --cleanenv would drop them.
    auto planned = [&](std::string_view name) {
        for (const auto &kv : tp.set)
            if (kv.first == name) return true;
        return std::find(tp.unset.begin(), tp.unset.end(), name) != tp.unset.end();
    };
    for (const char *list : {"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES",
                             "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"}) {
        const char *v = task.env.get(list);
        if (tp.set.empty() || !v || planned(list)) continue;
        std::string name = std::string(kPrefix) + list;
        if (marked || !task.env.get(name)) twins.set.emplace_back(std::move(name), v);
    }
    // The step's secret comes from srun, not from the plan; libdistbind
    // takes the twin out of the environment with it.
    const char *secret = task.env.get(DB_SECRET_VAR);
    if (!tp.set.empty() && secret) twins.set.emplace_back(std::string(kPrefix) + DB_SECRET_VAR, secret);
    for (const std::string &n : tp.unset) {
        std::string name = kPrefix + n;
        if (marked && task.env.get(name)) twins.unset.push_back(std::move(name));
    }
    tp.set.reserve(tp.set.size() + twins.set.size());
    for (auto &kv : twins.set) tp.set.push_back(std::move(kv));
    for (auto &n : twins.unset) tp.unset.push_back(std::move(n));
}

}  // namespace db
