// Internals of libdistbind shared by its parts: the failure type every part
// throws, the settings read from the environment, the task's identity and
// the exchange interface the bootstraps implement.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/tcp/auth.hh"
#include "distbind.h"

namespace db::rt {

// What every part throws; the C boundary turns it into a status and a
// message.  Messages carry no "dist-bind: " prefix: the boundary adds it.
struct Failure : std::runtime_error {
    distbind_status status;
    Failure(distbind_status s, const std::string &msg) : std::runtime_error(msg), status(s) {}
};

[[noreturn]] inline void fail(distbind_status s, const std::string &msg) { throw Failure(s, msg); }

// A snapshot of the environment the handle was created from.
class Env {
  public:
    explicit Env(const char *const *env);
    // The process's environment.  DIST_BIND_SECRET is taken out of it (and
    // kept for later handles of this process), so that programs this one
    // starts do not inherit the step's secret.
    static Env process();
    // nullptr when unset.
    const char *get(std::string_view name) const;
    // Wipe and drop a variable from the snapshot.
    void forget(std::string_view name);

  private:
    std::vector<std::string> vars_;
};

// Every setting the library reads, read in one place (params.cc).
struct Params {
    std::string bootstrap = "auto";      // DIST_BIND_BOOTSTRAP
    double timeout_s = 300;              // DIST_BIND_TIMEOUT
    unsigned fanout = 8;                 // DIST_BIND_TCP_FANOUT
    std::string step_key;                // DIST_BIND_STEP_KEY, else SLURM_JOB_ID.SLURM_STEP_ID
    auth::Secret secret;                 // DIST_BIND_SECRET (the plugin's per-step secret)
    bool tcp_insecure = false;           // DIST_BIND_TCP_INSECURE=1: TCP without proofs
    unsigned nccl_ranks_per_root = 128;  // DIST_BIND_NCCL_RANKS_PER_ROOT
    bool debug = false;                  // DIST_BIND_DEBUG
    std::string master_addr;             // MASTER_ADDR ("" = unset)
    unsigned master_port = 0;            // MASTER_PORT (0 = unset)
};
Params read_params(const Env &env);
void check_bootstrap_name(std::string_view name, std::string_view what);
double parse_seconds(std::string_view s, std::string_view what);

enum class Source { Plugin, Env, Slurm, Pmix };
const char *source_name(Source s);

// The task's place in the step.
struct Identity {
    Source source = Source::Env;
    int rank = -1, world = -1, local_rank = -1, local_world = -1, node_rank = -1;
    int device = -1;
    std::string device_from;  // the variable the ordinal came from
    bool relaunched = false;  // a launcher re-ranked the task the plugin set up
    std::string host;         // this node's host name
};

// Find the identity from the plugin's variables, then Slurm's, then PMIx
// (whose calls wait at most timeout_s).
Identity discover(const Env &env, std::shared_ptr<void> &keep, double timeout_s);
// The same, without the PMIx fallback (pure: for unit tests and the tool).
bool discover_from_env(const Env &env, Identity &out);

// Debug lines ("dist-bind: rank 3: ...") on stderr when the handle in use
// was made with DIST_BIND_DEBUG=1.  The handle in use is the calling
// thread's (a DebugScope for the length of each call into the library), so
// handles on different threads share nothing here.
struct DebugCtx {
    bool on = false;
    int rank = -1;
};
class DebugScope {
  public:
    explicit DebugScope(const DebugCtx &c) noexcept;
    ~DebugScope();
    DebugScope(const DebugScope &) = delete;
    DebugScope &operator=(const DebugScope &) = delete;

  private:
    const DebugCtx *prev_;
};
void debugf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// A C entry point without a handle (capi.cc): runs f and returns its
// status; a failure's message goes where distbind_last_error(NULL) finds it.
distbind_status unbound_call(const std::function<void()> &f) noexcept;

using Clock = std::chrono::steady_clock;

// A point in time every wait of one operation is measured against.
struct Deadline {
    Clock::time_point at;
    static Deadline in(double seconds) {
        return {Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))};
    }
    bool passed() const { return Clock::now() >= at; }
    // Milliseconds left, for poll(): 0 once passed.
    int ms_left() const;
    double s_left() const;
};

// The exchange among the ranks of a step.  Every call is collective and
// throws Failure; after one failure every later call fails the same way.
class Exchange {
  public:
    virtual ~Exchange() = default;
    virtual const char *name() const = 0;
    virtual void broadcast(void *buf, size_t len, int root) = 0;
    virtual void allgather(const void *send, size_t len, void *recv) = 0;
    virtual void barrier() = 0;
    virtual long peak_connections() const { return 0; }
};

struct ExchangeConfig {
    int rank = 0, world = 1;
    double timeout_s = 300;
    unsigned fanout = 8;
    std::string step_key;
    auth::Secret secret;
    bool tcp_insecure = false;
    std::string master_addr;
    unsigned master_port = 0;
    std::string port_from;  // for messages, where master_port is not MASTER_PORT's
};

std::unique_ptr<Exchange> make_tcp(const ExchangeConfig &c);
std::unique_ptr<Exchange> make_pmix(const ExchangeConfig &c);
std::unique_ptr<Exchange> make_pmi2(const ExchangeConfig &c);

// PMIx, for discovery and the exchange (pmix.cc).  has_server: the task was
// started by a PMIx server (PMIX_NAMESPACE is set).
bool pmix_has_server(const Env &env);
bool pmi2_has_server(const Env &env);
struct PmixPlace {
    int rank, world, local_rank, local_world, node_rank;
};
// `keep` holds the PMIx client up (for the exchange that usually follows).
PmixPlace pmix_place(std::shared_ptr<void> &keep, double timeout_s);

// An MPI library in this process (beside_mpi.cc): found through the
// process's global symbols; version is MPI_Get_library_version's first
// part ("Open MPI v5.0.7", "MPICH Version:      4.2.1").
struct MpiSeen {
    bool present = false, initialized = false;
    std::string version;
};
MpiSeen mpi_in_process();
// Why auto must not take `pmi` ("pmix", "pmi2") beside that MPI; "" when it may.
std::string pmi_conflict(const MpiSeen &m, std::string_view pmi);

// PMI2's encoding of bytes (pmi2.cc).
std::string b64_encode_bytes(const uint8_t *p, size_t n);
bool b64_decode_bytes(const char *s, size_t n, std::vector<uint8_t> &out);
// The first chunk of a rank's bytes in PMI2, "<total>,<base64>": false
// unless total is decimal digits and at most max_total.
bool pmi2_first_chunk(const char *val, uint64_t max_total, uint64_t &total, const char *&data);

// "1, 3, 5-9": ranks for messages, shortened when there are many.
std::string rank_list(const std::vector<int> &ranks);

}  // namespace db::rt
