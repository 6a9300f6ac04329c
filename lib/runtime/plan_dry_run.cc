// distbind_plan_dry_run: the dry run of --dist-bind=closest as public API
// (dist-bind-check --plan is its client).  A thin wrapper: the topology
// code (lib/topo, db_topo_dry_run_text) does the work, the very code the
// plugin runs in slurmstepd.
//
// Linked into libdistbind.so only, with lib/topo and hwloc (see
// lib/runtime/build.mk): the runtime's sanitized test builds leave it out,
// and lib/topo's own tests cover what it calls.
#include <cstring>
#include <new>

#include "capi.hh"
#include "core/rt.hh"
#include "db_topo.h"

extern "C" distbind_status distbind_plan_dry_run(const distbind_plan_args *args, char **text) {
    if (text) *text = nullptr;
    return db::rt::unbound_call([&] {
        if (!args || !text) db::rt::fail(DISTBIND_ERR_ARG, "distbind_plan_dry_run: args or text is NULL");
        db_topo_dry_run d{};
        d.topology = args->topology;
        d.task_cpus = args->task_cpus;
        d.step_cores = args->step_cores;
        d.ntasks = args->ntasks;
        d.cpus_per_task = args->cpus_per_task;
        d.distribution = args->distribution;
        d.gpus = args->gpus;
        d.gpus_per_task = args->gpus_per_task;
        d.nvidia_proc = args->nvidia_proc;
        char err[DB_ERRLEN] = "";
        if (db_topo_dry_run_text(&d, text, err, sizeof err) != 0) {
            if (std::strcmp(err, "out of memory") == 0) throw std::bad_alloc();
            db::rt::fail(DISTBIND_ERR_ARG, err);
        }
    });
}
