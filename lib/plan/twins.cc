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
    // 4 KiB cost glibc's malloc a pass over its free lists each task.  At
    // most a twin per planned variable, the GPU lists' and the secret's.
    const size_t nplanned = tp.planned.size(), nunset = tp.unset.size();
    tp.set.reserve(tp.set.size() + nplanned + 6);
    // Where the node's twins start: the node's variables before them are
    // the ones the twins are of.
    size_t node = task.node ? task.node->first_twin : 0;
    // A twin's name, made in one buffer for the lookups; a string of its
    // own only for what the plan sets.
    std::string twin(kPrefix);
    auto twin_of = [&](std::string_view base) -> const std::string & {
        twin.resize(std::char_traits<char>::length(kPrefix));
        return twin.append(base);
    };
    for (size_t i = 0; i < nplanned; i++) {
        // Views into the node's text or into `set`, which stays put: the
        // room is reserved.
        const std::string_view base = tp.name(task, tp.planned[i]), value = tp.value(task, tp.planned[i]);
        // Most twins are the node's, written in user_init.
        if (node_holds_twin(task, tp, node, base, value)) continue;
        const std::string &name = twin_of(base);
        if (!marked && task.env.get(name)) {
            tp.notes.push_back(name + " set by user wins");
            continue;
        }
        tp.set.emplace_back(name, value);
    }
    // The GPU lists the plan leaves as Slurm set them (env mode, a task
    // Slurm confined to its GPUs) are the task's too: without their twins
    // an image's value would win over them, and --cleanenv would drop them.
    auto planned = [&](std::string_view name) {
        return tp.plans(task, name) || std::find(tp.unset.begin(), tp.unset.end(), name) != tp.unset.end();
    };
    for (const char *list : {"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES",
                             "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"}) {
        const char *v = task.env.get(list);
        if (nplanned == 0 || !v || planned(list)) continue;
        const std::string &name = twin_of(list);
        if (marked || !task.env.get(name)) tp.set.emplace_back(name, v);
    }
    // The step's secret comes from srun, not from the plan; libdistbind
    // takes the twin out of the environment with it.
    const char *secret = step_secret(task.env);
    if (nplanned && secret && !node_holds_twin(task, tp, node, DB_SECRET_VAR, secret))
        tp.set.emplace_back(twin_of(DB_SECRET_VAR), secret);
    for (size_t i = 0; i < nunset; i++) {
        const std::string &name = twin_of(tp.unset[i]);
        if (marked && task.env.get(name)) tp.unset.push_back(name);
    }
}

}  // namespace db
