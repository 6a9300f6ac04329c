// PMIx, as Slurm's `--mpi=pmix` serves it: the task's place (when neither
// the plugin's nor Slurm's variables are there) and the exchange (put,
// commit, fence, get).  libpmix is loaded with dlopen on first use, so the
// library runs where PMIx is not installed; pmix.h is only needed to build.
//
// Fences are started non-blocking and waited for with our own deadline;
// PMIx_Init runs on a helper thread waited for the same way, and every
// PMIx_Get is either local (PMIX_OPTIONAL, after a collecting fence) or
// bounded (PMIX_TIMEOUT).  On timeout every rank's key for that collective
// is asked for directly (PMIx's direct modex): a rank that reached the
// collective has put it, so the ranks whose key cannot be had are the ones
// that never arrived.
#include <algorithm>
#include <cmath>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include "bootstrap/pmix.hh"
#include "bootstrap/pmi_session.hh"
#include "core/rt.hh"

#ifdef DB_HAVE_PMIX
#include <pmix.h>
#endif

namespace db::rt {

bool pmix_has_server(const Env &env) { return env.get("PMIX_NAMESPACE") && env.get("PMIX_RANK"); }

#ifndef DB_HAVE_PMIX

PmixPlace pmix_place(std::shared_ptr<void> &, double) {
    fail(DISTBIND_ERR_UNAVAILABLE, "this libdistbind was built without PMIx support (pmix.h was not found)");
}
std::unique_ptr<Exchange> make_pmix(const ExchangeConfig &) {
    fail(DISTBIND_ERR_UNAVAILABLE, "this libdistbind was built without PMIx support (pmix.h was not found)");
}

#else

namespace {

const PmiLibrary kPmix{"PMIx",
                       "PMIx_Init",
                       "libpmix",
                       "libpmix2",
                       "srun --mpi=pmix",
                       {"libpmix.so.2", "libpmix.so"},
                       // GLOBAL: PMIx's own plugins resolve symbols from libpmix.
                       RTLD_NOW | RTLD_GLOBAL};

// The PMIx client: one per process (pmi_session.hh).
struct Session : PmiSession {
    decltype(&PMIx_Init) init = nullptr;
    decltype(&PMIx_Finalize) finalize = nullptr;
    decltype(&PMIx_Get) get = nullptr;
    decltype(&PMIx_Get_nb) get_nb = nullptr;
    decltype(&PMIx_Put) put = nullptr;
    decltype(&PMIx_Commit) commit = nullptr;
    decltype(&PMIx_Fence_nb) fence_nb = nullptr;
    decltype(&PMIx_Error_string) error_string = nullptr;
    decltype(&PMIx_Value_destruct) value_destruct = nullptr;
    pmix_proc_t me{};

    explicit Session(const PmiLibrary &lib) : PmiSession(lib) {
        dl_ = load_library(lib);
        need(init, "PMIx_Init");
        need(finalize, "PMIx_Finalize");
        need(get, "PMIx_Get");
        need(get_nb, "PMIx_Get_nb");
        need(put, "PMIx_Put");
        need(commit, "PMIx_Commit");
        need(fence_nb, "PMIx_Fence_nb");
        need(error_string, "PMIx_Error_string");
        need(value_destruct, "PMIx_Value_destruct");
    }
    std::string err(pmix_status_t rc) const { return error_string ? error_string(rc) : std::to_string(rc); }
};

PmiClient<Session> g_client(kPmix);
// Collective numbers are the process's, so keys of two handles never
// collide (the server still holds what an earlier handle put); handles on
// different threads share it.
std::atomic<uint32_t> g_seq{0};

std::shared_ptr<Session> session(double timeout_s) {
    auto s = g_client.get(
        timeout_s,
        [](Session &x) {
            pmix_status_t rc = x.init(&x.me, nullptr, 0);
            return rc == PMIX_SUCCESS ? PmiStarted{true, ""} : PmiStarted{false, "PMIx_Init failed: " + x.err(rc)};
        },
        [](Session &x) { x.finalize(nullptr, 0); });
    debugf("pmix: this process is %s rank %u", s->me.nspace, s->me.rank);
    return s;
}

void load_key(char *dst, const char *key) {
    std::memset(dst, 0, PMIX_MAX_KEYLEN + 1);
    std::strncpy(dst, key, PMIX_MAX_KEYLEN);
}

pmix_proc_t proc_of(const Session &s, uint32_t rank) {
    pmix_proc_t p{};
    std::memcpy(p.nspace, s.me.nspace, sizeof p.nspace);
    p.rank = rank;
    return p;
}

// An unsigned value of a job or process key, whatever integer type the
// server chose.  Usually in PMIx's local copy; if the client has to ask the
// server, PMIX_TIMEOUT bounds the wait.
uint64_t get_uint(Session &s, uint32_t rank, const char *key, double timeout_s) {
    pmix_proc_t p = proc_of(s, rank);
    pmix_value_t *v = nullptr;
    pmix_info_t info[1];
    std::memset(info, 0, sizeof info);
    load_key(info[0].key, PMIX_TIMEOUT);
    info[0].value.type = PMIX_INT;
    info[0].value.data.integer = static_cast<int>(std::ceil(timeout_s));
    pmix_status_t rc = s.get(&p, key, info, 1, &v);
    if (rc != PMIX_SUCCESS || !v) fail(DISTBIND_ERR_UNAVAILABLE, std::string("PMIx has no ") + key + ": " + s.err(rc));
    uint64_t out = 0;
    bool ok = true;
    switch (v->type) {
    case PMIX_UINT8: out = v->data.uint8; break;
    case PMIX_UINT16: out = v->data.uint16; break;
    case PMIX_UINT32: out = v->data.uint32; break;
    case PMIX_UINT64: out = v->data.uint64; break;
    case PMIX_SIZE: out = v->data.size; break;
    case PMIX_INT:
        ok = v->data.integer >= 0;
        out = static_cast<uint64_t>(v->data.integer);
        break;
    case PMIX_PROC_RANK: out = v->data.rank; break;
    default: ok = false;
    }
    s.value_destruct(v);
    free(v);
    if (!ok || out > (1u << 24)) fail(DISTBIND_ERR_UNAVAILABLE, std::string("PMIx gave an unusable ") + key);
    return out;
}

// One non-blocking PMIx call.  PMIx may keep pointers to what it was given
// until it calls back, which can be after the caller gave up waiting: so
// the arguments live here, and the callback holds a reference.
struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    pmix_status_t rc = PMIX_SUCCESS;
    bool found = false;
    pmix_proc_t proc{};
    char key[PMIX_MAX_KEYLEN + 1] = "";
    pmix_info_t info[1];
    // A get's value, copied in the callback (PMIx owns it only until then).
    bool is_bytes = false;
    std::string bytes;

    void finish(pmix_status_t st, bool f = false) {
        std::lock_guard<std::mutex> lock(mu);
        done = true;
        rc = st;
        found = f;
        cv.notify_all();
    }
    bool wait_until(Clock::time_point t) {
        std::unique_lock<std::mutex> lock(mu);
        return cv.wait_until(lock, t, [&] { return done; });
    }
};

// The callbacks hold a reference so a late callback after a timeout finds
// its waiter alive.
void fence_done(pmix_status_t st, void *cbdata) {
    auto *w = static_cast<std::shared_ptr<Waiter> *>(cbdata);
    (*w)->finish(st);
    delete w;
}

void get_done(pmix_status_t st, pmix_value_t *, void *cbdata) {
    auto *w = static_cast<std::shared_ptr<Waiter> *>(cbdata);
    (*w)->finish(st, st == PMIX_SUCCESS);
    delete w;
}

void get_value_done(pmix_status_t st, pmix_value_t *v, void *cbdata) {
    auto *w = static_cast<std::shared_ptr<Waiter> *>(cbdata);
    {
        std::lock_guard<std::mutex> lock((*w)->mu);
        (*w)->is_bytes = st == PMIX_SUCCESS && v && v->type == PMIX_BYTE_OBJECT;
        if ((*w)->is_bytes && v->data.bo.size) (*w)->bytes.assign(v->data.bo.bytes, v->data.bo.size);
    }
    (*w)->finish(st, st == PMIX_SUCCESS && v);
    delete w;
}

class PmixExchange final : public Exchange {
  public:
    explicit PmixExchange(const ExchangeConfig &c) : c_(c), s_(session(c.timeout_s)) {
        uint32_t world = static_cast<uint32_t>(get_uint(*s_, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, c.timeout_s));
        check_pmi_place(kPmix, static_cast<int>(s_->me.rank), static_cast<int>(world), c);
        barrier_named("the set-up check");
    }

    const char *name() const override { return "pmix"; }

    void barrier() override { barrier_named(nullptr); }

    void broadcast(void *buf, size_t len, int root) override {
        std::string what = begin("broadcast");
        put(c_.rank == root ? buf : nullptr, c_.rank == root ? len : 0);
        fence(what);
        if (c_.rank != root) fetch(what, root, buf, len, deadline(), true);
    }

    void allgather(const void *send, size_t len, void *recv) override {
        std::string what = begin("allgather");
        put(send, len);
        fence(what);
        const Clock::time_point until = deadline();
        for (int r = 0; r < c_.world; r++) {
            uint8_t *dst = static_cast<uint8_t *>(recv) + static_cast<size_t>(r) * len;
            if (r == c_.rank) {
                if (len) std::memmove(dst, send, len);
            } else {
                fetch(what, r, dst, len, until, false);
            }
        }
    }

  private:
    ExchangeConfig c_;
    std::shared_ptr<Session> s_;
    uint32_t seq_ = 0;  // this collective's number (g_seq)
    Broken broken_;

    std::string begin(const char *kind) {
        broken_.check();
        seq_ = ++g_seq;
        return collective_name(kind, seq_);
    }

    std::string key() const { return "distbind." + std::to_string(seq_); }

    Clock::time_point deadline() const { return Clock::now() + to_duration(c_.timeout_s); }

    [[noreturn]] void broken(distbind_status st, const std::string &msg) { broken_.fail(st, msg); }

    void barrier_named(const char *name) {
        std::string what = begin("barrier");
        if (name) what = name;
        put(nullptr, 0);
        fence(what);
    }

    // Every collective puts a key, also when it carries nothing: it is the
    // trace that this rank arrived.
    void put(const void *p, size_t n) {
        pmix_value_t v{};
        v.type = PMIX_BYTE_OBJECT;
        v.data.bo.bytes = const_cast<char *>(static_cast<const char *>(p));
        v.data.bo.size = n;
        std::string k = key();
        pmix_status_t rc = s_->put(PMIX_GLOBAL, k.c_str(), &v);
        if (rc == PMIX_SUCCESS) rc = s_->commit();
        // SYSTEM, not UNAVAILABLE: in auto mode UNAVAILABLE means "try the
        // next bootstrap", which is only safe before the first collective.
        if (rc != PMIX_SUCCESS) broken(DISTBIND_ERR_SYSTEM, "PMIx_Put/Commit failed: " + s_->err(rc));
    }

    // Always a collecting fence: Slurm 22.05's fence without data
    // collection lets a node through before every other node has arrived,
    // so only a collecting one is a barrier there.
    void fence(const std::string &what) {
        auto w = std::make_shared<Waiter>();
        std::memset(w->info, 0, sizeof w->info);
        load_key(w->info[0].key, PMIX_COLLECT_DATA);
        w->info[0].value.type = PMIX_BOOL;
        w->info[0].value.data.flag = true;
        w->proc = proc_of(*s_, PMIX_RANK_WILDCARD);
        auto *hold = new std::shared_ptr<Waiter>(w);
        pmix_status_t rc = s_->fence_nb(&w->proc, 1, w->info, 1, fence_done, hold);
        if (rc == PMIX_OPERATION_SUCCEEDED) {
            delete hold;
            return;
        }
        if (rc != PMIX_SUCCESS) {
            delete hold;
            broken(DISTBIND_ERR_SYSTEM, what + " failed: PMIx_Fence: " + s_->err(rc));
        }
        if (!w->wait_until(deadline())) {
            s_->wedged = true;
            broken(DISTBIND_ERR_TIMEOUT,
                   what + " failed: " + absent() + " (seen by rank " + std::to_string(c_.rank) + ", PMIx)");
        }
        if (w->rc != PMIX_SUCCESS)
            broken(DISTBIND_ERR_PEER, what + " failed: the PMIx fence failed: " + s_->err(w->rc) +
                                          " (a rank exited or the step is being torn down)");
    }

    // Who never arrived: ask every other rank for this collective's key,
    // all at once, for a short while.
    std::string absent() {
        std::string k = key();
        std::vector<std::shared_ptr<Waiter> > asks;
        for (int r = 0; r < c_.world; r++) {
            auto w = std::make_shared<Waiter>();
            asks.push_back(w);
            if (r == c_.rank) {
                w->finish(PMIX_SUCCESS, true);
                continue;
            }
            std::memset(w->info, 0, sizeof w->info);
            load_key(w->info[0].key, PMIX_TIMEOUT);
            w->info[0].value.type = PMIX_INT;
            w->info[0].value.data.integer = 2;
            w->proc = proc_of(*s_, static_cast<uint32_t>(r));
            load_key(w->key, k.c_str());
            auto *hold = new std::shared_ptr<Waiter>(w);
            if (s_->get_nb(&w->proc, w->key, w->info, 1, get_done, hold) != PMIX_SUCCESS) {
                delete hold;
                w->finish(PMIX_ERROR);
            }
        }
        auto until = Clock::now() + std::chrono::seconds(3);
        std::vector<int> missing;
        for (int r = 0; r < c_.world; r++)
            if (!asks[r]->wait_until(until) || !asks[r]->found) missing.push_back(r);
        const std::string limit = seconds_text(c_.timeout_s);
        if (missing.empty()) return "the PMIx fence did not complete within " + limit;
        return ranks_text(missing) + " did not arrive within " + limit;
    }

    // After a collecting fence PMIx 3 and 4 (Slurm's pmix_v3/v4, Debian 12)
    // have every rank's data in the client's own copy: PMIX_OPTIONAL reads
    // it there without asking the server (whose direct modex has no bound
    // of its own).  PMIx 5 (Slurm's pmix_v5, Debian 13) leaves the fence's
    // data with the node's server and hands it over only when asked: then
    // the local copy says PMIX_ERR_NOT_FOUND, and the server is asked,
    // bounded by PMIX_TIMEOUT and by this collective's deadline.
    void fetch(const std::string &what, int rank, void *dst, size_t len, Clock::time_point until, bool rooted) {
        pmix_proc_t p = proc_of(*s_, static_cast<uint32_t>(rank));
        pmix_value_t *v = nullptr;
        std::string k = key();
        pmix_info_t info[1];
        std::memset(info, 0, sizeof info);
        load_key(info[0].key, PMIX_OPTIONAL);
        info[0].value.type = PMIX_BOOL;
        info[0].value.data.flag = true;
        pmix_status_t rc = s_->get(&p, k.c_str(), info, 1, &v);
        if (rc == PMIX_SUCCESS && v) {
            const bool bytes = v->type == PMIX_BYTE_OBJECT;
            const bool ok = take(bytes, bytes ? v->data.bo.bytes : nullptr, bytes ? v->data.bo.size : 0, dst, len);
            const size_t got = bytes ? v->data.bo.size : 0;
            s_->value_destruct(v);
            free(v);
            if (!ok) mismatch(what, rank, got, len, rooted);
            return;
        }
        if (rc != PMIX_ERR_NOT_FOUND)
            broken(DISTBIND_ERR_PEER,
                   what + " failed: PMIx has no data from rank " + std::to_string(rank) + ": " + s_->err(rc));
        auto w = std::make_shared<Waiter>();
        std::memset(w->info, 0, sizeof w->info);
        load_key(w->info[0].key, PMIX_TIMEOUT);
        w->info[0].value.type = PMIX_INT;
        const double left = std::chrono::duration<double>(until - Clock::now()).count();
        w->info[0].value.data.integer = std::max(1, static_cast<int>(std::ceil(left)));
        w->proc = p;
        load_key(w->key, k.c_str());
        auto *hold = new std::shared_ptr<Waiter>(w);
        rc = s_->get_nb(&w->proc, w->key, w->info, 1, get_value_done, hold);
        if (rc != PMIX_SUCCESS) {
            delete hold;
            broken(DISTBIND_ERR_PEER,
                   what + " failed: PMIx has no data from rank " + std::to_string(rank) + ": " + s_->err(rc));
        }
        if (!w->wait_until(until)) {
            s_->wedged = true;  // its callback may still come
            const std::string limit = seconds_text(c_.timeout_s);
            broken(DISTBIND_ERR_TIMEOUT, what + " failed: the PMIx server did not hand over rank " +
                                             std::to_string(rank) + "'s data within " + limit + " (seen by rank " +
                                             std::to_string(c_.rank) + ")");
        }
        if (!w->found)
            broken(DISTBIND_ERR_PEER,
                   what + " failed: PMIx has no data from rank " + std::to_string(rank) + ": " + s_->err(w->rc));
        std::unique_lock<std::mutex> lock(w->mu);
        if (!take(w->is_bytes, w->bytes.data(), w->bytes.size(), dst, len)) {
            const size_t got = w->is_bytes ? w->bytes.size() : 0;
            lock.unlock();
            mismatch(what, rank, got, len, rooted);
        }
    }

    static bool take(bool bytes, const char *data, size_t size, void *dst, size_t len) {
        if (!bytes || size != len) return false;
        if (len) std::memcpy(dst, data, len);
        return true;
    }

    [[noreturn]] void mismatch(const std::string &what, int rank, size_t got, size_t len, bool rooted) {
        broken(DISTBIND_ERR_PEER, what + " failed: " + size_mismatch(rank, got, c_.rank, len, rooted));
    }
};

}  // namespace

PmixPlace pmix_place(std::shared_ptr<void> &keep, double timeout_s) {
    auto s = session(timeout_s);
    keep = s;
    PmixPlace p{};
    p.rank = static_cast<int>(s->me.rank);
    p.world = static_cast<int>(get_uint(*s, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, timeout_s));
    p.local_world = static_cast<int>(get_uint(*s, PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, timeout_s));
    p.local_rank = static_cast<int>(get_uint(*s, s->me.rank, PMIX_LOCAL_RANK, timeout_s));
    p.node_rank = static_cast<int>(get_uint(*s, s->me.rank, PMIX_NODEID, timeout_s));
    return p;
}

std::unique_ptr<Exchange> make_pmix(const ExchangeConfig &c) { return std::make_unique<PmixExchange>(c); }

#endif

}  // namespace db::rt
