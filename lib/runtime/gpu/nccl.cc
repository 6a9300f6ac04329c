// NCCL bring-up: unique ids made by the root rank(s), carried over the
// exchange, then ncclCommInitRankConfig, or ncclCommInitRankScalable with
// one root per block of ranks when the world is large (one root serving
// thousands of ranks is what makes NCCL's own bootstrap slow there).
//
// What travels: one status per rank (so a rank that cannot go on stops the
// others before they enter NCCL, with its message broadcast only then),
// and each root's id.  NCCL's set-up itself always runs on a helper thread
// set to the rank's own device and is waited for at most the timeout,
// whatever the config or NCCL_COMM_BLOCKING make of its blocking mode.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include "core/bounded.hh"
#include "gpu/agree.hh"
#include "gpu/gpu.hh"
#include "gpu/loaders.hh"
#include "text.hh"

namespace db::rt::gpu {

std::vector<int> nccl_roots(int world, int ranks_per_root) {
    int n = world > ranks_per_root ? (world + ranks_per_root - 1) / ranks_per_root : 1;
    // Root i serves an equal share, the first world % n roots one more
    // (the split NCCL itself makes), and its first rank makes its id.
    std::vector<int> out;
    for (int i = 0; i < n; i++) out.push_back(i * (world / n) + std::min(i, world % n));
    return out;
}

#ifndef DB_HAVE_CUDA

void *nccl_init(Exchange &, const Identity &, const Params &, const void *, int, bool *) {
    fail(DISTBIND_ERR_UNAVAILABLE, "this libdistbind was built without NCCL (no cuda_runtime_api.h/nccl.h)");
}
void nccl_destroy(void *) {}
void nccl_abort(void *) {}

#else

namespace {

// The config NCCL gets, owned by the helper thread that may outlive the
// call: yours copied at your nccl.h's size (its `size` field; NCCL reads
// no further), never at this library's.  Size, magic and blocking sit at
// the same place in every ncclConfig_t.
std::shared_ptr<ncclConfig_t> make_config(const void *config, int blocking) {
    size_t head = offsetof(ncclConfig_t, blocking) + sizeof(int);
    if (!config) {
        auto c = std::make_shared<ncclConfig_t>();
        *c = NCCL_CONFIG_INITIALIZER;
        if (blocking >= 0) c->blocking = blocking;
        return c;
    }
    const auto *in = static_cast<const ncclConfig_t *>(config);
    if (in->magic != 0xcafebeef)
        fail(DISTBIND_ERR_ARG, "distbind_nccl_init: config was not made with NCCL_CONFIG_INITIALIZER");
    if (in->size < head || in->size > 65536)
        fail(DISTBIND_ERR_ARG, "distbind_nccl_init: config size " + std::to_string(in->size) +
                                   " is not an ncclConfig_t's (made with NCCL_CONFIG_INITIALIZER?)");
    size_t n = std::max(in->size, sizeof(ncclConfig_t));
    std::shared_ptr<unsigned char[]> raw(new unsigned char[n]());
    std::memcpy(raw.get(), config, in->size);
    return std::shared_ptr<ncclConfig_t>(raw, reinterpret_cast<ncclConfig_t *>(raw.get()));
}

// Whether NCCL will make this config's communicator non-blocking: the
// process's NCCL_COMM_BLOCKING=0|1, when set, overrides the config either
// way (NCCL's own rule), else blocking unless the config says 0.
bool will_be_nonblocking(const ncclConfig_t &c) {
    const char *env = std::getenv("NCCL_COMM_BLOCKING");
    if (env && (!std::strcmp(env, "0") || !std::strcmp(env, "1"))) {
        if ((env[0] == '0') != (c.blocking == 0))
            debugf("nccl: NCCL_COMM_BLOCKING=%s in the environment overrides the config's blocking mode", env);
        return env[0] == '0';
    }
    return c.blocking == 0;
}

struct Started {
    ncclResult_t r;
    ncclComm_t comm;
    std::string cuda;  // why the rank's device could not be made current
};

// NCCL's set-up on a helper thread set to the rank's own device (NCCL takes
// the calling thread's, and a new thread starts on device 0), waited for
// until the deadline; then, for a non-blocking communicator, polled.
ncclComm_t start_comm(const Nccl *nc, const Identity &id, const Params &p, std::shared_ptr<ncclConfig_t> cfg,
                      std::vector<ncclUniqueId> ids, bool *nonblocking) {
    bool scalable = ids.size() > 1;
    const char *fn = scalable ? "ncclCommInitRankScalable" : "ncclCommInitRankConfig";
    std::string why;
    const Cudart *cu = cudart(why);
    Deadline d = Deadline::in(p.timeout_s);
    debugf("nccl: %s with %zu root(s) for %d ranks on device %d", fn, ids.size(), id.world, id.device);
    auto done = run_bounded<Started>(
        [nc, cu, cfg, ids, dev = id.device, world = id.world, rank = id.rank, scalable]() mutable {
            Started s{ncclSuccess, nullptr, ""};
            cudaError_t e = cu ? cu->SetDevice(dev) : cudaErrorInsufficientDriver;
            if (e != cudaSuccess) {
                s.r = ncclUnhandledCudaError;
                s.cuda = "cudaSetDevice(" + std::to_string(dev) +
                         ") on NCCL's set-up thread: " + (cu ? cu->error(e) : std::string("no libcudart"));
                return s;
            }
            s.r = scalable ? nc->CommInitRankScalable(&s.comm, world, rank, static_cast<int>(ids.size()), ids.data(),
                                                      cfg.get())
                           : nc->CommInitRankConfig(&s.comm, world, ids[0], rank, cfg.get());
            return s;
        },
        d);
    if (!done)
        fail(DISTBIND_ERR_TIMEOUT, "NCCL communicator set-up did not finish within " + seconds_text(p.timeout_s) +
                                       " on rank " + std::to_string(id.rank) +
                                       ": another rank's NCCL failed or is stuck (NCCL_DEBUG=WARN says why); NCCL "
                                       "is left waiting on a helper thread, so end the process");
    if (!done->cuda.empty()) fail(DISTBIND_ERR_DEVICE, done->cuda);
    ncclResult_t r = done->r;
    ncclComm_t comm = done->comm;
    *nonblocking = r == ncclInProgress || will_be_nonblocking(*cfg);
    // A non-blocking communicator connects the ranks in the background.
    if (r == ncclInProgress && !comm) r = ncclInternalError;
    while (r == ncclInProgress) {
        ncclResult_t state = ncclInProgress;
        ncclResult_t q = nc->CommGetAsyncError(comm, &state);
        if (q != ncclSuccess || state != ncclInProgress) {
            r = q != ncclSuccess ? q : state;
            break;
        }
        if (d.passed()) {
            nc->CommAbort(comm);
            fail(DISTBIND_ERR_TIMEOUT, "NCCL communicator set-up did not finish within " + seconds_text(p.timeout_s) +
                                           " on rank " + std::to_string(id.rank) +
                                           ", so it was aborted: another rank's NCCL failed or is stuck "
                                           "(NCCL_DEBUG=WARN says why)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (r != ncclSuccess) {
        std::string msg = nc->error(r, comm);
        if (comm) nc->CommAbort(comm);
        fail(DISTBIND_ERR_NCCL, std::string(fn) + ": " + msg);
    }
    return comm;
}

}  // namespace

void *nccl_init(Exchange &ex, const Identity &id, const Params &p, const void *config, int blocking,
                bool *nonblocking) {
    std::string why;
    const Nccl *nc = nccl(why);
    distbind_status st = nc ? DISTBIND_OK : DISTBIND_ERR_UNAVAILABLE;
    std::vector<int> roots = nccl_roots(id.world, static_cast<int>(p.nccl_ranks_per_root));
    if (nc && roots.size() > 1 && !nc->CommInitRankScalable) {
        int v = 0;
        nc->GetVersion(&v);
        st = DISTBIND_ERR_UNAVAILABLE;
        why = "NCCL " + std::to_string(v) + " has no ncclCommInitRankScalable (2.23 or later needed) for " +
              std::to_string(id.world) + " ranks; set DIST_BIND_NCCL_RANKS_PER_ROOT to " + std::to_string(id.world) +
              " to use one root";
    }
    std::shared_ptr<ncclConfig_t> cfg;
    if (st == DISTBIND_OK) {
        try {
            cfg = make_config(config, blocking);
        } catch (const Failure &f) {
            st = f.status;
            why = f.what();
        }
    }
    ncclUniqueId uid{};
    bool am_root = std::find(roots.begin(), roots.end(), id.rank) != roots.end();
    if (st == DISTBIND_OK && am_root) {
        ncclResult_t r = nc->GetUniqueId(&uid);
        if (r != ncclSuccess) {
            st = DISTBIND_ERR_NCCL;
            why = "ncclGetUniqueId: " + nc->error(r, nullptr);
        }
    }

    return start_comm(nc, id, p, cfg, share_ids(ex, id, roots, st, why, uid), nonblocking);
}

std::vector<ncclUniqueId> share_ids(Exchange &ex, const Identity &id, const std::vector<int> &roots, distbind_status st,
                                    const std::string &why, const ncclUniqueId &uid) {
    // Every rank takes part even when it cannot go on, so the others learn
    // why instead of waiting inside NCCL for it.
    int32_t mine = st;
    std::vector<int32_t> all(static_cast<size_t>(id.world));
    ex.allgather(&mine, sizeof mine, all.data());
    std::vector<distbind_status> sts(all.size());
    for (size_t r = 0; r < all.size(); r++) sts[r] = peer_status(all[r], static_cast<int>(r));
    fail_with_first(ex, sts, make_detail(id.host, "", "", st == DISTBIND_OK ? "" : why), "NCCL set-up failed: ");

    // Each root's id, in root order (the order NCCL splits the ranks in).
    std::vector<ncclUniqueId> ids(roots.size());
    for (size_t i = 0; i < roots.size(); i++) {
        ncclUniqueId x{};
        if (id.rank == roots[i]) x = uid;
        ex.broadcast(&x, sizeof x, roots[i]);
        ids[i] = x;
    }
    return ids;
}

void nccl_destroy(void *comm) {
    if (!comm) return;
    std::string why;
    if (const Nccl *nc = nccl(why)) nc->CommDestroy(static_cast<ncclComm_t>(comm));
}

void nccl_abort(void *comm) {
    if (!comm) return;
    std::string why;
    if (const Nccl *nc = nccl(why)) nc->CommAbort(static_cast<ncclComm_t>(comm));
}

#endif

}  // namespace db::rt::gpu
