// The node's closest choice behind the C boundary: everything that can go
// wrong becomes a fallback reason; only a NULL argument or running out of
// memory is an error.
#include <memory>
#include <sys/stat.h>
#include <time.h>

#include <new>

#include "db_topo.h"
#include "topo.hh"

struct db_topo_node_result {
    std::string source, fallback;
    std::vector<std::vector<size_t>> gpus;
    std::vector<std::string> nics;
    std::vector<db_closest_task> tasks;
    db_closest_input input{};
    double load_ms = 0;
};

namespace db::topo {

namespace {

double now_ms() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// --gpus-per-task as srun exports it: "2" or "type:2".
size_t gpus_per_task(const char *v) {
    std::string_view s(v);
    std::string_view num = s.substr(s.rfind(':') == std::string_view::npos ? 0 : s.rfind(':') + 1);
    uint64_t k;
    if (!parse_uint(num, 1u << 16, k) || k == 0)
        throw Error(quoted("SLURM_GPUS_PER_TASK", s) + ": expected a count (N or TYPE:N)");
    return static_cast<size_t>(k);
}

// From 23.11 srun and sbatch pass --gpus-per-task only inside
// SLURM_TRES_PER_TASK ("cpu=4,gres/gpu=2", "gres/gpu:type=2"); 0 when it
// names no GPUs.
size_t tres_gpus_per_task(const char *v) {
    std::string_view s(v);
    while (!s.empty()) {
        const size_t comma = s.find(',');
        const std::string_view item = s.substr(0, comma);
        s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
        if (item.substr(0, 8) != "gres/gpu" || (item.size() > 8 && item[8] != '=' && item[8] != ':')) continue;
        const size_t eq = item.rfind('=');
        uint64_t k;
        if (eq == std::string_view::npos || !parse_uint(item.substr(eq + 1), 1u << 16, k) || k == 0)
            throw Error(quoted("SLURM_TRES_PER_TASK", v) + ": expected a GPU count (gres/gpu=N or gres/gpu:TYPE=N)");
        return static_cast<size_t>(k);
    }
    return 0;
}

// The numbers Slurm knows the step's GPUs by on this node: with cgroup
// device confinement CUDA_VISIBLE_DEVICES counts from 0 inside the step,
// while SLURM_STEP_GPUS keeps the node's numbering, position for position.
std::vector<std::string> slurm_ids(const db_topo_node_request &rq) {
    std::vector<std::string> plan(rq.gpus, rq.gpus + rq.ngpus);
    if (const char *sg = env_get(rq.env, "SLURM_STEP_GPUS")) {
        std::vector<std::string> node = parse_gpu_list(sg, "SLURM_STEP_GPUS");
        if (node.size() == plan.size()) return node;
    }
    return plan;
}

Topology load(const db_topo_node_request &rq, std::string &why_live) {
    if (rq.cached_xml && *rq.cached_xml) {
        struct stat st;
        if (stat(rq.cached_xml, &st) == 0) {
            try {
                Topology cached = Topology::from_xml_file(rq.cached_xml);
                // slurmd 22.05 writes its cache with hwloc's default
                // filters, which drop every I/O object: no GPU to match.
                if (hwloc_get_next_pcidev(cached.get(), nullptr)) return cached;
                why_live = std::string("cached topology ") + rq.cached_xml + " has no I/O devices";
            } catch (const Error &e) {
                why_live = std::string("cached topology unusable: ") + e.what();
            }
        } else {
            why_live = std::string("no ") + rq.cached_xml;
        }
    }
    return Topology::live();
}

void choose_node(const db_topo_node_request &rq, db_topo_node_result &r) {
    if (rq.ngpus == 0 || !rq.gpus) throw Error("the step has no GPUs on this node");
    if (rq.ntasks == 0) throw Error("no tasks on this node");
    if (!rq.step_cores || !*rq.step_cores) throw Error("Slurm did not say which cores the step has (S_STEP_ALLOC_CORES)");
    const std::vector<std::string> ids = slurm_ids(rq);
    const char *gpt = env_get(rq.env, "SLURM_GPUS_PER_TASK");
    const char *tpt = env_get(rq.env, "SLURM_TRES_PER_TASK");
    const size_t given = gpt ? gpus_per_task(gpt) : tpt ? tres_gpus_per_task(tpt) : 0;
    const size_t k = given ? given : rq.ntasks == 1 ? rq.ngpus : 1;
    const Dist dist = parse_distribution(env_get(rq.env, "SLURM_DISTRIBUTION"));
    const std::vector<unsigned> cores = parse_list(rq.step_cores, "S_STEP_ALLOC_CORES");

    std::string why_live;
    const double t0 = now_ms();
    Topology t = load(rq, why_live);
    r.load_ms = now_ms() - t0;
    r.source = t.source() == "live discovery" ? "topology by live discovery" : "topology from " + t.source();
    if (!why_live.empty()) r.source += " (" + why_live + ")";

    const char *nv = env_get(rq.env, DB_TOPO_NVIDIA_ENV);
    const Matched m = match_gpus(t, ids, read_nvidia(nv && *nv ? nv : DB_TOPO_NVIDIA_DIR));
    const std::vector<Bitmap> cpus = model_task_cpus(t, cores, rq.ntasks, rq.cpus_per_task, dist);
    const std::vector<Choice> choice = choose(t, m.pci, cpus, k);
    r.source += ", " + m.how + ", task CPUs " + dist_name(dist) + " over cores " + rq.step_cores;

    for (const Choice &c : choice) {
        r.gpus.push_back(c.gpus);
        r.nics.push_back(join(c.nics));
    }
    r.tasks.resize(choice.size());
    for (size_t i = 0; i < choice.size(); i++)
        r.tasks[i] = db_closest_task{r.gpus[i].data(), r.gpus[i].size(), choice[i].numa, r.nics[i].c_str()};
}

}  // namespace

}  // namespace db::topo

extern "C" {

int db_topo_node_choose(const db_topo_node_request *rq, db_topo_node_result **out, char *err, size_t errlen) {
    if (out) *out = nullptr;
    if (!rq || !out) {
        db::copy_out("closest: no request", err, errlen);
        return -1;
    }
    try {
        // Owned here until handed out, also when building a message throws.
        std::unique_ptr<db_topo_node_result> r(new db_topo_node_result());
        try {
            db::topo::choose_node(*rq, *r);
        } catch (const db::Error &e) {
            const std::string where = r->source;
            const double ms = r->load_ms;
            *r = db_topo_node_result();
            r->fallback = e.what();
            if (!where.empty()) r->fallback += "; " + where;
            r->load_ms = ms;
        } catch (const std::bad_alloc &) {
            throw;
        } catch (const std::exception &e) {
            *r = db_topo_node_result();
            r->fallback = std::string("internal error: ") + e.what();
        }
        r->input.source = r->source.empty() ? nullptr : r->source.c_str();
        r->input.fallback = r->fallback.empty() ? nullptr : r->fallback.c_str();
        r->input.tasks = r->tasks.empty() ? nullptr : r->tasks.data();
        r->input.ntasks = r->tasks.size();
        *out = r.release();
        return 0;
    } catch (...) {
        db::copy_out("closest: out of memory", err, errlen);
        return -1;
    }
}

const db_closest_input *db_topo_node_closest(const db_topo_node_result *r) { return r ? &r->input : nullptr; }

double db_topo_node_load_ms(const db_topo_node_result *r) { return r ? r->load_ms : 0; }

void db_topo_node_result_free(db_topo_node_result *r) { delete r; }

int db_topo_cache_path(const char *spooldir, const char *node, const char *host, char *out, size_t outlen) {
    if (!spooldir || !*spooldir || !out || outlen == 0) return -1;
    try {
        std::string s;
        for (const char *p = spooldir; *p; p++) {
            if (p[0] == '%' && p[1] == 'n') {
                s += node ? node : "";
                p++;
            } else if (p[0] == '%' && p[1] == 'h') {
                s += host ? host : "";
                p++;
            } else {
                s += *p;
            }
        }
        s += "/" DB_TOPO_CACHE_NAME;
        if (s.size() >= outlen) return -1;
        db::copy_out(s, out, outlen);
        return 0;
    } catch (...) {
        return -1;
    }
}

}  // extern "C"
