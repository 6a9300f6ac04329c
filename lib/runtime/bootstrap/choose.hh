// Which bootstrap a handle's exchange runs over (DIST_BIND_BOOTSTRAP): the
// one place that names the concrete bootstraps, also where a task's place
// comes from one of them.
#pragma once

#include <memory>

#include "bootstrap/exchange.hh"
#include "core/rt.hh"

namespace db::rt {

// COLLECTIVE: bring up the exchange the settings ask for (auto: PMIx, else
// PMI2, else TCP), with the set-up check every bootstrap ends with.
std::unique_ptr<Exchange> choose_exchange(const Env &env, const Identity &id, const Params &p);

// Where the environment names no place (discovery.cc): the task's place
// from the process manager that started it.
struct LauncherPlace {
    int rank, world, local_rank, local_world, node_rank;
};
// false: no process manager to ask (no PMIx server).  `keep` holds its
// client up for the exchange that usually follows.
bool launcher_place(const Env &env, std::shared_ptr<void> &keep, double timeout_s, LauncherPlace &out);

}  // namespace db::rt
