// Where a task is in its step (discovery.cc).
#pragma once

#include <memory>

#include "core/rt.hh"

namespace db::rt {

// Find the identity from the plugin's variables, then Slurm's, then PMIx
// (whose calls wait at most timeout_s).
Identity discover(const Env &env, std::shared_ptr<void> &keep, double timeout_s);
// The same, without the PMIx fallback (pure: for unit tests and the tool).
bool discover_from_env(const Env &env, Identity &out);

}  // namespace db::rt
