// Internals of libdistbind shared by its parts: the failure type every part
// throws, the settings read from the environment, the task's identity,
// debug lines, deadlines and the words of messages.  Nothing here knows a
// bootstrap or a GPU.
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

#include "core/secret.hh"
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
    Secret secret;                       // DIST_BIND_SECRET (the plugin's per-step secret)
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

using Clock = std::chrono::steady_clock;

// Seconds as a Clock duration (a timeout, a grace).
inline Clock::duration to_duration(double seconds) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// A point in time every wait of one operation is measured against.
struct Deadline {
    Clock::time_point at;
    static Deadline in(double seconds) { return {Clock::now() + to_duration(seconds)}; }
    bool passed() const { return Clock::now() >= at; }
    // Milliseconds left, for poll(): 0 once passed.
    int ms_left() const;
    double s_left() const;
};

// "1, 3, 5-9": ranks for messages, shortened when there are many.
std::string rank_list(const std::vector<int> &ranks);
// "rank 3", "ranks 1, 3, 5-9".
std::string ranks_text(const std::vector<int> &ranks);
// A wait's limit: "2.5 s".
std::string seconds_text(double s);
// Two ranks passed a collective different sizes (and, where `rooted`, maybe
// different roots, named when known, >= 0): "rank 1 passed 48 bytes but rank
// 0 passed 32 bytes (every rank must pass the same size)".
std::string size_mismatch(int a, uint64_t a_len, int b, uint64_t b_len, bool rooted = false, int a_root = -1,
                          int b_root = -1);

}  // namespace db::rt
