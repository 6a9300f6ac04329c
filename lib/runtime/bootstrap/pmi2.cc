// PMI2, as Slurm's `--mpi=pmi2` serves it, through Slurm's own libpmi2
// (loaded with dlopen, so the library runs where it is not installed).
//
// PMI2's key-value store holds short strings, so bytes travel as URL-safe
// base64 (PMI2's wire format reserves ';' and '='), cut into chunks.
// PMI2 calls block with no timeout of their own: PMI2_Init and each
// collective's calls run on a helper thread that the caller waits for, one
// DIST_BIND_TIMEOUT per collective.  After a timeout that thread may still
// be inside PMI2, which serves one thread at a time, so PMI2 is not used
// again in the process.  PMI2 cannot say who is missing from a fence, so a
// timeout says so and points to the bootstraps that can.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>

#include "bootstrap/pmi2.hh"
#include "bootstrap/pmi_session.hh"
#include "core/rt.hh"

#ifdef DB_HAVE_PMI2
#include <slurm/pmi2.h>
#endif

namespace db::rt {

bool pmi2_has_server(const Env &env) { return env.get("PMI_FD") != nullptr; }

#ifndef DB_HAVE_PMI2

std::unique_ptr<Exchange> make_pmi2(const ExchangeConfig &) {
    fail(DISTBIND_ERR_UNAVAILABLE, "this libdistbind was built without PMI2 support (slurm/pmi2.h was not found)");
}

#else

namespace {

// Raw bytes per chunk: 4/3 of it stays well under PMI2_MAX_VALLEN.
constexpr size_t kChunk = 600;

const PmiLibrary kPmi2{"PMI2",
                       "PMI2_Init",
                       "Slurm's libpmi2",
                       "libpmi2-0",
                       "srun --mpi=pmi2",
                       {"libpmi2.so.0", "libpmi2.so"},
                       RTLD_NOW | RTLD_LOCAL};

// The PMI2 client: one per process (pmi_session.hh).  PMI2 cannot be used
// from two threads at once, so once a call timed out on a helper thread
// (wedged), nothing may call it again.
struct Session : PmiSession {
    decltype(&PMI2_Init) init = nullptr;
    decltype(&PMI2_Finalize) finalize = nullptr;
    decltype(&PMI2_Job_GetId) job_id = nullptr;
    decltype(&PMI2_KVS_Put) put = nullptr;
    decltype(&PMI2_KVS_Fence) fence = nullptr;
    decltype(&PMI2_KVS_Get) get = nullptr;
    int rank = -1, size = 0;
    char job[256] = "";
    // Collective numbers are the process's, so keys of two handles never
    // collide; handles on different threads share it.
    std::atomic<uint32_t> seq{0};

    explicit Session(const PmiLibrary &lib) : PmiSession(lib) {
        dl_ = load_library(lib);
        need(init, "PMI2_Init");
        need(finalize, "PMI2_Finalize");
        need(job_id, "PMI2_Job_GetId");
        need(put, "PMI2_KVS_Put");
        need(fence, "PMI2_KVS_Fence");
        need(get, "PMI2_KVS_Get");
    }
};

PmiClient<Session> g_client(kPmi2);

std::shared_ptr<Session> open_session(double timeout_s) {
    auto s = g_client.get(
        timeout_s,
        [](Session &x) {
            int spawned = 0, appnum = 0;
            int rc = x.init(&spawned, &x.size, &x.rank, &appnum);
            if (rc != PMI2_SUCCESS) return PmiStarted{false, "PMI2_Init failed with code " + std::to_string(rc)};
            // Connected but unusable without it: the connection stays (a
            // second PMI2_Init could not make one) and every later handle
            // hears why.
            rc = x.job_id(x.job, sizeof x.job);
            return PmiStarted{true, rc == PMI2_SUCCESS ? "" : "PMI2_Job_GetId failed with code " + std::to_string(rc)};
        },
        [](Session &x) { x.finalize(); });
    if (s->wedged) fail(DISTBIND_ERR_STATE, g_client.unusable_after_timeout());
    debugf("pmi2: this process is rank %d of %d in %s", s->rank, s->size, s->job);
    return s;
}

class Pmi2Exchange final : public Exchange {
  public:
    explicit Pmi2Exchange(const ExchangeConfig &c) : c_(c), s_(open_session(c.timeout_s)) {
        check_pmi_place(kPmi2, s_->rank, s_->size, c);
        begin("barrier");
        run(
            "the set-up check", [] { return Result(); }, true);
    }

    const char *name() const override { return "pmi2"; }

    void barrier() override {
        run(
            begin("barrier"), [] { return Result(); }, true);
    }

    void broadcast(void *buf, size_t len, int root) override {
        std::string what = begin("broadcast");
        if (c_.rank == root) {
            Bytes mine = copy(buf, len);
            Ctx x = ctx();
            run(
                what, [x, mine] { return put_all(x, *mine); }, true);
            return;
        }
        run(
            what, [] { return Result(); }, true);
        Bytes got = std::make_shared<std::vector<uint8_t> >(len);
        Ctx x = ctx();
        run(
            what, [x, what, root, got] { return fetch(x, what, root, got->data(), got->size(), true); }, false);
        if (len) std::memcpy(buf, got->data(), len);
    }

    void allgather(const void *send, size_t len, void *recv) override {
        std::string what = begin("allgather");
        Bytes mine = copy(send, len);
        Ctx x = ctx();
        run(
            what, [x, mine] { return put_all(x, *mine); }, true);
        Bytes all = std::make_shared<std::vector<uint8_t> >(static_cast<size_t>(c_.world) * len);
        run(
            what,
            [x, what, all, len] {
                for (int r = 0; r < x.world; r++) {
                    if (r == x.rank) continue;
                    Result e = fetch(x, what, r, all->data() + static_cast<size_t>(r) * len, len, false);
                    if (e.st != DISTBIND_OK) return e;
                }
                return Result();
            },
            false);
        if (len) {
            std::memcpy(static_cast<uint8_t *>(recv), all->data(), all->size());
            std::memmove(static_cast<uint8_t *>(recv) + static_cast<size_t>(c_.rank) * len, send, len);
        }
    }

  private:
    // What a helper thread works on is its own: after a timeout the caller
    // is gone, the thread may not be.
    using Bytes = std::shared_ptr<std::vector<uint8_t> >;
    struct Result {
        distbind_status st = DISTBIND_OK;
        std::string msg;
    };

    ExchangeConfig c_;
    std::shared_ptr<Session> s_;
    uint32_t seq_ = 0;     // this collective's number (from the session)
    Deadline deadline_{};  // this collective's: every run() of it shares it
    Broken broken_;

    static Bytes copy(const void *p, size_t n) {
        const uint8_t *b = static_cast<const uint8_t *>(p);
        return std::make_shared<std::vector<uint8_t> >(b, b + n);
    }

    std::string begin(const char *kind) {
        broken_.check();
        // Another handle's collective timed out: its helper is still inside PMI2.
        if (s_->wedged) fail(DISTBIND_ERR_STATE, g_client.unusable_after_timeout());
        seq_ = ++s_->seq;
        deadline_ = Deadline::in(c_.timeout_s);
        return collective_name(kind, seq_);
    }

    // What a helper thread needs, by value.
    struct Ctx {
        std::shared_ptr<Session> s;
        uint32_t seq;
        int rank, world;
    };
    Ctx ctx() const { return {s_, seq_, c_.rank, c_.world}; }

    static std::string key(uint32_t seq, int rank, size_t chunk) {
        return "db" + std::to_string(seq) + "r" + std::to_string(rank) + "c" + std::to_string(chunk);
    }

    // Chunk 0 is "<total bytes>," then data; later chunks are data only.
    static Result put_all(const Ctx &x, const std::vector<uint8_t> &b) {
        size_t len = b.size();
        size_t chunks = len ? (len + kChunk - 1) / kChunk : 1;
        for (size_t i = 0; i < chunks; i++) {
            size_t off = i * kChunk, n = std::min(kChunk, len - std::min(len, off));
            std::string v = (i == 0 ? std::to_string(len) + "," : std::string()) + b64_encode_bytes(b.data() + off, n);
            int rc = x.s->put(key(x.seq, x.rank, i).c_str(), v.c_str());
            if (rc != PMI2_SUCCESS)
                // SYSTEM: UNAVAILABLE would let auto mode try TCP (see the C face, lib/runtime/capi.cc).
                return {DISTBIND_ERR_SYSTEM, "PMI2_KVS_Put failed with code " + std::to_string(rc)};
        }
        return {};
    }

    static Result fetch(const Ctx &x, const std::string &what, int rank, uint8_t *dst, size_t len, bool rooted) {
        std::vector<uint8_t> got;
        auto bad = [&](distbind_status st, const std::string &m) { return Result{st, what + " failed: " + m}; };
        // Exactly the chunks `len` bytes take, each a full one but the last.
        const size_t chunks = len ? (len + kChunk - 1) / kChunk : 1;
        auto malformed = [&] {
            return bad(DISTBIND_ERR_PEER, "rank " + std::to_string(rank) + " sent malformed data");
        };
        for (size_t i = 0; i < chunks; i++) {
            char val[PMI2_MAX_VALLEN + 1] = "";
            int vallen = 0;
            int rc = x.s->get(x.s->job, rank, key(x.seq, rank, i).c_str(), val, PMI2_MAX_VALLEN, &vallen);
            if (rc != PMI2_SUCCESS)
                return bad(DISTBIND_ERR_PEER,
                           "PMI2 has no data from rank " + std::to_string(rank) + " (code " + std::to_string(rc) + ")");
            val[PMI2_MAX_VALLEN] = '\0';
            const char *data = val;
            if (i == 0) {
                uint64_t total = 0;
                if (!pmi2_first_chunk(val, DISTBIND_MAX_EXCHANGE_BYTES, total, data)) return malformed();
                if (total != len) return bad(DISTBIND_ERR_PEER, size_mismatch(rank, total, x.rank, len, rooted));
            }
            size_t before = got.size();
            if (!b64_decode_bytes(data, std::strlen(data), got)) return malformed();
            size_t want = std::min(kChunk, len - std::min(len, i * kChunk));
            if (got.size() - before != want) return malformed();
        }
        if (got.size() != len) return malformed();
        if (len) std::memcpy(dst, got.data(), len);
        return {};
    }

    // Run `work` (and then a fence, if asked) on a helper thread, waiting
    // until this collective's deadline (set by begin()).
    void run(const std::string &what, std::function<Result()> work, bool then_fence) {
        auto s = s_;
        std::optional<Result> res;
        try {
            res = run_bounded<Result>(
                [s, work, then_fence, what] {
                    Result r = work();
                    if (r.st == DISTBIND_OK && then_fence) {
                        int rc = s->fence();
                        if (rc != PMI2_SUCCESS)
                            r = {DISTBIND_ERR_PEER, what + " failed: the PMI2 fence failed with code " +
                                                        std::to_string(rc) +
                                                        " (a rank exited or the step is being torn down)"};
                    }
                    return r;
                },
                deadline_);
        } catch (const Failure &f) {
            broken_.remember(f);
            throw;
        } catch (const std::exception &e) {
            // What the helper thread threw (out of memory, most likely).
            broken_.fail(DISTBIND_ERR_INTERNAL, what + " failed: " + e.what());
        }
        if (!res) {
            s_->wedged = true;
            const std::string limit = seconds_text(c_.timeout_s);
            broken_.fail(DISTBIND_ERR_TIMEOUT,
                         what + " failed: not every rank arrived within " + limit + " (seen by rank " +
                             std::to_string(c_.rank) +
                             "; PMI2 cannot tell which ranks are missing: DIST_BIND_BOOTSTRAP=tcp or srun --mpi=pmix "
                             "name them)");
        }
        if (res->st != DISTBIND_OK) broken_.fail(res->st, res->msg);
    }
};

}  // namespace

std::unique_ptr<Exchange> make_pmi2(const ExchangeConfig &c) { return std::make_unique<Pmi2Exchange>(c); }

#endif

}  // namespace db::rt
