// The exchange among the ranks of a step, as every bootstrap implements it
// and as the GPU code and the C face use it, without knowing which one runs.
#pragma once

#include <cstddef>
#include <cstdint>
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

// Exchange's promise that after one failure every later collective fails
// at once with the same message: what a bootstrap keeps of its first.
class Broken {
  public:
    // STATE when a collective failed earlier.
    void check() const;
    // Remember msg as the exchange's failure and throw it.
    [[noreturn]] void fail(distbind_status st, const std::string &msg);
    // Remember the failure f, which the caller is about to rethrow.
    void remember(const Failure &f) { why_ = f.what(); }

  private:
    std::string why_;
};

// A collective as messages name it: "barrier #4".
std::string collective_name(const char *kind, uint32_t seq);

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
