// distbind_nccl_allreduce_check: a checked, timed NCCL all-reduce over the
// handle's communicator, every wait bounded (dist-bind-check's GPU part,
// and a preflight any program can run).
//
// Every rank takes every step, also when it cannot go on: before the first
// all-reduce and after each phase the ranks agree (a status per rank, and
// only on failure the message of the rank whose failure was its own), so
// no rank is left inside NCCL waiting for one that is not coming.  NCCL and
// the GPU are polled against the deadline; a communicator that does not
// finish is aborted, which also ends the other ranks' waits on it.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "gpu/agree.hh"
#include "gpu/gpu.hh"
#include "gpu/loaders.hh"

namespace db::rt::gpu {

#ifndef DB_HAVE_CUDA

double allreduce_check(Exchange &, const Identity &, const Params &, void *&, bool, size_t, int) {
    fail(DISTBIND_ERR_UNAVAILABLE, "this libdistbind was built without NCCL (no cuda_runtime_api.h/nccl.h)");
}

#else

namespace {

// This rank's side: what it holds, and the bounded waits.
class Run {
  public:
    Run(const Identity &id, const Params &p, void *&comm) : id_(id), limit_(p.timeout_s), comm_(comm) {}
    ~Run() {
        if (stream_) cu_->StreamDestroy(stream_);
        if (buf_) cu_->Free(buf_);
    }
    Run(const Run &) = delete;
    Run &operator=(const Run &) = delete;

    // Why this rank failed ("" while it has not), and whether the failure
    // was its own (not a consequence of another rank's).
    std::string why;
    distbind_status status = DISTBIND_ERR_NCCL;
    bool own = true;

    void prepare(size_t count, bool nonblocking) {
        std::string w;
        cu_ = cudart(w);
        nc_ = nccl(w);
        if (!cu_ || !nc_) return failed(w);
        if (!nonblocking) {
            status = DISTBIND_ERR_STATE;
            return failed(
                "the communicator is blocking (NCCL_COMM_BLOCKING=1 in the environment, or a blocking "
                "config), so the all-reduce's waits could not be bounded: ask for a non-blocking one");
        }
        cudaError_t e = cu_->SetDevice(id_.device);
        if (e != cudaSuccess) return failed("cudaSetDevice(" + std::to_string(id_.device) + "): " + cu_->error(e));
        count_ = count;
        e = cu_->Malloc(&buf_, count * sizeof(float));
        if (e != cudaSuccess) {
            buf_ = nullptr;
            return failed("cudaMalloc(" + std::to_string(count * sizeof(float)) + " bytes): " + cu_->error(e));
        }
        e = cu_->StreamCreate(&stream_);
        if (e != cudaSuccess) {
            stream_ = nullptr;
            return failed("cudaStreamCreate: " + cu_->error(e));
        }
        // 1.0f everywhere: the sum over n ranks is n, exact in a float for
        // any world (up to 2^24), unlike 1 + 2 + ... + n.
        std::vector<float> host(count_, 1.0f);
        e = cu_->Memcpy(buf_, host.data(), count_ * sizeof(float), cudaMemcpyHostToDevice);
        if (e != cudaSuccess) failed("cudaMemcpy to the GPU: " + cu_->error(e));
    }

    void check_sum(int n) {
        std::vector<float> host(count_);
        cudaError_t e = cu_->Memcpy(host.data(), buf_, count_ * sizeof(float), cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) return failed("cudaMemcpy from the GPU: " + cu_->error(e));
        float want = static_cast<float>(n);
        for (size_t i = 0; i < count_; i++)
            if (host[i] != want)
                return failed("all-reduce result wrong at element " + std::to_string(i) + ": " +
                              std::to_string(host[i]) + ", expected " + std::to_string(want));
    }

    // `rounds` all-reduces, then until the GPU has finished them; bounded.
    void allreduce(int rounds) {
        Deadline d = Deadline::in(limit_);
        auto comm = static_cast<ncclComm_t>(comm_);
        for (int i = 0; i < rounds; i++) {
            ncclResult_t r = nc_->AllReduce(buf_, buf_, count_, ncclFloat, ncclSum, comm, stream_);
            if (r != ncclSuccess && r != ncclInProgress) return abort("ncclAllReduce: " + nc_->error(r, comm), r);
            // A non-blocking communicator may still be taking the call in:
            // NCCL wants that finished before the next call.
            if (!settle(d)) return;
        }
        for (;;) {
            cudaError_t e = cu_->StreamQuery(stream_);
            if (e != cudaSuccess && e != cudaErrorNotReady)
                return abort("CUDA: " + cu_->error(e), ncclUnhandledCudaError);
            // An error NCCL met meanwhile (a peer failed) ends the wait,
            // and makes a finished round worthless.
            ncclResult_t state = ncclSuccess;
            ncclResult_t q = nc_->CommGetAsyncError(comm, &state);
            if (q != ncclSuccess) return abort("ncclCommGetAsyncError: " + nc_->error(q, comm), q);
            if (state != ncclSuccess && state != ncclInProgress)
                return abort("NCCL: " + nc_->error(state, comm), state);
            if (e == cudaSuccess) return;
            if (d.passed()) return abort("the all-reduce did not finish within " + seconds_text(limit_), ncclSuccess);
            pause();
        }
    }

  private:
    const Identity &id_;
    double limit_;
    void *&comm_;
    const Cudart *cu_ = nullptr;
    const Nccl *nc_ = nullptr;
    cudaStream_t stream_ = nullptr;
    void *buf_ = nullptr;
    size_t count_ = 0;

    static void pause() { std::this_thread::sleep_for(std::chrono::microseconds(20)); }
    void failed(const std::string &w) {
        if (why.empty()) why = w;
    }

    // Until NCCL no longer says ncclInProgress: true then.
    bool settle(const Deadline &d) {
        auto comm = static_cast<ncclComm_t>(comm_);
        for (;;) {
            ncclResult_t state = ncclSuccess;
            ncclResult_t q = nc_->CommGetAsyncError(comm, &state);
            if (q != ncclSuccess) return abort("ncclCommGetAsyncError: " + nc_->error(q, comm), q), false;
            if (state == ncclSuccess) return true;
            if (state != ncclInProgress) return abort("NCCL: " + nc_->error(state, comm), state), false;
            if (d.passed())
                return abort("NCCL did not take the all-reduce in within " + seconds_text(limit_), ncclSuccess), false;
            pause();
        }
    }

    // A communicator that failed or hangs is aborted, which also ends the
    // others' waits on it; the handle then has none.  A remote error is
    // another rank's failure showing here.
    void abort(const std::string &w, ncclResult_t r) {
        own = r != ncclRemoteError;
        nc_->CommAbort(static_cast<ncclComm_t>(comm_));
        comm_ = nullptr;
        failed(w + " (communicator aborted)");
    }
};

// Every rank says whether it can go on; throws the same Failure on every
// rank when one cannot.  A rank that failed and then cannot reach the
// others (one slow to abort, say) reports its own failure, not the
// exchange's.
void agree(Exchange &ex, const Identity &id, const Run &run, const char *phase) {
    struct Vote {
        int32_t status, own;
    };
    Vote mine{run.why.empty() ? DISTBIND_OK : run.status, run.own ? 1 : 0};
    std::vector<Vote> all(static_cast<size_t>(id.world));
    std::vector<distbind_status> st(all.size());
    std::vector<bool> own(all.size());
    std::string what = std::string("NCCL all-reduce check failed ") + phase + ": ";
    std::pair<distbind_status, std::string> verdict;
    try {
        ex.allgather(&mine, sizeof mine, all.data());
        for (size_t r = 0; r < all.size(); r++) {
            st[r] = peer_status(all[r].status, static_cast<int>(r));
            own[r] = all[r].own != 0;
        }
        verdict = first_failure(ex, st, make_detail(id.host, "", "", run.why), what, own);
    } catch (const Failure &f) {
        if (run.why.empty()) throw;
        fail(run.status, what + "rank " + std::to_string(id.rank) + " on " + id.host + ": " + run.why +
                             " (and the other ranks could not be told: " + f.what() + ")");
    }
    if (verdict.first != DISTBIND_OK) fail(verdict.first, verdict.second);
}

}  // namespace

double allreduce_check(Exchange &ex, const Identity &id, const Params &p, void *&comm, bool nonblocking, size_t bytes,
                       int iters) {
    if (bytes < sizeof(float) || iters < 1)
        fail(DISTBIND_ERR_ARG, "distbind_nccl_allreduce_check: bytes " + std::to_string(bytes) + " and iters " +
                                   std::to_string(iters) + ": expected at least 4 bytes and 1 round");
    Run run(id, p, comm);
    run.prepare(bytes / sizeof(float), nonblocking);
    agree(ex, id, run, "before the first all-reduce");
    run.allreduce(1);
    if (run.why.empty()) run.check_sum(id.world);
    agree(ex, id, run, "in the first all-reduce");
    auto t0 = Clock::now();
    run.allreduce(iters);
    double s = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
    agree(ex, id, run, "in the timed all-reduces");
    return s;
}

#endif

}  // namespace db::rt::gpu
