#include "bootstrap/pmi_session.hh"

namespace db::rt {

void *load_library(const PmiLibrary &lib) {
    std::string why;
    void *dl = open_first(lib.files, lib.dlopen_flags, why);
    if (!dl)
        fail(DISTBIND_ERR_UNAVAILABLE, std::string("cannot load ") + lib.library + " (install " + lib.package +
                                           " or use DIST_BIND_BOOTSTRAP=tcp): " + why);
    return dl;
}

void check_pmi_place(const PmiLibrary &lib, int pmi_rank, int pmi_world, const ExchangeConfig &c) {
    if (pmi_rank != c.rank || pmi_world != c.world)
        fail(DISTBIND_ERR_ENV, "this task is rank " + std::to_string(c.rank) + " of " + std::to_string(c.world) +
                                   " by its variables, but " + lib.name + " says rank " + std::to_string(pmi_rank) +
                                   " of " + std::to_string(pmi_world) + ": the variables do not belong to this step");
}

}  // namespace db::rt
