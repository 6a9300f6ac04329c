// Apptainer's copies of a task's variables.  Apptainer passes the task's
// environment into the container, but --cleanenv and --containall drop it
// and an image's %environment overrides it; APPTAINERENV_<NAME> arrives as
// <NAME> in every one of those cases and wins over %environment (Apptainer
// 1.4.5: internal/pkg/util/env/create.go, action_script.sh; measured by
// tests/lab/t_apptainer.py, docs/containers-apptainer.md).  So every
// variable the plan sets or unsets gets its APPTAINERENV_ twin.
#include "db_core.h"
#include "plan.hh"
#include "text.hh"

namespace db {

void add_apptainer_twins(const db_task_input &in, TaskPlan &tp) {
    constexpr const char *kPrefix = "APPTAINERENV_";
    // With an enclosing step's mark, twins found in the task are that step's
    // dist-bind's; without, the user exported them, and the user's win.
    const bool inherited = env_get(in.env, DB_STEP_MARK) != nullptr;
    TaskPlan twins;
    for (const auto &kv : tp.set) {
        std::string name = kPrefix + kv.first;
        if (env_get(in.env, name) && !inherited) {
            if (!tp.verbose.empty()) tp.verbose += "; " + name + " set by user wins";
            continue;
        }
        twins.set.emplace_back(std::move(name), kv.second);
    }
    for (const std::string &n : tp.unset) {
        std::string name = kPrefix + n;
        if (inherited && env_get(in.env, name)) twins.unset.push_back(std::move(name));
    }
    for (auto &kv : twins.set) tp.set.push_back(std::move(kv));
    for (auto &n : twins.unset) tp.unset.push_back(std::move(n));
}

}  // namespace db
