// NCCL bring-up: unique ids made by the root rank(s), carried over the
// exchange, then ncclCommInitRankConfig, or ncclCommInitRankScalable with
// one root per block of ranks when the world is large (one root serving
// thousands of ranks is what makes NCCL's own bootstrap slow there).
//
// Each id travels with its maker's status, so a root that cannot make one
// fails every rank with its message instead of leaving them waiting.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "bounded.hh"
#include "gpu.hh"
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

void *nccl_init(Exchange &, const Identity &, const Params &, const void *) {
    fail(DISTBIND_ERR_UNAVAILABLE, "this libdistbind was built without NCCL (no cuda_runtime_api.h/nccl.h)");
}
void nccl_destroy(void *) {}

#else

namespace {

struct IdRecord {
    int32_t status;
    char id[NCCL_UNIQUE_ID_BYTES];
    char msg[300];
};

}  // namespace

void *nccl_init(Exchange &ex, const Identity &id, const Params &p, const void *config) {
    std::string why;
    const Nccl *nc = nccl(why);
    // Every rank takes part in the exchange even when it cannot go on, so
    // the others learn why instead of timing out.
    IdRecord mine{};
    mine.status = nc ? DISTBIND_OK : DISTBIND_ERR_UNAVAILABLE;
    if (!nc) db::copy_out(why, mine.msg, sizeof mine.msg);

    std::vector<int> roots = nccl_roots(id.world, static_cast<int>(p.nccl_ranks_per_root));
    bool scalable = roots.size() > 1;
    if (nc && scalable && !nc->CommInitRankScalable) {
        int v = 0;
        nc->GetVersion(&v);
        mine.status = DISTBIND_ERR_UNAVAILABLE;
        db::copy_out("NCCL " + std::to_string(v) + " has no ncclCommInitRankScalable (2.23 or later needed) for " +
                         std::to_string(id.world) + " ranks; set DIST_BIND_NCCL_RANKS_PER_ROOT to " +
                         std::to_string(id.world) + " to use one root",
                     mine.msg, sizeof mine.msg);
    }
    bool am_root = std::find(roots.begin(), roots.end(), id.rank) != roots.end();
    if (mine.status == DISTBIND_OK && am_root) {
        ncclUniqueId uid;
        ncclResult_t r = nc->GetUniqueId(&uid);
        if (r != ncclSuccess) {
            mine.status = DISTBIND_ERR_NCCL;
            db::copy_out("ncclGetUniqueId: " + nc->error(r, nullptr), mine.msg, sizeof mine.msg);
        } else {
            std::memcpy(mine.id, &uid, sizeof uid);
        }
    }

    // An allgather, not a broadcast: every rank's status must reach every
    // other, or one rank's failure leaves the rest blocked inside NCCL.
    std::vector<IdRecord> all(static_cast<size_t>(id.world));
    ex.allgather(&mine, sizeof mine, all.data());
    for (size_t r = 0; r < all.size(); r++)
        if (all[r].status != DISTBIND_OK)
            fail(static_cast<distbind_status>(all[r].status),
                 "NCCL set-up failed on rank " + std::to_string(r) + ": " + std::string(all[r].msg));

    std::vector<ncclUniqueId> ids(roots.size());
    for (size_t i = 0; i < roots.size(); i++) std::memcpy(&ids[i], all[static_cast<size_t>(roots[i])].id, sizeof(ncclUniqueId));

    // The caller's config goes to NCCL as it is: it was built with the
    // caller's nccl.h, whose ncclConfig_t may be larger or smaller than
    // ours (NCCL reads its size field), so it is never copied at our size.
    // NCCL does not write to it.
    ncclComm_t comm = nullptr;
    ncclResult_t r;
    debugf("nccl: %s with %zu root(s) for %d ranks", scalable ? "ncclCommInitRankScalable" : "ncclCommInitRankConfig",
           roots.size(), id.world);
    Deadline d = Deadline::in(p.timeout_s);
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g s", p.timeout_s);
    if (!config) {
        // NCCL's defaults, blocking, as NCCL programs expect of their
        // communicator.  NCCL's own set-up has no timeout, so it runs on a
        // helper thread, on this thread's device (NCCL uses the current
        // one), waited for until the deadline.  The lambda owns all it uses.
        std::string cwhy;
        const Cudart *cu = cudart(cwhy);
        int dev = -1;
        if (cu) cu->GetDevice(&dev);
        auto done = run_bounded<std::pair<ncclResult_t, ncclComm_t>>(
            [nc, cu, dev, scalable, world = id.world, rank = id.rank, ids]() mutable {
                if (cu && dev >= 0) cu->SetDevice(dev);
                ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
                ncclComm_t c = nullptr;
                ncclResult_t res = scalable ? nc->CommInitRankScalable(&c, world, rank, static_cast<int>(ids.size()),
                                                                      ids.data(), &cfg)
                                            : nc->CommInitRankConfig(&c, world, ids[0], rank, &cfg);
                return std::make_pair(res, c);
            },
            d);
        if (!done)
            fail(DISTBIND_ERR_TIMEOUT, std::string("NCCL communicator set-up did not finish within ") + limit +
                                           " on rank " + std::to_string(id.rank) +
                                           ": another rank's NCCL failed or is stuck (NCCL_DEBUG=WARN says why); "
                                           "NCCL is left waiting on a helper thread, so end the process");
        r = done->first;
        comm = done->second;
    } else {
        ncclConfig_t *cfg = static_cast<ncclConfig_t *>(const_cast<void *>(config));
        r = scalable ? nc->CommInitRankScalable(&comm, id.world, id.rank, static_cast<int>(ids.size()), ids.data(), cfg)
                     : nc->CommInitRankConfig(&comm, id.world, ids[0], id.rank, cfg);
    }
    // A non-blocking config returns at once and NCCL connects the ranks in
    // the background; wait for it until the deadline.  (A caller's blocking
    // config returns only when NCCL is done: that wait is NCCL's.)
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
            fail(DISTBIND_ERR_TIMEOUT, std::string("NCCL communicator set-up did not finish within ") + limit +
                                           " on rank " + std::to_string(id.rank) +
                                           ", so it was aborted: another rank's NCCL failed or is stuck "
                                           "(NCCL_DEBUG=WARN says why)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (r != ncclSuccess) {
        std::string msg = nc->error(r, comm);
        if (comm) nc->CommAbort(comm);
        fail(DISTBIND_ERR_NCCL, std::string(scalable ? "ncclCommInitRankScalable" : "ncclCommInitRankConfig") + ": " + msg);
    }
    return comm;
}

void nccl_destroy(void *comm) {
    if (!comm) return;
    std::string why;
    if (const Nccl *nc = nccl(why)) nc->CommDestroy(static_cast<ncclComm_t>(comm));
}

#endif

}  // namespace db::rt::gpu
