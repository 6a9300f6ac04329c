// The node and task plans (lib/plan/plan_node.cc, plan_task.cc, node_env.cc) on any step
// environment: a plan or one message, never a crash; and what a plan writes is sane.
// Input: a flags byte (the mode in its low three bits; 0x08 verbose, 0x10
// share, 0x20 a port, 0x80 plugstack arguments), then SPANK items, then
// "NAME=VALUE" lines (the node's environment, then after an empty line the
// task's additions, which come over the node's writes as Slurm's and a
// plugin's would); a node line "@WORD" is a word of the program's argv
// instead (S_JOB_ARGV: torchrun's flags).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "db_core.h"
#include "fuzz.hh"

namespace {

bool env_name(const char *s) {
    if (!s || !*s) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Take in(data, size);
    uint8_t flags = in.u8();
    db_config cfg;
    char err[DB_ERRLEN] = "";
    const char *argv[] = {"ports=20000-20009", "master_addr=suffix:-ib"};
    db_config_parse((flags & 0x80) ? 2 : 0, argv, &cfg, err, sizeof err);
    db_request eff = {DB_MODE_OFF + (flags & 0x07) % 5, (flags >> 3) & 1, (flags >> 4) & 1,
                      (flags & 0x20) ? 29500u : 0u};
    db_node_input node;
    std::memset(&node, 0, sizeof node);
    node.job_id = in.u32();
    node.step_id = in.u8() == 0xff ? 0xfffffffbu : in.u8();
    node.nnodes = in.u8();
    node.node_id = in.u8();
    node.ntasks = in.u8() | static_cast<uint32_t>(in.u8()) << 8;
    node.local_ntasks = in.u8();
    uint32_t global = in.u8(), local = in.u8();

    std::vector<std::string> step, task;
    for (std::string l = in.line(); in.left() && !l.empty() && step.size() < 64; l = in.line()) step.push_back(l);
    while (in.left() && task.size() < 64) task.push_back(in.line());
    std::vector<const char *> senv, args;
    for (const std::string &s : step) (s[0] == '@' ? args : senv).push_back(s.c_str() + (s[0] == '@'));
    senv.push_back(nullptr);
    node.env = senv.data();
    node.argc = static_cast<int>(args.size());
    args.push_back(nullptr);
    node.argv = args.data();

    db_node_plan *np = nullptr;
    if (db_node_plan_new(&cfg, &eff, &node, &np, err, sizeof err) != 0) {
        FUZZ_CHECK(np == nullptr && std::strlen(err) > 0, "a failed plan without a message");
        return 0;
    }
    FUZZ_CHECK(np != nullptr, "no plan");
    size_t ngpu = db_node_plan_gpu_count(np);
    for (size_t i = 0; i < ngpu; i++) FUZZ_CHECK(db_node_plan_gpu_id(np, i) && *db_node_plan_gpu_id(np, i), "GPU id");
    // The task's environment: the step's with the node's writes (user_init),
    // then the task's lines over it.
    // NAME set to value (nullptr: unset) in env, as slurmstepd does it.
    auto apply = [](std::vector<std::string> &env, const std::string &name, const char *value) {
        auto at = std::find_if(env.begin(), env.end(),
                               [&](const std::string &e) { return e.compare(0, name.size() + 1, name + "=") == 0; });
        if (!value) {
            if (at != env.end()) env.erase(at);
        } else if (at != env.end()) {
            *at = name + "=" + value;
        } else {
            env.push_back(name + "=" + value);
        }
    };
    // The task's lines over `env`.
    auto add_task = [&](std::vector<std::string> &env) {
        for (const std::string &s : task) {
            const size_t eq = s.find('=');
            if (eq == std::string::npos || eq == 0)
                env.push_back(s);
            else
                apply(env, s.substr(0, eq), s.c_str() + eq + 1);
        }
    };
    std::vector<std::string> task_env, alone_env;
    for (const char *s : senv)
        if (s) task_env.push_back(s);
    alone_env = task_env;
    for (size_t i = 0; i < db_node_plan_env_count(np); i++) {
        const char *name = db_node_plan_env_name(np, i);
        FUZZ_CHECK(env_name(name), "node variable name \"%s\"", name ? name : "(null)");
        apply(task_env, name, db_node_plan_env_value(np, i));
    }
    add_task(task_env);
    add_task(alone_env);
    // The task's environment at exec, its plan applied ("" when it failed).
    auto final_env = [&](std::vector<std::string> env, std::string &error) {
        std::vector<const char *> ptrs;
        for (const std::string &s : env) ptrs.push_back(s.c_str());
        ptrs.push_back(nullptr);
        db_task_input ti = {global, local, ptrs.data()};
        db_task_plan *tp = nullptr;
        if (db_task_plan_new(np, &ti, &tp, err, sizeof err) != 0) {
            FUZZ_CHECK(tp == nullptr && std::strlen(err) > 0, "a failed task plan without a message");
            error = err;
            return std::vector<std::string>();
        }
        for (size_t i = 0; i < db_task_plan_count(tp); i++) {
            const char *name = db_task_plan_name(tp, i);
            FUZZ_CHECK(env_name(name), "variable name \"%s\"", name ? name : "(null)");
            apply(env, name, db_task_plan_value(tp, i));
        }
        db_task_plan_free(tp);
        std::sort(env.begin(), env.end());
        return env;
    };
    // user_init's writes change nothing a task ends up with: planned without
    // them (it then writes everything itself) it ends the same, or fails
    // alike.  Only where each name is in the step's environment once: with
    // a name twice, which entry a write replaces is slurmstepd's business.
    std::vector<std::string> names;
    for (const std::string &e : alone_env) names.push_back(e.substr(0, e.find('=')));
    std::sort(names.begin(), names.end());
    const bool unique = std::adjacent_find(names.begin(), names.end()) == names.end();
    std::string e1, e2;
    const std::vector<std::string> with = final_env(task_env, e1);
    if (unique) {
        const std::vector<std::string> without = final_env(alone_env, e2);
        FUZZ_CHECK(e1.empty() == e2.empty(), "the node's writes decide whether the task plan fails: \"%s\" / \"%s\"",
                   e1.c_str(), e2.c_str());
        FUZZ_CHECK(with == without, "the node's writes change the task's environment (%zu / %zu entries)", with.size(),
                   without.size());
    }
    db_node_plan_free(np);
    return 0;
}
