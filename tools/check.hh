// dist-bind-check's parts (tools/*.cc): what each rank reports, how rank 0
// judges the step, and the NCCL all-reduce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "distbind.h"
#include "text.hh"

namespace dbcheck {

enum Exit { kOk = 0, kProblems = 1, kUsage = 2, kCannotStart = 3 };

struct Options {
    size_t bytes = 64u << 20;
    int iters = 20;
};

// What one rank tells rank 0.  Fixed size: it travels in an allgather.
// GPU lists can be long (UUIDs, MIG ids): each rank picks out of its own
// lists the one entry rank 0 judges, so nothing is judged from a cut list.
struct Row {
    int32_t rank, world, local_rank, local_world, node_rank, device;
    int32_t slurm_procid, slurm_localid;  // -1 when unset
    int32_t gpu_status, gpu_count, gpu_numa;
    int32_t visible_count;  // entries in CUDA_VISIBLE_DEVICES, -1 when unset
    char host[64];
    char source[16];
    char gpu[96];       // entry `device` of CUDA_VISIBLE_DEVICES ("" when unset or too short)
    char own[96];       // the first GPU of DIST_BIND_GPUS, "\1" when unset
    char visible[160];  // CUDA_VISIBLE_DEVICES for messages only (cut with "..."), "\1" when unset
    char master[128];   // MASTER_ADDR:MASTER_PORT
    char bus[32];
    char cpu_numa[32];
    char gpu_msg[400];
};

inline void put(char *dst, size_t n, const char *v) { db::copy_out(v ? v : "\1", dst, n); }
inline bool unset(const char *s) { return s[0] == '\1'; }

struct Verdict {
    std::vector<std::string> problems;
    std::map<int, std::string> flags;  // rank -> flag column
    std::vector<std::string> notes;
    bool gpus = false;  // every rank has a usable GPU
    void flag(int rank, const std::string &f) {
        std::string &s = flags[rank];
        if (s.find(f) == std::string::npos) s += (s.empty() ? "" : ",") + f;
    }
    void problem(int rank, const std::string &flag_, const std::string &msg) {
        flag(rank, flag_);
        problems.push_back(msg);
    }
};

// This rank's row (check_row.cc).
Row my_row(distbind_t *db);
// The GPU lists' part of a row: `visible` is CUDA_VISIBLE_DEVICES, `own`
// DIST_BIND_GPUS (nullptr when unset).
void set_gpu_lists(Row &r, const char *visible, const char *own);
// The GPU a rank's device ordinal names, as Slurm names it: entry `device`
// of its CUDA_VISIBLE_DEVICES ("" when that list is unset or too short).
inline std::string slurm_gpu(const Row &r) { return r.gpu; }
// Rank 0's verdict on the step (check_judge.cc).
Verdict judge(const std::vector<Row> &rows);

// How the all-reduce went on one rank.  Fixed size: it is allgathered.
struct NcclResult {
    int32_t ok;
    int32_t skipped;  // not ok only because another rank could not go on
    double seconds;   // per timed round
    char msg[300];    // why not ok
};
// Whether this build has the CUDA/NCCL parts (check_nccl.cc).
bool nccl_built();
// The NCCL all-reduce on this rank, its result checked (collective).
NcclResult allreduce(distbind_t *db, const Options &o);

}  // namespace dbcheck
