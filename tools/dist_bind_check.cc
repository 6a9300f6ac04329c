// dist-bind-check: run as every task of a step (`srun --dist-bind
// dist-bind-check`).  Each rank reports where it is and what GPU it would
// use; rank 0 prints one table for the step, flags what is wrong, and, when
// every rank has a GPU, runs an NCCL all-reduce and checks its result.
// Every rank exits with rank 0's verdict: 0 only when all it checked is
// right.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "distbind.h"
#include "gpu.hh"
#include "rt.hh"
#include "text.hh"

extern "C" int db_check_plan_main(int argc, char **argv) __attribute__((weak));
extern char **environ;

namespace {

using namespace db::rt;

enum Exit { kOk = 0, kProblems = 1, kUsage = 2, kCannotStart = 3 };

struct Options {
    size_t bytes = 64u << 20;
    int iters = 20;
};

const char kUsageText[] =
    "usage: srun [options] --dist-bind dist-bind-check [--bytes N] [--iters N]\n"
    "       dist-bind-check --plan ...   (dry run of a layout, without a job)\n"
    "Checks the step: every rank's place, its device and GPU, the exchange\n"
    "between ranks and, on GPU nodes, an NCCL all-reduce (--bytes per rank,\n"
    "default 67108864; --iters timed rounds, default 20).  Exit 0 only when\n"
    "everything checked is right.\n";

// What one rank tells rank 0.  Fixed size: it travels in an allgather.
struct Row {
    int32_t rank, world, local_rank, local_world, node_rank, device;
    int32_t slurm_procid, slurm_localid;  // -1 when unset
    int32_t gpu_status, gpu_count, gpu_numa;
    char host[64];
    char source[16];
    char visible[160];  // CUDA_VISIBLE_DEVICES, "\1" when unset
    char own[64];       // DIST_BIND_GPUS, "\1" when unset
    char master[128];   // MASTER_ADDR:MASTER_PORT
    char bus[32];
    char cpu_numa[32];
    char gpu_msg[400];
};

void put(char *dst, size_t n, const char *v) { db::copy_out(v ? v : "\1", dst, n); }
bool unset(const char *s) { return s[0] == '\1'; }

int env_int(const char *name) {
    const char *v = getenv(name);
    uint64_t n;
    return v && db::parse_uint(v, INT32_MAX, n) ? static_cast<int>(n) : -1;
}

// "0-3,8-11" -> the CPUs.
std::set<int> parse_cpulist(const std::string &s) {
    std::set<int> out;
    for (std::string_view part : db::split(s, ',')) {
        size_t dash = part.find('-');
        uint64_t a, b;
        if (!db::parse_uint(part.substr(0, dash), 1u << 20, a)) continue;
        b = a;
        if (dash != std::string_view::npos && !db::parse_uint(part.substr(dash + 1), 1u << 20, b)) continue;
        for (uint64_t c = a; c <= b; c++) out.insert(static_cast<int>(c));
    }
    return out;
}

// The NUMA nodes this process's CPUs belong to ("0", "0,1"), "-" unknown.
std::string cpu_numa_nodes() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return "-";
    std::vector<std::string> nodes;
    DIR *d = opendir("/sys/devices/system/node");
    if (!d) return "-";
    std::vector<int> ids;
    while (dirent *e = readdir(d)) {
        uint64_t n;
        if (std::strncmp(e->d_name, "node", 4) == 0 && db::parse_uint(e->d_name + 4, 4096, n))
            ids.push_back(static_cast<int>(n));
    }
    closedir(d);
    std::sort(ids.begin(), ids.end());
    for (int id : ids) {
        std::ifstream f("/sys/devices/system/node/node" + std::to_string(id) + "/cpulist");
        std::string line;
        std::getline(f, line);
        for (int c : parse_cpulist(line))
            if (c < CPU_SETSIZE && CPU_ISSET(c, &set)) {
                nodes.push_back(std::to_string(id));
                break;
            }
    }
    return nodes.empty() ? "-" : db::join(nodes);
}

Row my_row(distbind_t *db) {
    Row r{};
    r.rank = distbind_rank(db);
    r.world = distbind_world_size(db);
    r.local_rank = distbind_local_rank(db);
    r.local_world = distbind_local_world_size(db);
    r.node_rank = distbind_node_rank(db);
    r.device = distbind_device(db);
    r.slurm_procid = env_int("SLURM_PROCID");
    r.slurm_localid = env_int("SLURM_LOCALID");
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    put(r.host, sizeof r.host, host);
    put(r.source, sizeof r.source, distbind_source(db));
    put(r.visible, sizeof r.visible, getenv("CUDA_VISIBLE_DEVICES"));
    put(r.own, sizeof r.own, getenv("DIST_BIND_GPUS"));
    const char *ma = getenv("MASTER_ADDR"), *mp = getenv("MASTER_PORT");
    std::string master = ma || mp ? std::string(ma ? ma : "?") + ":" + (mp ? mp : "?") : "-";
    put(r.master, sizeof r.master, master.c_str());
    put(r.cpu_numa, sizeof r.cpu_numa, cpu_numa_nodes().c_str());

    Identity id;
    id.rank = r.rank;
    id.device = r.device;
    id.device_from = getenv("DIST_BIND_DEVICE") ? "DIST_BIND_DEVICE" : "the local rank";
    id.host = host;
    Env env(environ);
    gpu::Probe p = gpu::probe(id, env, true);
    r.gpu_status = p.status;
    r.gpu_count = p.count;
    r.gpu_numa = p.numa;
    put(r.bus, sizeof r.bus, p.bus);
    put(r.gpu_msg, sizeof r.gpu_msg, p.msg);
    return r;
}

// The GPU a rank's device ordinal names, as Slurm names it: entry `device`
// of its CUDA_VISIBLE_DEVICES ("" when that list is unset or too short).
std::string slurm_gpu(const Row &r) {
    if (unset(r.visible) || r.device < 0) return "";
    std::vector<std::string_view> v = db::split(r.visible, ',');
    return static_cast<size_t>(r.device) < v.size() ? std::string(v[static_cast<size_t>(r.device)]) : "";
}

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

Verdict judge(const std::vector<Row> &rows) {
    Verdict v;
    int n = static_cast<int>(rows.size());
    std::map<std::string, std::vector<int>> by_host;
    for (const Row &r : rows) by_host[r.host].push_back(r.rank);

    // Ranks against Slurm's own numbering.
    for (const Row &r : rows) {
        std::string who = "rank " + std::to_string(r.rank) + " (" + r.host + ")";
        if (r.slurm_procid >= 0 && r.slurm_procid != r.rank)
            v.problem(r.rank, "RANK", who + ": rank " + std::to_string(r.rank) + " but SLURM_PROCID=" + std::to_string(r.slurm_procid));
        if (r.slurm_localid >= 0 && r.slurm_localid != r.local_rank)
            v.problem(r.rank, "LOCAL", who + ": local rank " + std::to_string(r.local_rank) +
                                           " but SLURM_LOCALID=" + std::to_string(r.slurm_localid));
        if (std::strcmp(r.master, rows[0].master) != 0)
            v.problem(r.rank, "MASTER", who + ": MASTER_ADDR:MASTER_PORT=" + r.master + " but rank 0 has " + rows[0].master);
    }
    // Per node: local ranks 0..k-1 once each, the right local world size,
    // one node rank per host and a different one on each host.
    std::map<int, std::string> node_owner;
    for (const auto &[host, ranks] : by_host) {
        std::vector<int> locals;
        std::set<int> node_ranks;
        for (int r : ranks) {
            const Row &x = rows[static_cast<size_t>(r)];
            locals.push_back(x.local_rank);
            node_ranks.insert(x.node_rank);
            if (x.local_world != static_cast<int>(ranks.size()))
                v.problem(r, "LOCAL", "rank " + std::to_string(r) + " (" + host + "): local world size " +
                                          std::to_string(x.local_world) + " but " + std::to_string(ranks.size()) +
                                          " ranks run on " + host);
        }
        std::sort(locals.begin(), locals.end());
        for (size_t i = 0; i < locals.size(); i++)
            if (locals[i] != static_cast<int>(i)) {
                for (int r : ranks) v.flag(r, "LOCAL");
                v.problems.push_back("the local ranks on " + host + " are not 0.." + std::to_string(ranks.size() - 1) +
                                     " once each");
                break;
            }
        if (node_ranks.size() != 1) {
            for (int r : ranks) v.flag(r, "NODE");
            v.problems.push_back("the ranks on " + host + " disagree on their node rank");
        }
        int nr = *node_ranks.begin();
        if (node_owner.count(nr)) {
            for (int r : ranks) v.flag(r, "NODE");
            v.problems.push_back(host + " and " + node_owner[nr] + " have the same node rank " + std::to_string(nr));
        }
        node_owner[nr] = host;
    }

    // The mapping, as Slurm names GPUs: works without a GPU driver.
    std::map<std::pair<std::string, std::string>, int> owner;
    for (const Row &r : rows) {
        if (unset(r.visible)) continue;
        std::string who = "rank " + std::to_string(r.rank) + " (" + r.host + ")";
        std::string g = slurm_gpu(r);
        if (g.empty()) {
            size_t k = db::split(r.visible, ',').size();
            v.problem(r.rank, "NO-SUCH-DEVICE", who + ": device " + std::to_string(r.device) + " does not exist: CUDA_VISIBLE_DEVICES=" +
                                                  r.visible + " has " + std::to_string(k) + " GPU" + (k > 1 ? "s" : ""));
            continue;
        }
        if (!unset(r.own) && db::split(r.own, ',')[0] != g)
            v.problem(r.rank, "NOT-OWN", who + ": device " + std::to_string(r.device) + " is GPU " + g +
                                          " but the GPU Slurm gave it is " + r.own);
        auto key = std::make_pair(std::string(r.host), g);
        auto [it, fresh] = owner.emplace(key, r.rank);
        if (!fresh) {
            v.flag(it->second, "DUPLICATE");
            v.problem(r.rank, "DUPLICATE", "ranks " + std::to_string(it->second) + " and " + std::to_string(r.rank) +
                                               " would both use GPU " + g + " on " + r.host);
        }
    }

    // What CUDA itself says.
    int usable = 0, none = 0;
    std::string none_why;
    for (const Row &r : rows) {
        if (r.gpu_status == DISTBIND_OK) {
            usable++;
        } else if (r.gpu_status == DISTBIND_ERR_NO_GPU || r.gpu_status == DISTBIND_ERR_UNAVAILABLE) {
            none++;
            if (none_why.empty()) none_why = std::string(r.host) + ": " + r.gpu_msg;
        } else {
            v.problem(r.rank, "CUDA", "rank " + std::to_string(r.rank) + " (" + r.host + "): " + r.gpu_msg);
        }
    }
    std::vector<gpu::Probe> probes;
    for (const Row &r : rows) {
        gpu::Probe p{};
        p.status = r.gpu_status;
        p.device = r.device;
        db::copy_out(r.host, p.host, sizeof p.host);
        db::copy_out(r.bus, p.bus, sizeof p.bus);
        if (unset(p.bus)) p.bus[0] = '\0';
        probes.push_back(p);
    }
    std::string dup = gpu::find_duplicate(probes);
    if (!dup.empty()) v.problems.push_back(dup);
    if (usable == n) {
        v.gpus = true;
    } else if (none == n) {
        v.notes.push_back("GPU checks skipped: no rank has a usable GPU (" + none_why + ")");
    } else if (none > 0) {
        v.problems.push_back(std::to_string(none) + " of " + std::to_string(n) + " ranks have no usable GPU (" + none_why +
                             ") while the others do");
    }
    return v;
}

std::string cell(const char *s) { return unset(s) || !*s ? "-" : s; }

void print_table(const std::vector<Row> &rows, const Verdict &v, const char *bootstrap) {
    std::set<std::string> hosts;
    for (const Row &r : rows) hosts.insert(r.host);
    std::printf("dist-bind-check: %zu rank%s on %zu node%s, place from %s, exchange over %s\n", rows.size(),
                rows.size() > 1 ? "s" : "", hosts.size(), hosts.size() > 1 ? "s" : "", rows[0].source, bootstrap);
    std::vector<std::vector<std::string>> t;
    t.push_back({"rank", "host", "node", "local", "device", "gpu", "bus id", "gpu numa", "cpu numa", "flags"});
    for (const Row &r : rows) {
        std::string g = slurm_gpu(r);
        auto it = v.flags.find(r.rank);
        t.push_back({std::to_string(r.rank), r.host, std::to_string(r.node_rank),
                     std::to_string(r.local_rank) + "/" + std::to_string(r.local_world), std::to_string(r.device),
                     g.empty() ? "-" : g, cell(r.bus), r.gpu_numa >= 0 ? std::to_string(r.gpu_numa) : "-",
                     cell(r.cpu_numa), it == v.flags.end() ? "ok" : it->second});
    }
    std::vector<size_t> w(t[0].size(), 0);
    for (const auto &row : t)
        for (size_t i = 0; i < row.size(); i++) w[i] = std::max(w[i], row[i].size());
    for (const auto &row : t) {
        std::string line;
        for (size_t i = 0; i < row.size(); i++) {
            line += row[i];
            if (i + 1 < row.size()) line += std::string(w[i] - row[i].size() + 2, ' ');
        }
        std::printf("%s\n", line.c_str());
    }
}

// The exchange itself: a broadcast from the last rank and a barrier, on
// top of the allgather that brought the table.
bool check_exchange(distbind_t *db, std::string &why) {
    int last = distbind_world_size(db) - 1;
    uint64_t token = distbind_rank(db) == last ? 0x5eed0000u + static_cast<uint64_t>(last) : 0;
    if (distbind_broadcast(db, &token, sizeof token, last) != DISTBIND_OK || distbind_barrier(db) != DISTBIND_OK) {
        why = distbind_last_error(db);
        return false;
    }
    if (token != 0x5eed0000u + static_cast<uint64_t>(last)) {
        why = "the broadcast from rank " + std::to_string(last) + " delivered wrong data";
        return false;
    }
    return true;
}

#ifdef DB_HAVE_CUDA
// Fixed size, allgathered: how the all-reduce went on one rank.
struct NcclResult {
    int32_t ok;
    double seconds;
    char msg[300];
};

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
#endif

bool parse_options(int argc, char **argv, Options &o) {
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        uint64_t v;
        if (a == "--help" || a == "-h") {
            std::fputs(kUsageText, stdout);
            std::exit(kOk);
        }
        if ((a == "--bytes" || a == "--iters") && i + 1 < argc) {
            const char *val = argv[++i];
            if (a == "--bytes" && db::parse_uint(val, 1ull << 34, v) && v >= sizeof(float)) {
                o.bytes = v;
                continue;
            }
            if (a == "--iters" && db::parse_uint(val, 100000, v) && v >= 1) {
                o.iters = static_cast<int>(v);
                continue;
            }
            std::fprintf(stderr, "dist-bind-check: %s \"%s\": expected %s\n", a.c_str(), val,
                         a == "--bytes" ? "a byte count from 4 to 17179869184" : "a count from 1 to 100000");
            return false;
        }
        std::fprintf(stderr, "dist-bind-check: unknown argument \"%s\"\n%s", a.c_str(), kUsageText);
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc > 1 && std::strcmp(argv[1], "--plan") == 0) {
        if (!db_check_plan_main) {
            std::fprintf(stderr, "dist-bind-check: built without topology support\n");
            return kUsage;
        }
        return db_check_plan_main(argc, argv);
    }
    Options o;
    if (!parse_options(argc, argv, o)) return kUsage;

    distbind_t *db = nullptr;
    if (distbind_init(&db) != DISTBIND_OK) {
        std::fprintf(stderr, "%s\n", distbind_last_error(nullptr));
        return kCannotStart;
    }
    int rank = distbind_rank(db), world = distbind_world_size(db);
    Row mine = my_row(db);
    std::vector<Row> rows(static_cast<size_t>(world));
    if (distbind_allgather(db, &mine, sizeof mine, rows.data()) != DISTBIND_OK) {
        std::fprintf(stderr, "%s\n", distbind_last_error(db));
        distbind_destroy(db);
        return kProblems;
    }
    std::string xwhy;
    bool xok = check_exchange(db, xwhy);
    if (!xok) {
        std::fprintf(stderr, "dist-bind-check: rank %d: exchange failed: %s\n", rank, xwhy.c_str());
        distbind_destroy(db);
        return kProblems;
    }

    Verdict v = judge(rows);
    // Rank 0 decides whether the GPU part runs, so every rank does the same.
    int32_t run_nccl = rank == 0 && v.gpus && v.problems.empty() ? 1 : 0;
    if (distbind_broadcast(db, &run_nccl, sizeof run_nccl, 0) != DISTBIND_OK) {
        std::fprintf(stderr, "%s\n", distbind_last_error(db));
        distbind_destroy(db);
        return kProblems;
    }
    std::string nccl_line;
    bool nccl_ok = true;
#ifdef DB_HAVE_CUDA
    if (run_nccl) {
        NcclResult res = allreduce(db, o);
        std::vector<NcclResult> all(static_cast<size_t>(world));
        if (distbind_allgather(db, &res, sizeof res, all.data()) != DISTBIND_OK) {
            std::fprintf(stderr, "%s\n", distbind_last_error(db));
            distbind_destroy(db);
            return kProblems;
        }
        double worst = 0;
        for (int r = 0; r < world; r++) {
            if (!all[static_cast<size_t>(r)].ok) {
                nccl_ok = false;
                v.problems.push_back("NCCL all-reduce failed on rank " + std::to_string(r) + ": " + all[static_cast<size_t>(r)].msg);
            }
            worst = std::max(worst, all[static_cast<size_t>(r)].seconds);
        }
        if (nccl_ok) {
            double algbw = static_cast<double>(o.bytes) / worst / 1e9;
            double busbw = algbw * 2.0 * (world - 1) / world;
            char buf[256];
            std::snprintf(buf, sizeof buf,
                          "NCCL all-reduce: %zu bytes x %d on %d rank%s, result correct on every rank; "
                          "%.3f ms each, algorithm bandwidth %.2f GB/s, bus bandwidth %.2f GB/s",
                          o.bytes, o.iters, world, world > 1 ? "s" : "", worst * 1e3, algbw, busbw);
            nccl_line = buf;
        }
    }
#else
    (void)o;
    if (v.gpus) v.notes.push_back("NCCL all-reduce skipped: this dist-bind-check was built without CUDA/NCCL");
#endif

    int32_t verdict = v.problems.empty() ? kOk : kProblems;
    if (rank == 0) {
        print_table(rows, v, distbind_bootstrap(db));
        std::printf("exchange: ok (allgather, broadcast from rank %d, barrier over %s)\n", world - 1,
                    distbind_bootstrap(db));
        if (!nccl_line.empty()) std::printf("%s\n", nccl_line.c_str());
        for (const std::string &n : v.notes) std::printf("%s\n", n.c_str());
        for (const std::string &p : v.problems) std::printf("PROBLEM: %s\n", p.c_str());
        std::printf("dist-bind-check: %s\n", verdict == kOk ? "all checks passed"
                                                            : (std::to_string(v.problems.size()) + " problem" +
                                                               (v.problems.size() > 1 ? "s" : "") + " found").c_str());
        std::fflush(stdout);
    }
    if (distbind_broadcast(db, &verdict, sizeof verdict, 0) != DISTBIND_OK) {
        std::fprintf(stderr, "%s\n", distbind_last_error(db));
        verdict = kProblems;
    }
    distbind_destroy(db);
    return verdict;
}
