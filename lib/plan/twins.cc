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
    // Appended in place, one allocation at most: a separate list of some
    // 4 KiB cost glibc's malloc a pass over its free lists each task.
    const size_t nset = tp.set.size(), nunset = tp.unset.size();
    tp.set.reserve(2 * nset + 6);
    size_t node = 0;
    for (size_t i = 0; i < nset; i++) {
        const auto &kv = tp.set[i];  // stays put: the room is reserved
        // Most twins are the node's, written in user_init.
        if (node_holds_twin(task, tp, node, kv.first, kv.second)) continue;
        std::string name = kPrefix + kv.first;
        if (!marked && task.env.get(name)) {
            tp.notes.push_back(name + " set by user wins");
            continue;
        }
        tp.set.emplace_back(std::move(name), kv.second);
    }
    // The GPU lists the plan leaves as Slurm set them (env mode, a task
    // Slurm confined to its GPUs) are the task's too: without their twins
    // an image's value would win over them, and --cleanenv would drop them.
    auto planned = [&](std::string_view name) {
        for (size_t i = 0; i < nset; i++)
            if (tp.set[i].first == name) return true;
        return std::find(tp.unset.begin(), tp.unset.end(), name) != tp.unset.end();
    };
    for (const char *list : {"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES",
                             "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"}) {
        const char *v = task.env.get(list);
        if (nset == 0 || !v || planned(list)) continue;
        std::string name = std::string(kPrefix) + list;
        if (marked || !task.env.get(name)) tp.set.emplace_back(std::move(name), v);
    }
    // The step's secret comes from srun, not from the plan; libdistbind
    // takes the twin out of the environment with it.
    const char *secret = task.env.get(DB_SECRET_VAR);
    if (nset && secret && !node_holds_twin(task, tp, node, DB_SECRET_VAR, secret))
        tp.set.emplace_back(std::string(kPrefix) + DB_SECRET_VAR, secret);
    for (size_t i = 0; i < nunset; i++) {
        std::string name = kPrefix + tp.unset[i];
        if (marked && task.env.get(name)) tp.unset.push_back(std::move(name));
    }
}

}  // namespace db
