// PMI2, as Slurm's `--mpi=pmi2` serves it, through Slurm's own libpmi2
// (loaded with dlopen, so the library runs where it is not installed).
//
// PMI2's key-value store holds short strings, so bytes travel as URL-safe
// base64 (PMI2's wire format reserves ';' and '='), cut into chunks.
// PMI2 calls block with no timeout of their own: each collective runs on a
// helper thread and the caller waits for it with DIST_BIND_TIMEOUT.  PMI2
// cannot say who is missing from a fence, so a timeout says so and points
// to the bootstraps that can.
#include <dlfcn.h>

#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "rt.hh"

#ifdef DB_HAVE_PMI2
#include <slurm/pmi2.h>
#endif

namespace db::rt {

bool pmi2_has_server(const Env &env) { return env.get("PMI_FD") != nullptr; }

// URL-safe base64 without padding: PMI2's wire format reserves ';' and '='.
static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string b64_encode_bytes(const uint8_t *p, size_t n) {
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = static_cast<uint32_t>(p[i]) << 16;
        if (i + 1 < n) v |= static_cast<uint32_t>(p[i + 1]) << 8;
        if (i + 2 < n) v |= p[i + 2];
        out += kB64[(v >> 18) & 63];
        out += kB64[(v >> 12) & 63];
        if (i + 1 < n) out += kB64[(v >> 6) & 63];
        if (i + 2 < n) out += kB64[v & 63];
    }
    return out;
}

bool b64_decode_bytes(const char *s, size_t n, std::vector<uint8_t> &out) {
    auto val = [](char c) -> int {
        const char *at = std::strchr(kB64, c);
        return c && at ? static_cast<int>(at - kB64) : -1;
    };
    if (n % 4 == 1) return false;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        size_t m = std::min<size_t>(4, n - i);
        for (size_t j = 0; j < 4; j++) {
            int d = j < m ? val(s[i + j]) : 0;
            if (d < 0) return false;
            v = v << 6 | static_cast<uint32_t>(d);
        }
        out.push_back(static_cast<uint8_t>(v >> 16));
        if (m > 2) out.push_back(static_cast<uint8_t>(v >> 8));
        if (m > 3) out.push_back(static_cast<uint8_t>(v));
    }
    return true;
}


#ifndef DB_HAVE_PMI2

std::unique_ptr<Exchange> make_pmi2(const ExchangeConfig &) {
    fail(DISTBIND_ERR_UNAVAILABLE, "this libdistbind was built without PMI2 support (slurm/pmi2.h was not found)");
}

#else

namespace {

// Raw bytes per chunk: 4/3 of it stays well under PMI2_MAX_VALLEN.
constexpr size_t kChunk = 600;

struct Session {
    void *dl = nullptr;
    decltype(&PMI2_Init) init = nullptr;
    decltype(&PMI2_Finalize) finalize = nullptr;
    decltype(&PMI2_Job_GetId) job_id = nullptr;
    decltype(&PMI2_KVS_Put) put = nullptr;
    decltype(&PMI2_KVS_Fence) fence = nullptr;
    decltype(&PMI2_KVS_Get) get = nullptr;
    int rank = -1, size = 0;
    char job[256] = "";
    bool wedged = false;
    // Collective numbers are the process's, so keys of two handles never collide.
    uint32_t seq = 0;  // a helper thread may still be inside PMI2
    ~Session() {
        if (finalize && !wedged) finalize();
    }
};

template <typename T>
void sym(void *dl, T &out, const char *name) {
    out = reinterpret_cast<T>(dlsym(dl, name));
    if (!out) fail(DISTBIND_ERR_UNAVAILABLE, std::string("libpmi2 has no ") + name);
}

std::mutex g_mu;
std::weak_ptr<Session> g_session;

// One PMI2 client per process, shared by its handles.
std::shared_ptr<Session> open_session() {
    std::lock_guard<std::mutex> lock(g_mu);
    if (auto s = g_session.lock()) return s;
    auto s = std::make_shared<Session>();
    s->dl = dlopen("libpmi2.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!s->dl) s->dl = dlopen("libpmi2.so", RTLD_NOW | RTLD_LOCAL);
    if (!s->dl)
        fail(DISTBIND_ERR_UNAVAILABLE, std::string("cannot load Slurm's libpmi2 (install libpmi2-0 or use "
                                                   "DIST_BIND_BOOTSTRAP=tcp): ") + dlerror());
    sym(s->dl, s->init, "PMI2_Init");
    sym(s->dl, s->finalize, "PMI2_Finalize");
    sym(s->dl, s->job_id, "PMI2_Job_GetId");
    sym(s->dl, s->put, "PMI2_KVS_Put");
    sym(s->dl, s->fence, "PMI2_KVS_Fence");
    sym(s->dl, s->get, "PMI2_KVS_Get");
    int spawned = 0, appnum = 0;
    int rc = s->init(&spawned, &s->size, &s->rank, &appnum);
    if (rc != PMI2_SUCCESS) {
        s->finalize = nullptr;
        fail(DISTBIND_ERR_UNAVAILABLE, "PMI2_Init failed with code " + std::to_string(rc) +
                                           " (is this task started by srun --mpi=pmi2?)");
    }
    rc = s->job_id(s->job, sizeof s->job);
    if (rc != PMI2_SUCCESS) fail(DISTBIND_ERR_UNAVAILABLE, "PMI2_Job_GetId failed with code " + std::to_string(rc));
    debugf("pmi2: connected as rank %d of %d in %s", s->rank, s->size, s->job);
    g_session = s;
    return s;
}

class Pmi2Exchange final : public Exchange {
  public:
    explicit Pmi2Exchange(const ExchangeConfig &c) : c_(c), s_(open_session()) {
        if (s_->rank != c.rank || s_->size != c.world)
            fail(DISTBIND_ERR_ENV, "this task is rank " + std::to_string(c.rank) + " of " + std::to_string(c.world) +
                                       " by its variables, but PMI2 says rank " + std::to_string(s_->rank) + " of " +
                                       std::to_string(s_->size) + ": the variables do not belong to this step");
        begin("barrier");
        run("the set-up check", [] { return Result(); }, true);
    }

    const char *name() const override { return "pmi2"; }

    void barrier() override {
        run(begin("barrier"), [] { return Result(); }, true);
    }

    void broadcast(void *buf, size_t len, int root) override {
        std::string what = begin("broadcast");
        if (c_.rank == root) {
            Bytes mine = copy(buf, len);
            Ctx x = ctx();
            run(what, [x, mine] { return put_all(x, *mine); }, true);
            return;
        }
        run(what, [] { return Result(); }, true);
        Bytes got = std::make_shared<std::vector<uint8_t>>(len);
        Ctx x = ctx();
        run(what, [x, what, root, got] { return fetch(x, what, root, got->data(), got->size()); }, false);
        if (len) std::memcpy(buf, got->data(), len);
    }

    void allgather(const void *send, size_t len, void *recv) override {
        std::string what = begin("allgather");
        Bytes mine = copy(send, len);
        Ctx x = ctx();
        run(what, [x, mine] { return put_all(x, *mine); }, true);
        Bytes all = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(c_.world) * len);
        run(what, [x, what, all, len] {
            for (int r = 0; r < x.world; r++) {
                if (r == x.rank) continue;
                Result e = fetch(x, what, r, all->data() + static_cast<size_t>(r) * len, len);
                if (e.st != DISTBIND_OK) return e;
            }
            return Result();
        }, false);
        if (len) {
            std::memcpy(static_cast<uint8_t *>(recv), all->data(), all->size());
            std::memmove(static_cast<uint8_t *>(recv) + static_cast<size_t>(c_.rank) * len, send, len);
        }
    }

  private:
    // What a helper thread works on is its own: after a timeout the caller
    // is gone, the thread may not be.
    using Bytes = std::shared_ptr<std::vector<uint8_t>>;
    struct Result {
        distbind_status st = DISTBIND_OK;
        std::string msg;
    };

    ExchangeConfig c_;
    std::shared_ptr<Session> s_;
    uint32_t seq_ = 0;  // this collective's number (from the session)
    std::string broken_;

    static Bytes copy(const void *p, size_t n) {
        const uint8_t *b = static_cast<const uint8_t *>(p);
        return std::make_shared<std::vector<uint8_t>>(b, b + n);
    }

    std::string begin(const char *kind) {
        if (!broken_.empty()) fail(DISTBIND_ERR_STATE, "the exchange failed earlier: " + broken_);
        seq_ = ++s_->seq;
        return std::string(kind) + " #" + std::to_string(seq_);
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
                return {DISTBIND_ERR_UNAVAILABLE, "PMI2_KVS_Put failed with code " + std::to_string(rc)};
        }
        return {};
    }

    static Result fetch(const Ctx &x, const std::string &what, int rank, uint8_t *dst, size_t len) {
        std::vector<uint8_t> got;
        size_t total = 0;
        auto bad = [&](distbind_status st, const std::string &m) { return Result{st, what + " failed: " + m}; };
        for (size_t i = 0;; i++) {
            char val[PMI2_MAX_VALLEN + 1] = "";
            int vallen = 0;
            int rc = x.s->get(x.s->job, rank, key(x.seq, rank, i).c_str(), val, PMI2_MAX_VALLEN, &vallen);
            if (rc != PMI2_SUCCESS)
                return bad(DISTBIND_ERR_PEER, "PMI2 has no data from rank " + std::to_string(rank) + " (code " +
                                                  std::to_string(rc) + ")");
            const char *data = val;
            if (i == 0) {
                const char *comma = std::strchr(val, ',');
                if (!comma) return bad(DISTBIND_ERR_PEER, "rank " + std::to_string(rank) + " sent malformed data");
                total = std::strtoull(val, nullptr, 10);
                data = comma + 1;
                if (total != len)
                    return bad(DISTBIND_ERR_PEER, "rank " + std::to_string(rank) + " passed " + std::to_string(total) +
                                                      " bytes but rank " + std::to_string(x.rank) + " expected " +
                                                      std::to_string(len) + " (every rank must pass the same size and root)");
            }
            if (!b64_decode_bytes(data, std::strlen(data), got))
                return bad(DISTBIND_ERR_PEER, "rank " + std::to_string(rank) + " sent malformed data");
            if (got.size() >= total) break;
        }
        if (got.size() != len) return bad(DISTBIND_ERR_PEER, "rank " + std::to_string(rank) + " sent malformed data");
        if (len) std::memcpy(dst, got.data(), len);
        return {};
    }

    // Run `work` (and then a fence, if asked) on a helper thread, waiting
    // at most DIST_BIND_TIMEOUT.
    void run(const std::string &what, std::function<Result()> work, bool then_fence) {
        struct State {
            std::mutex mu;
            std::condition_variable cv;
            bool done = false;
            Result res;
        };
        auto st = std::make_shared<State>();
        auto s = s_;
        std::thread([st, s, work, then_fence, what] {
            Result res = work();
            if (res.st == DISTBIND_OK && then_fence) {
                int rc = s->fence();
                if (rc != PMI2_SUCCESS)
                    res = {DISTBIND_ERR_PEER, what + " failed: the PMI2 fence failed with code " + std::to_string(rc) +
                                                  " (a rank exited or the step is being torn down)"};
            }
            std::lock_guard<std::mutex> lock(st->mu);
            st->done = true;
            st->res = res;
            st->cv.notify_all();
        }).detach();
        std::unique_lock<std::mutex> lock(st->mu);
        auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c_.timeout_s));
        if (!st->cv.wait_until(lock, until, [&] { return st->done; })) {
            s_->wedged = true;
            char buf[32];
            std::snprintf(buf, sizeof buf, "%g s", c_.timeout_s);
            broken_ = what + " failed: not every rank arrived within " + buf + " (seen by rank " +
                      std::to_string(c_.rank) +
                      "; PMI2 cannot tell which ranks are missing: DIST_BIND_BOOTSTRAP=tcp or srun --mpi=pmix name them)";
            fail(DISTBIND_ERR_TIMEOUT, broken_);
        }
        if (st->res.st != DISTBIND_OK) {
            broken_ = st->res.msg;
            fail(st->res.st, st->res.msg);
        }
    }
};

}  // namespace

std::unique_ptr<Exchange> make_pmi2(const ExchangeConfig &c) { return std::make_unique<Pmi2Exchange>(c); }

#endif

}  // namespace db::rt
