// dist-bind-check's GPU part: libdistbind's own device choice, a
// non-blocking NCCL communicator and its checked all-reduce, every wait
// bounded by the handle's timeout (distbind_nccl_allreduce_check).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "check.hh"

namespace dbcheck {

bool gpu_part(distbind_t *h, const Options &o, Verdict &v, std::string &line) {
    int world = distbind_world_size(h);
    struct ncclComm *comm = nullptr;
    double mine = 0;
    // Each call is collective, and every rank gets the same status from
    // each: the steps are taken in step everywhere.
    const char *step = "making the device current";
    distbind_status st = distbind_set_device(h, nullptr);
    if (st == DISTBIND_OK) {
        step = "NCCL set-up";
        st = distbind_set_nccl_blocking(h, 0);
        if (st == DISTBIND_OK) st = distbind_nccl_init(h, nullptr, &comm);
    }
    if (st == DISTBIND_OK) {
        step = "NCCL all-reduce";
        st = distbind_nccl_allreduce_check(h, o.bytes, o.iters, &mine);
    }
    std::string why = st == DISTBIND_OK ? "" : std::string(step) + " failed: " + distbind_last_error(h);
    // Rank 0 reports the slowest rank's time.
    std::vector<double> all(static_cast<size_t>(world));
    if (distbind_allgather(h, &mine, sizeof mine, all.data()) != DISTBIND_OK) {
        // A rank whose own failure left it behind the others (one slow to
        // abort): its own failure first, then the exchange's.
        std::string x = distbind_last_error(h);
        const std::string earlier = "the exchange failed earlier: ";
        size_t at = x.find(earlier);
        bool told =
            at != std::string::npos && !why.empty() && why.find(x.substr(at + earlier.size())) != std::string::npos;
        v.problems.push_back(told ? why
                                  : (why.empty() ? std::string("") : why + "; then ") + "the exchange failed: " + x);
        if (distbind_rank(h) != 0) std::fprintf(stderr, "dist-bind-check: %s\n", v.problems.back().c_str());
        return false;
    }
    if (st != DISTBIND_OK) {
        v.problems.push_back(why);
        return true;
    }
    double worst = *std::max_element(all.begin(), all.end());
    if (!(worst > 0)) worst = 1e-9;
    // Bus bandwidth as nccl-tests reports it for all-reduce.
    double algbw = static_cast<double>(o.bytes) / worst / 1e9;
    double busbw = algbw * 2.0 * (world - 1) / world;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "NCCL all-reduce: %zu bytes x %d on %d rank%s, result correct on every rank; "
                  "%.3f ms each, algorithm bandwidth %.2f GB/s, bus bandwidth %.2f GB/s",
                  o.bytes, o.iters, world, world > 1 ? "s" : "", worst * 1e3, algbw, busbw);
    line = buf;
    return true;
}

}  // namespace dbcheck
