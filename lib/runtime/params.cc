// Every environment setting of the library is read here, once, and strictly:
// a malformed value is an error naming the variable, the value and what was
// expected, never a silent default.
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "rt.hh"
#include "text.hh"

namespace db::rt {

Env::Env(const char *const *env) {
    for (; env && *env; env++) vars_.emplace_back(*env);
}

const char *Env::get(std::string_view name) const {
    for (const std::string &v : vars_)
        if (v.size() > name.size() && v[name.size()] == '=' && v.compare(0, name.size(), name) == 0)
            return v.c_str() + name.size() + 1;
    return nullptr;
}

namespace {
bool g_debug = false;
int g_debug_rank = -1;

void note(const char *name, const char *value) {
    if (value) debugf("%s set by environment to %s", name, value);
}

unsigned need_range(const Env &env, const char *name, unsigned lo, unsigned hi, unsigned def) {
    const char *v = env.get(name);
    note(name, v);
    if (!v) return def;
    uint64_t n;
    if (!parse_uint(v, hi, n) || n < lo)
        fail(DISTBIND_ERR_ENV, quoted(name, v) + ": expected a whole number from " + std::to_string(lo) +
                                   " to " + std::to_string(hi));
    return static_cast<unsigned>(n);
}
}  // namespace

void check_bootstrap_name(std::string_view name, std::string_view what) {
    if (name != "auto" && name != "pmix" && name != "pmi2" && name != "tcp")
        fail(DISTBIND_ERR_ENV, quoted(what, name) + ": expected auto, pmix, pmi2 or tcp");
}

// "30", "2.5": positive seconds, at most a week, at most 3 decimals.
double parse_seconds(std::string_view s, std::string_view what) {
    auto bad = [&]() -> double {
        fail(DISTBIND_ERR_ENV, quoted(what, s) + ": expected seconds, a number like 30 or 2.5 above 0 and at most 604800");
    };
    size_t dot = s.find('.');
    std::string_view whole = s.substr(0, dot);
    uint64_t w, f = 0;
    if (!parse_uint(whole, 604800, w)) return bad();
    double frac = 0;
    if (dot != std::string_view::npos) {
        std::string_view fs = s.substr(dot + 1);
        if (fs.empty() || fs.size() > 3 || !parse_uint(fs, 999, f)) return bad();
        frac = static_cast<double>(f);
        for (size_t i = 0; i < fs.size(); i++) frac /= 10;
    }
    double v = static_cast<double>(w) + frac;
    if (v <= 0 || v > 604800) return bad();
    return v;
}

Params read_params(const Env &env) {
    Params p;
    const char *dbg = env.get("DIST_BIND_DEBUG");
    if (dbg) {
        if (std::strcmp(dbg, "0") != 0 && std::strcmp(dbg, "1") != 0)
            fail(DISTBIND_ERR_ENV, quoted("DIST_BIND_DEBUG", dbg) + ": expected 0 or 1");
        p.debug = dbg[0] == '1';
    }
    if (p.debug) debug_enable(true, -1);
    if (const char *v = env.get("DIST_BIND_BOOTSTRAP")) {
        note("DIST_BIND_BOOTSTRAP", v);
        check_bootstrap_name(v, "DIST_BIND_BOOTSTRAP");
        p.bootstrap = v;
    }
    if (const char *v = env.get("DIST_BIND_TIMEOUT")) {
        note("DIST_BIND_TIMEOUT", v);
        p.timeout_s = parse_seconds(v, "DIST_BIND_TIMEOUT");
    }
    p.fanout = need_range(env, "DIST_BIND_TCP_FANOUT", 1, 65535, p.fanout);
    p.nccl_ranks_per_root = need_range(env, "DIST_BIND_NCCL_RANKS_PER_ROOT", 1, 1u << 24, p.nccl_ranks_per_root);

    if (const char *v = env.get("DIST_BIND_STEP_KEY")) {
        note("DIST_BIND_STEP_KEY", v);
        if (!*v || std::strlen(v) > 200)
            fail(DISTBIND_ERR_ENV, quoted("DIST_BIND_STEP_KEY", v) + ": expected 1 to 200 characters");
        p.step_key = v;
    } else {
        const char *job = env.get("SLURM_JOB_ID"), *step = env.get("SLURM_STEP_ID");
        // Only an identity both halves of which are there; a partial one
        // would make two steps of one job look alike.
        if (job && step && std::strlen(job) + std::strlen(step) < 200)
            p.step_key = std::string(job) + "." + step;
    }

    if (const char *v = env.get("MASTER_ADDR")) {
        note("MASTER_ADDR", v);
        if (!*v || std::strlen(v) > 255 || std::strpbrk(v, " \t\n"))
            fail(DISTBIND_ERR_ENV, quoted("MASTER_ADDR", v) + ": expected a host name or IPv4 address");
        p.master_addr = v;
    }
    if (const char *v = env.get("MASTER_PORT")) {
        note("MASTER_PORT", v);
        uint64_t port;
        if (!parse_uint(v, 65535, port) || port == 0)
            fail(DISTBIND_ERR_ENV, quoted("MASTER_PORT", v) + ": expected a port number from 1 to 65535");
        p.master_port = static_cast<unsigned>(port);
    }
    return p;
}

const char *source_name(Source s) {
    switch (s) {
    case Source::Plugin: return "dist-bind";
    case Source::Env: return "env";
    case Source::Slurm: return "slurm";
    case Source::Pmix: return "pmix";
    }
    return "?";
}

void debug_enable(bool on, int rank) {
    g_debug = on;
    g_debug_rank = rank;
}

bool debug_on() { return g_debug; }

void debugf(const char *fmt, ...) {
    if (!g_debug) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g_debug_rank >= 0)
        std::fprintf(stderr, "dist-bind: rank %d: %s\n", g_debug_rank, buf);
    else
        std::fprintf(stderr, "dist-bind: %s\n", buf);
}

int Deadline::ms_left() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - Clock::now()).count();
    if (left <= 0) return 0;
    return left > 1000000000 ? 1000000000 : static_cast<int>(left) + 1;
}

double Deadline::s_left() const {
    double s = std::chrono::duration<double>(at - Clock::now()).count();
    return s > 0 ? s : 0;
}

std::string rank_list(const std::vector<int> &ranks) {
    // Runs as "a-b"; at most this many items before "... (N in all)".
    constexpr size_t kShown = 16;
    std::string out;
    size_t items = 0;
    for (size_t i = 0; i < ranks.size();) {
        size_t j = i;
        // In 64 bits: the ranks may come from another rank's message.
        while (j + 1 < ranks.size() && int64_t{ranks[j + 1]} == int64_t{ranks[j]} + 1) j++;
        if (items == kShown) {
            out += ", ... (" + std::to_string(ranks.size()) + " ranks in all)";
            break;
        }
        if (!out.empty()) out += ", ";
        out += std::to_string(ranks[i]);
        if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
        items++;
        i = j + 1;
    }
    return out;
}

}  // namespace db::rt
