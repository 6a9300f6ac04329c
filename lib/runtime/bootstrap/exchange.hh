// The exchange among the ranks of a step, as every bootstrap implements it
// and as the GPU code and the C face use it, without knowing which one runs.
#pragma once

#include <cstddef>
#include <string>

#include "core/rt.hh"
#include "core/secret.hh"

namespace db::rt {

// Every call is collective and throws Failure; after one failure every
// later call fails the same way.
class Exchange {
  public:
    virtual ~Exchange() = default;
    virtual const char *name() const = 0;
    virtual void broadcast(void *buf, size_t len, int root) = 0;
    virtual void allgather(const void *send, size_t len, void *recv) = 0;
    virtual void barrier() = 0;
    virtual long peak_connections() const { return 0; }
};

// What a bootstrap is made with.
struct ExchangeConfig {
    int rank = 0, world = 1;
    double timeout_s = 300;
    unsigned fanout = 8;
    std::string step_key;
    Secret secret;
    bool tcp_insecure = false;
    std::string master_addr;
    unsigned master_port = 0;
    std::string port_from;  // for messages, where master_port is not MASTER_PORT's
};

}  // namespace db::rt
