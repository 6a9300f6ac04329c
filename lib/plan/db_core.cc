// extern "C" entry points of the plan (db_core.h): every exception stops here and
// becomes -1 plus a message.
#include <new>
#include <utility>

#include "db_core.h"
#include "guard.hh"
#include "options.hh"
#include "plan.hh"
#include "record.hh"
#include "text.hh"

using db::guarded;

extern "C" {

const char *db_mode_name(int mode) {
    switch (mode) {
    case DB_MODE_OFF: return "off";
    case DB_MODE_RANK: return "rank";
    case DB_MODE_ISOLATE: return "isolate";
    case DB_MODE_CLOSEST: return "closest";
    case DB_MODE_ENV: return "env";
    default: return "unset";
    }
}

int db_request_parse(const char *value, db_request *out, char *err, size_t errlen) {
    return guarded(err, errlen, [&] { *out = db::parse_request(value ? value : "", "--dist-bind"); });
}

int db_config_parse(int argc, const char *const *argv, db_config *out, char *err, size_t errlen) {
    *out = db::default_config();
    return guarded(err, errlen, [&] { *out = db::parse_config(argc, argv); });
}

db_request db_effective(const db_config *cfg, const db_request *user) {
    if (user && user->mode != DB_MODE_UNSET) return *user;
    db_request r = cfg->def;
    if (r.mode == DB_MODE_UNSET) r.mode = DB_MODE_OFF;
    return r;
}

int db_srun_wants_rank0(const db_config *cfg, const db_request *eff, const char *const *env) {
    (void)cfg;
    if (eff->mode == DB_MODE_OFF || eff->mode == DB_MODE_UNSET) return 0;
    const char *user = db::env_get(env, "MASTER_ADDR");
    try {
        // An srun inside a task (srun --pty bash, then srun) inherits the
        // MASTER_ADDR dist-bind set for the enclosing step: not the user's.
        return !user || !*user || db::inherited_master(db::env_get(env, DB_MASTER_MARK)).first == user;
    } catch (...) {
        return 1;  // out of memory: ask for it anyway; the nodes decide
    }
}

int db_srun_needs_rank0(const db_config *cfg, const db_request *eff, const char *const *env) {
    if (!db_srun_wants_rank0(cfg, eff, env)) return 0;
    return cfg->addr_kind == DB_ADDR_NODEADDR || db::distribution_is_arbitrary(db::env_get(env, "SLURM_DISTRIBUTION"));
}

int db_srun_reads_layout(const db_config *cfg, const db_request *eff, const char *const *env, int topology_may_rank) {
    if (eff->mode == DB_MODE_OFF || eff->mode == DB_MODE_UNSET) return 0;
    return topology_may_rank != 0 || db::distribution_is_arbitrary(db::env_get(env, "SLURM_DISTRIBUTION")) ||
           db_srun_needs_rank0(cfg, eff, env);
}

int db_format_master_addr(const db_config *cfg, const char *node_name, const char *node_addr, char *out, size_t outlen,
                          char *err, size_t errlen) {
    return guarded(err, errlen, [&] {
        std::string s = db::format_master_addr(*cfg, node_name ? node_name : "", node_addr);
        if (s.size() >= outlen) throw db::Error("MASTER_ADDR \"" + s + "\" is too long");
        db::copy_out(s, out, outlen);
    });
}

int db_hostlist_nth(const char *hostlist, size_t index, char *out, size_t outlen, char *err, size_t errlen) {
    return guarded(err, errlen, [&] {
        std::string s = db::hostlist_nth(hostlist ? hostlist : "", index);
        if (s.size() >= outlen) throw db::Error("host name \"" + s + "\" is too long");
        db::copy_out(s, out, outlen);
    });
}

int db_node_plan_new(const db_config *cfg, const db_request *eff, const db_node_input *in, db_node_plan **out,
                     char *err, size_t errlen) {
    *out = nullptr;
    return guarded(err, errlen, [&] {
        db::NodePlan plan = db::plan_node(*cfg, *eff, *in);
        auto *p = new db_node_plan();
        static_cast<db::NodePlan &>(*p) = std::move(plan);
        *out = p;
    });
}

int db_node_plan_active(const db_node_plan *np) { return np && np->active; }

const char *db_node_plan_skip_reason(const db_node_plan *np) {
    if (!np) return "no plan";
    return np->active ? nullptr : np->skip_reason.c_str();
}

void db_node_plan_free(db_node_plan *np) { delete np; }

const char *db_node_plan_node_name(const db_node_plan *np) { return np ? np->node_name.c_str() : ""; }

size_t db_node_plan_gpu_count(const db_node_plan *np) { return np && !np->gpus.empty() ? np->gpus[0].step.size() : 0; }

const char *db_node_plan_gpu_id(const db_node_plan *np, size_t i) {
    return i < db_node_plan_gpu_count(np) ? np->gpus[0].step[i].c_str() : nullptr;
}

size_t db_node_plan_env_count(const db_node_plan *np) { return np && np->node_env ? np->node_env->writes.size() : 0; }

const char *db_node_plan_env_name(const db_node_plan *np, size_t i) {
    if (i >= db_node_plan_env_count(np)) return nullptr;
    return np->node_env->str(np->node_env->vars[np->node_env->writes[i]].name);
}

const char *db_node_plan_env_value(const db_node_plan *np, size_t i) {
    if (i >= db_node_plan_env_count(np)) return nullptr;
    const db::NodeVar &v = np->node_env->vars[np->node_env->writes[i]];
    return v.unset ? nullptr : np->node_env->str(v.value);
}

int db_node_plan_set_closest(db_node_plan *np, const db_closest_input *c, char *err, size_t errlen) {
    return guarded(err, errlen, [&] {
        if (!np || !c) throw db::Error("closest: no plan or no choice");
        db::set_closest(*np, *c);
    });
}

int db_task_plan_new(const db_node_plan *np, const db_task_input *in, db_task_plan **out, char *err, size_t errlen) {
    *out = nullptr;
    bool node_wide = false;
    int rc = guarded(err, errlen, [&] {
        try {
            db::TaskPlan plan = db::task_plan(*np, *in);
            auto *p = new db_task_plan();
            static_cast<db::TaskPlan &>(*p) = std::move(plan);
            *out = p;
        } catch (const db::NodeError &) {
            node_wide = true;
            throw;
        }
    });
    return rc != 0 && node_wide ? DB_ERR_NODE : rc;
}

size_t db_task_plan_count(const db_task_plan *tp) { return tp ? tp->set.size() + tp->unset.size() : 0; }

const char *db_task_plan_name(const db_task_plan *tp, size_t i) {
    if (!tp) return nullptr;
    if (i < tp->set.size()) return tp->set[i].first.c_str();
    i -= tp->set.size();
    return i < tp->unset.size() ? tp->unset[i].c_str() : nullptr;
}

const char *db_task_plan_value(const db_task_plan *tp, size_t i) {
    return tp && i < tp->set.size() ? tp->set[i].second.c_str() : nullptr;
}

const char *db_task_plan_verbose(const db_task_plan *tp) {
    return tp && !tp->verbose.empty() ? tp->verbose.c_str() : nullptr;
}

void db_task_plan_free(db_task_plan *tp) { delete tp; }

int db_set_record_mismatches(const char *record, const char *const *env, char *out, size_t outlen, char *err,
                             size_t errlen) {
    return guarded(err, errlen, [&] { db::copy_out(db::join(db::record_mismatches(record, env)), out, outlen); });
}

}  // extern "C"
