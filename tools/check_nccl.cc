// dist-bind-check's GPU part: an NCCL all-reduce over every rank, through
// libdistbind's own device choice and communicator, its result checked.
#include <chrono>
#include <vector>

#include "check.hh"
#include "gpu.hh"

namespace dbcheck {

using namespace db::rt;

#ifdef DB_HAVE_CUDA

bool nccl_built() { return true; }

NcclResult allreduce(distbind_t *db, const Options &o) {
    NcclResult res{};
    std::string why;
    const gpu::Cudart *cu = gpu::cudart(why);
    const gpu::Nccl *nc = gpu::nccl(why);
    struct ncclComm *comm = nullptr;
    auto failed = [&](const std::string &m) {
        db::copy_out(m, res.msg, sizeof res.msg);
        return res;
    };
    if (!cu || !nc) return failed(why);
    int dev = -1;
    if (distbind_set_device(db, &dev) != DISTBIND_OK) return failed(distbind_last_error(db));
    if (distbind_nccl_init(db, nullptr, &comm) != DISTBIND_OK) return failed(distbind_last_error(db));
    size_t count = o.bytes / sizeof(float);
    if (count == 0) count = 1;
    int n = distbind_world_size(db), rank = distbind_rank(db);
    std::vector<float> host(count, static_cast<float>(rank + 1));
    void *buf = nullptr;
    cudaStream_t stream = nullptr;
    cudaError_t e = cu->Malloc(&buf, count * sizeof(float));
    if (e != cudaSuccess) return failed("cudaMalloc: " + cu->error(e));
    auto cleanup = [&] {
        if (stream) cu->StreamDestroy(stream);
        cu->Free(buf);
    };
    e = cu->StreamCreate(&stream);
    if (e == cudaSuccess) e = cu->Memcpy(buf, host.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        cleanup();
        return failed("CUDA: " + cu->error(e));
    }
    // One round to check the result, then the timed ones.
    ncclResult_t r = nc->AllReduce(buf, buf, count, ncclFloat, ncclSum, reinterpret_cast<ncclComm_t>(comm), stream);
    if (r == ncclSuccess) e = cu->StreamSynchronize(stream);
    if (r == ncclSuccess && e == cudaSuccess) e = cu->Memcpy(host.data(), buf, count * sizeof(float), cudaMemcpyDeviceToHost);
    if (r != ncclSuccess || e != cudaSuccess) {
        cleanup();
        return failed(r != ncclSuccess ? "ncclAllReduce: " + nc->error(r, reinterpret_cast<ncclComm_t>(comm))
                                       : "CUDA: " + cu->error(e));
    }
    float want = static_cast<float>(n) * static_cast<float>(n + 1) / 2;
    for (size_t i = 0; i < count; i++)
        if (host[i] != want) {
            cleanup();
            return failed("all-reduce result wrong at element " + std::to_string(i) + ": " + std::to_string(host[i]) +
                          ", expected " + std::to_string(want));
        }
    distbind_barrier(db);
    auto t0 = Clock::now();
    for (int i = 0; i < o.iters && r == ncclSuccess; i++)
        r = nc->AllReduce(buf, buf, count, ncclFloat, ncclSum, reinterpret_cast<ncclComm_t>(comm), stream);
    if (r == ncclSuccess) e = cu->StreamSynchronize(stream);
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count() / std::max(1, o.iters);
    cleanup();
    if (r != ncclSuccess) return failed("ncclAllReduce: " + nc->error(r, reinterpret_cast<ncclComm_t>(comm)));
    if (e != cudaSuccess) return failed("CUDA: " + cu->error(e));
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
