// The life of a process's one PMI client, PMIx's or PMI2's: its library
// loaded with dlopen on first use, its init bounded by DIST_BIND_TIMEOUT on
// a helper thread (neither init has a timeout of its own), kept for the
// life of the process and shared by its handles, finalised at exit unless
// a call may still be running on a helper thread ("wedged").
//
// Kept, not finalised when a handle goes: Slurm's PMI2_Finalize closes
// PMI_FD, after which PMI2_Init cannot connect again; and a PMIx server
// that sees a client finalise drops it from the collectives under way, so
// the first fence of a rank already on its second handle could complete
// without the slow one or hang
// (https://github.com/openpmix/openpmix/issues/3931; seen here on Slurm
// 24.11's PMIx 5.0).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/exchange.hh"
#include "core/bounded.hh"
#include "core/dl.hh"
#include "core/rt.hh"

namespace db::rt {

// What tells one PMI from the other, for loading it and for messages.
struct PmiLibrary {
    const char *name;                // "PMIx"
    const char *init_call;           // "PMIx_Init"
    const char *library;             // "libpmix"
    const char *package;             // "libpmix2": what installs it
    const char *server;              // "srun --mpi=pmix": what starts a task with a server
    std::vector<std::string> files;  // tried in order
    int dlopen_flags;
};

// What both PMIs' sessions hold.  A PMI serves one client per process.
class PmiSession {
  public:
    explicit PmiSession(const PmiLibrary &lib) : lib_(lib) {}
    PmiSession(const PmiSession &) = delete;
    PmiSession &operator=(const PmiSession &) = delete;
    virtual ~PmiSession() {
        if (finalize_ && !wedged) finalize_();
    }
    const PmiLibrary &library() const { return lib_; }

    // A call did not return in time and may still be running on a helper
    // thread (or a callback may still come): nothing finalises under it.
    std::atomic<bool> wedged{false};
    // Connected but unable to serve: every later handle hears why.
    std::string unusable;

  protected:
    // The library's function `name`; UNAVAILABLE when it has none.
    template <typename T>
    void need(T &out, const char *name) {
        if (!find_sym(dl_, out, name)) fail(DISTBIND_ERR_UNAVAILABLE, std::string(lib_.library) + " has no " + name);
    }
    void *dl_ = nullptr;

  private:
    template <typename S>
    friend class PmiClient;
    const PmiLibrary &lib_;
    std::function<void()> finalize_;  // set once init succeeded
};

// What a session's init reported: whether it connected (then it is
// finalised at exit), and why it cannot serve ("" when it can).
struct PmiStarted {
    bool connected = false;
    std::string why;
};

// The process's session of type S (a PmiSession with the library's
// functions).  S(lib) loads the library (load_library, then need() for
// each function); `start(S &)` is its init, run bounded; `finalize` is what
// closes it at exit.
template <typename S>
class PmiClient {
  public:
    explicit PmiClient(const PmiLibrary &lib) : lib_(lib) {}

    std::shared_ptr<S> get(double timeout_s, std::function<PmiStarted(S &)> start, std::function<void(S &)> finalize) {
        std::lock_guard<std::mutex> lock(mu_);
        if (s_) {
            if (!s_->unusable.empty()) fail(DISTBIND_ERR_UNAVAILABLE, s_->unusable);
            return s_;
        }
        if (init_stuck_) fail(DISTBIND_ERR_STATE, unusable_after_timeout());
        auto s = std::make_shared<S>(lib_);
        std::optional<PmiStarted> r =
            run_bounded<PmiStarted>([s, start] { return start(*s); }, Deadline::in(timeout_s));
        if (!r) {
            init_stuck_ = true;
            fail(DISTBIND_ERR_TIMEOUT, std::string(lib_.init_call) + " did not return within " +
                                           seconds_text(timeout_s) + ": the step's " + lib_.name +
                                           " server (slurmstepd) does not answer");
        }
        if (!r->connected) fail(DISTBIND_ERR_UNAVAILABLE, r->why + " (is this task started by " + lib_.server + "?)");
        S *raw = s.get();
        s->finalize_ = [raw, finalize] { finalize(*raw); };
        s_ = s;
        if (!r->why.empty()) {
            s->unusable = r->why;
            fail(DISTBIND_ERR_UNAVAILABLE, s->unusable);
        }
        return s;
    }

    // Why a session that timed out is refused for the rest of the process.
    std::string unusable_after_timeout() const {
        return std::string(lib_.name) + " is unusable in this process: an earlier " + lib_.name +
               " call did not return within DIST_BIND_TIMEOUT and may still be running on a helper thread; start a "
               "new process, or use DIST_BIND_BOOTSTRAP=tcp";
    }

  private:
    const PmiLibrary &lib_;
    std::mutex mu_;
    std::shared_ptr<S> s_;
    bool init_stuck_ = false;  // an init did not return in time: it may still be running
};

// dlopen the library for a session (S's constructor calls it first).
void *load_library(const PmiLibrary &lib);

// The PMI's rank and size must be the task's place found from the
// variables: else those belong to another step.
void check_pmi_place(const PmiLibrary &lib, int pmi_rank, int pmi_world, const ExchangeConfig &c);

}  // namespace db::rt
