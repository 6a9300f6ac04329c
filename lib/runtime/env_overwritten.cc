// distbind_env_overwritten: which of the variables dist-bind's plugin set
// in this task (its record, DIST_BIND_SET) the program no longer has as
// set: something after the plugin's task_init changed them, e.g. a
// container plugin later in plugstack.conf (dist-bind-check reports it).
// In a process a launcher re-ranked (torchrun's workers) the launcher's
// own variables are its to change, and are not counted.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "capi.hh"
#include "core/rt.hh"
#include "discovery.hh"
#include "distbind.h"
#include "record.hh"
#include "text.hh"

extern char **environ;

namespace {

// What a launcher that re-ranks its workers sets for them (torchrun).
constexpr const char *kLauncherSets[] = {"RANK",       "WORLD_SIZE",       "LOCAL_RANK",  "LOCAL_WORLD_SIZE",
                                         "GROUP_RANK", "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};

bool relaunched_process() {
    db::rt::Identity id;
    try {
        return db::rt::discover_from_env(db::rt::Env(environ), id) && id.relaunched;
    } catch (const std::exception &) {
        return false;  // a place that does not parse is distbind_create's to report
    }
}

}  // namespace

extern "C" distbind_status distbind_env_overwritten(char **names) {
    if (names) *names = nullptr;
    return db::rt::unbound_call([&] {
        if (!names) db::rt::fail(DISTBIND_ERR_ARG, "distbind_env_overwritten: names is NULL");
        std::vector<std::string> changed;
        try {
            changed = db::record_mismatches(std::getenv(DB_SET_RECORD), environ);
        } catch (const db::Error &e) {
            db::rt::fail(DISTBIND_ERR_ENV, e.what());
        }
        if (!changed.empty() && relaunched_process())
            changed.erase(std::remove_if(changed.begin(), changed.end(),
                                         [](const std::string &n) {
                                             for (const char *l : kLauncherSets)
                                                 if (n == l) return true;
                                             return false;
                                         }),
                          changed.end());
        const std::string out = db::join(changed, ',');
        *names = strdup(out.c_str());
        if (!*names) throw std::bad_alloc();
    });
}
