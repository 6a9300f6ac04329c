// distbind_env_overwritten: which of the variables dist-bind's plugin set
// in this task (its record, DIST_BIND_SET) the program no longer has as
// set: something after the plugin's task_init changed them, e.g. a
// container plugin later in plugstack.conf (dist-bind-check reports it).
#include <cstdlib>
#include <cstring>
#include <new>

#include "distbind.h"
#include "record.hh"
#include "rt.hh"
#include "text.hh"

extern char **environ;

extern "C" distbind_status distbind_env_overwritten(char **names) {
    if (names) *names = nullptr;
    return db::rt::unbound_call([&] {
        if (!names) db::rt::fail(DISTBIND_ERR_ARG, "distbind_env_overwritten: names is NULL");
        std::string out;
        try {
            out = db::join(db::record_mismatches(std::getenv(DB_SET_RECORD), environ), ',');
        } catch (const db::Error &e) {
            db::rt::fail(DISTBIND_ERR_ENV, e.what());
        }
        *names = strdup(out.c_str());
        if (!*names) throw std::bad_alloc();
    });
}
