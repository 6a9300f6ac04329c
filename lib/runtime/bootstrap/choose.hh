// Which bootstrap a handle's exchange runs over (DIST_BIND_BOOTSTRAP): the
// one place that names the concrete bootstraps.
#pragma once

#include <memory>

#include "bootstrap/exchange.hh"
#include "core/rt.hh"

namespace db::rt {

// COLLECTIVE: bring up the exchange the settings ask for (auto: PMIx, else
// PMI2, else TCP), with the set-up check every bootstrap ends with.
std::unique_ptr<Exchange> choose_exchange(const Env &env, const Identity &id, const Params &p);

}  // namespace db::rt
