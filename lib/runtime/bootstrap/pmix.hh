// Slurm's PMIx (pmix.cc): the exchange, and the task's place where neither
// the plugin's nor Slurm's variables say it (discovery.cc).
#pragma once

#include <memory>

#include "bootstrap/exchange.hh"

namespace db::rt {

// The task was started by a PMIx server (PMIX_NAMESPACE is set).
bool pmix_has_server(const Env &env);
std::unique_ptr<Exchange> make_pmix(const ExchangeConfig &c);

struct PmixPlace {
    int rank, world, local_rank, local_world, node_rank;
};
// `keep` holds the PMIx client up (for the exchange that usually follows).
PmixPlace pmix_place(std::shared_ptr<void> &keep, double timeout_s);

}  // namespace db::rt
