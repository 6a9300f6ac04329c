// The node's closest choice behind the C boundary: everything that can go
// wrong becomes a fallback reason; only a NULL argument or running out of
// memory is an error.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

#include "db_topo.h"
#include "plan.hh"
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

// --gpus-per-task as srun exports it: "2", "type:2", from 25.05 also
// "a100:1,v100:1" (Slurm binds the sum).
size_t gpus_per_task(const char *v) {
    uint64_t k;
    if (!gpus_per_task_count(v, k))
        throw Error(quoted("SLURM_GPUS_PER_TASK", v) + ": expected a count (N, TYPE:N, or TYPE:N,TYPE:M,...)");
    return static_cast<size_t>(k);
}

// From 23.11 srun and sbatch pass --gpus-per-task only inside
// SLURM_TRES_PER_TASK ("cpu=4,gres/gpu=2", "gres/gpu:type=2", the gres/gpu
// items of several types summed); 0 when it names no GPUs.
size_t tres_gpus_per_task(const char *v) {
    uint64_t k;
    if (!tres_gpu_count(v, k))
        throw Error(quoted("SLURM_TRES_PER_TASK", v) + ": expected a GPU count (gres/gpu=N or gres/gpu:TYPE=N)");
    return static_cast<size_t>(k);
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

std::string errno_text(int e) {
    char buf[128];
    return strerror_r(e, buf, sizeof buf);  // GNU: may return a static string
}

// The cache, if it is one slurmd (or root) wrote and nobody else can have
// changed: a regular file reached without following a symbolic link, owned
// by root or by this process's real user (slurmstepd's real uid is
// slurmd's; its effective one is the job user's in user_init), writable by
// its owner only.  Else "" and the reason in `why`.
std::string read_trusted(const char *path, std::string &why) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        why = e == ENOENT  ? std::string("no ") + path
              : e == ELOOP ? std::string("cached topology ") + path + " is a symbolic link: not used"
                           : std::string("cached topology ") + path + ": " + errno_text(e);
        return "";
    }
    std::unique_ptr<int, void (*)(int *)> guard(&fd, [](int *f) { close(*f); });
    struct stat st;
    if (fstat(fd, &st) != 0) {
        why = std::string("cached topology ") + path + ": " + errno_text(errno);
        return "";
    }
    if (!S_ISREG(st.st_mode)) {
        why = std::string("cached topology ") + path + ": not a regular file";
        return "";
    }
    if (st.st_uid != 0 && st.st_uid != getuid()) {
        why = std::string("cached topology ") + path + " is owned by uid " + std::to_string(st.st_uid) +
              ", not by root or slurmd's user: not used";
        return "";
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        why = std::string("cached topology ") + path + " is writable by group or others: not used";
        return "";
    }
    if (static_cast<uint64_t>(st.st_size) > Topology::kMaxXml) {
        why = std::string("cached topology ") + path + " is larger than " + std::to_string(Topology::kMaxXml >> 20) +
              " MiB";
        return "";
    }
    std::string text(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < text.size()) {
        ssize_t n = read(fd, &text[got], text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            why = std::string("cached topology ") + path + ": " + errno_text(errno);
            return "";
        }
        if (n == 0) break;
        got += static_cast<size_t>(n);
    }
    text.resize(got);
    if (text.empty()) why = std::string("cached topology unusable: ") + path + ": empty file";
    return text;
}

Topology load(const db_topo_node_request &rq, std::string &why_live) {
    if (rq.cached_xml && *rq.cached_xml) {
        std::string text = read_trusted(rq.cached_xml, why_live);
        if (!text.empty()) {
            try {
                Topology cached = Topology::from_xml_text(text, rq.cached_xml);
                // slurmd 22.05 writes its cache with hwloc's default
                // filters, which drop every I/O object: no GPU to match.
                if (hwloc_get_next_pcidev(cached.get(), nullptr)) return cached;
                why_live = std::string("cached topology ") + rq.cached_xml + " has no I/O devices";
            } catch (const Error &e) {
                why_live = std::string("cached topology unusable: ") + e.what();
            }
        }
    } else if (rq.no_cache && *rq.no_cache) {
        why_live = rq.no_cache;
    }
    return Topology::live();
}

// Where the NVIDIA driver's view is read: only test builds may point it
// elsewhere (the step's environment is the user's).
std::string nvidia_dir(const db_topo_node_request &rq) {
#ifdef DB_TEST_KNOBS
    const char *nv = env_get(rq.env, DB_TOPO_NVIDIA_ENV);
    if (nv && *nv) return nv;
#else
    (void)rq;
#endif
    return DB_TOPO_NVIDIA_DIR;
}

void choose_node(const db_topo_node_request &rq, db_topo_node_result &r) {
    if (rq.ngpus == 0 || !rq.gpus) throw Error("the step has no GPUs on this node");
    if (rq.ntasks == 0) throw Error("no tasks on this node");
    if (!rq.step_cores || !*rq.step_cores)
        throw Error("Slurm did not say which cores the step has (S_STEP_ALLOC_CORES)");
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

    const Matched m = match_gpus(t, ids, read_nvidia(nvidia_dir(rq)));
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

namespace {
// A name that cannot take a path anywhere: what Slurm allows in a node name.
bool plain_name(const char *s) {
    if (!s || !*s || std::strlen(s) > 255 || !std::strcmp(s, ".") || !std::strcmp(s, "..")) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_' || *p == '.'))
            return false;
    return true;
}
}  // namespace

int db_topo_cache_path(const char *tmpl, const char *node, const char *host, char *out, size_t outlen) {
    if (!tmpl || !*tmpl || !out || outlen == 0) return -1;
    try {
        std::string s;
        for (const char *p = tmpl; *p; p++) {
            if (*p != '%') {
                s += *p;
                continue;
            }
            const char *name = p[1] == 'n' ? node : p[1] == 'h' ? host : nullptr;
            if (p[1] == '%') {
                s += '%';
            } else if (!name || !plain_name(name)) {
                return -1;
            } else {
                s += name;
            }
            p++;
        }
        if (s.size() >= outlen) return -1;
        db::copy_out(s, out, outlen);
        return 0;
    } catch (...) {
        return -1;
    }
}

}  // extern "C"
