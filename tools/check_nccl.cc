// dist-bind-check's GPU part: an NCCL all-reduce over every rank, through
// libdistbind's own device choice and communicator, its result checked.
//
// Every rank takes every collective step, also when it cannot go on: a rank
// that failed says so in an allgather before the next all-reduce, so no
// rank is left inside NCCL waiting for one that is not coming.  Waits for
// NCCL and CUDA are polled against DIST_BIND_TIMEOUT, and a communicator
// that does not finish is aborted.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "check.hh"
#include "gpu.hh"

namespace dbcheck {

using namespace db::rt;

#ifdef DB_HAVE_CUDA

bool nccl_built() { return true; }

namespace {

// DIST_BIND_TIMEOUT, as the library read it (distbind_init has checked it).
double wait_limit() {
    const char *v = std::getenv("DIST_BIND_TIMEOUT");
    try {
        if (v) return parse_seconds(v, "DIST_BIND_TIMEOUT");
    } catch (const Failure &) {
    }
    return Params().timeout_s;
}

std::string secs(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", s);
    return buf;
}

// This rank's GPU side: what it holds, and the bounded waits.
class Run {
  public:
    explicit Run(distbind_t *db) : db_(db), limit_(wait_limit()) {}
    ~Run() {
        if (stream_) cu_->StreamDestroy(stream_);
        if (buf_) cu_->Free(buf_);
    }
    Run(const Run &) = delete;
    Run &operator=(const Run &) = delete;

    // Device, communicator, buffer: "" when ready, else why not.
    std::string prepare(size_t count) {
        int dev = -1;
        struct ncclComm *c = nullptr;
        // Both collective, with one status on every rank for set_device; a
        // rank whose NCCL set-up fails still comes to the allgather after.
        if (distbind_set_device(db_, &dev) != DISTBIND_OK) return distbind_last_error(db_);
        // Non-blocking, so that every NCCL call below (including the first
        // all-reduce, where NCCL makes its connections) can be waited for
        // with the deadline instead of blocking inside NCCL.
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        cfg.blocking = 0;
        if (distbind_nccl_init(db_, &cfg, &c) != DISTBIND_OK) return distbind_last_error(db_);
        comm_ = reinterpret_cast<ncclComm_t>(c);
        std::string why;
        cu_ = gpu::cudart(why);
        nc_ = gpu::nccl(why);
        if (!cu_ || !nc_) return why;
        count_ = count;
        cudaError_t e = cu_->Malloc(&buf_, count * sizeof(float));
        if (e != cudaSuccess) {
            buf_ = nullptr;
            return "cudaMalloc(" + std::to_string(count * sizeof(float)) + " bytes): " + cu_->error(e);
        }
        e = cu_->StreamCreate(&stream_);
        if (e != cudaSuccess) {
            stream_ = nullptr;
            return "cudaStreamCreate: " + cu_->error(e);
        }
        return "";
    }

    // Fill with 1.0f: the sum over n ranks is n, exact in a float for any
    // world (up to 2^24), unlike 1 + 2 + ... + n.
    std::string fill() {
        std::vector<float> host(count_, 1.0f);
        cudaError_t e = cu_->Memcpy(buf_, host.data(), count_ * sizeof(float), cudaMemcpyHostToDevice);
        return e == cudaSuccess ? "" : "cudaMemcpy to the GPU: " + cu_->error(e);
    }

    std::string check_sum(int n) {
        std::vector<float> host(count_);
        cudaError_t e = cu_->Memcpy(host.data(), buf_, count_ * sizeof(float), cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) return "cudaMemcpy from the GPU: " + cu_->error(e);
        float want = static_cast<float>(n);
        for (size_t i = 0; i < count_; i++)
            if (host[i] != want)
                return "all-reduce result wrong at element " + std::to_string(i) + ": " + std::to_string(host[i]) +
                       ", expected " + std::to_string(want);
        return "";
    }

    // `rounds` all-reduces, then until the GPU has finished them; bounded.
    std::string allreduce(int rounds, const Deadline &d) {
        for (int i = 0; i < rounds; i++) {
            ncclResult_t r = nc_->AllReduce(buf_, buf_, count_, ncclFloat, ncclSum, comm_, stream_);
            if (r != ncclSuccess && r != ncclInProgress) return abort("ncclAllReduce: " + nc_->error(r, comm_));
            // A non-blocking communicator may still be taking the call in:
            // NCCL wants that finished before the next call.
            std::string why = settle(d);
            if (!why.empty()) return why;
        }
        for (;;) {
            cudaError_t e = cu_->StreamQuery(stream_);
            if (e == cudaSuccess) return "";
            if (e != cudaErrorNotReady) return abort("CUDA: " + cu_->error(e));
            // An error NCCL met meanwhile (a peer failed) ends the wait too.
            ncclResult_t state = ncclSuccess;
            ncclResult_t q = nc_->CommGetAsyncError(comm_, &state);
            if (q != ncclSuccess) return abort("ncclCommGetAsyncError: " + nc_->error(q, comm_));
            if (state != ncclSuccess && state != ncclInProgress) return abort("NCCL: " + nc_->error(state, comm_));
            if (d.passed()) return abort("the all-reduce did not finish within " + secs(limit_));
            pause();
        }
    }

    double limit() const { return limit_; }

  private:
    distbind_t *db_;
    double limit_;
    const gpu::Cudart *cu_ = nullptr;
    const gpu::Nccl *nc_ = nullptr;
    ncclComm_t comm_ = nullptr;
    cudaStream_t stream_ = nullptr;
    void *buf_ = nullptr;
    size_t count_ = 0;

    static void pause() { std::this_thread::sleep_for(std::chrono::microseconds(20)); }

    // Until NCCL no longer says ncclInProgress: "" then, else why not.
    std::string settle(const Deadline &d) {
        for (;;) {
            ncclResult_t state = ncclSuccess;
            ncclResult_t q = nc_->CommGetAsyncError(comm_, &state);
            if (q != ncclSuccess) return abort("ncclCommGetAsyncError: " + nc_->error(q, comm_));
            if (state == ncclSuccess) return "";
            if (state != ncclInProgress) return abort("NCCL: " + nc_->error(state, comm_));
            if (d.passed()) return abort("NCCL did not take the all-reduce in within " + secs(limit_));
            pause();
        }
    }

    // A communicator that failed or hangs is aborted, which also ends the
    // others' waits on it; the handle must then not destroy it again.
    std::string abort(const std::string &why) {
        if (comm_) {
            gpu::take_nccl_comm(db_);
            nc_->CommAbort(comm_);
            comm_ = nullptr;
        }
        return why + " (communicator aborted)";
    }
};

// Every rank says whether it can go on.  "" when all can; else this rank's
// own reason, or (skipped set) that another rank could not.
std::string agree(distbind_t *db, const std::string &mine, bool &skipped) {
    int n = distbind_world_size(db);
    int32_t ok = mine.empty() ? 1 : 0;
    std::vector<int32_t> all(static_cast<size_t>(n));
    if (distbind_allgather(db, &ok, sizeof ok, all.data()) != DISTBIND_OK)
        return mine.empty() ? std::string(distbind_last_error(db)) : mine;
    if (!mine.empty()) return mine;
    for (int r = 0; r < n; r++)
        if (!all[static_cast<size_t>(r)]) {
            skipped = true;
            return "skipped: rank " + std::to_string(r) + " could not go on";
        }
    return "";
}

}  // namespace

NcclResult allreduce(distbind_t *db, const Options &o) {
    NcclResult res{};
    bool skipped = false;
    auto failed = [&](const std::string &m) {
        res.skipped = skipped ? 1 : 0;
        db::copy_out(m, res.msg, sizeof res.msg);
        return res;
    };
    size_t count = o.bytes / sizeof(float);
    if (count == 0) count = 1;
    int n = distbind_world_size(db);
    Run run(db);

    // Ready everywhere before the first all-reduce.
    std::string why = run.prepare(count);
    if (why.empty()) why = run.fill();
    why = agree(db, why, skipped);
    if (!why.empty()) return failed(why);

    // One round to check the result, then (again only if every rank got it
    // right) the timed ones.
    why = run.allreduce(1, Deadline::in(run.limit()));
    if (why.empty()) why = run.check_sum(n);
    why = agree(db, why, skipped);
    if (!why.empty()) return failed(why);

    auto t0 = Clock::now();
    why = run.allreduce(o.iters, Deadline::in(run.limit()));
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count() / std::max(1, o.iters);
    if (!why.empty()) return failed(why);
    res.ok = 1;
    return res;
}

#else

bool nccl_built() { return false; }

NcclResult allreduce(distbind_t *, const Options &) {
    NcclResult res{};
    db::copy_out("this dist-bind-check was built without CUDA/NCCL", res.msg, sizeof res.msg);
    return res;
}

#endif

}  // namespace dbcheck
