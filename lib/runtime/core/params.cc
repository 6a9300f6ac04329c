// Every environment setting of the library is read here, once, and strictly:
// a malformed value is an error naming the variable, the value and what was
// expected, never a silent default.
#include <cstring>

#include "core/rt.hh"
#include "text.hh"

namespace db::rt {

namespace {

void note(const char *name, const char *value) {
    if (value) debugf("%s set by environment to %s", name, value);
}

unsigned need_range(const Env &env, const char *name, unsigned lo, unsigned hi, unsigned def) {
    const char *v = env.get(name);
    note(name, v);
    if (!v) return def;
    uint64_t n;
    if (!parse_uint(v, hi, n) || n < lo)
        fail(DISTBIND_ERR_ENV,
             quoted(name, v) + ": expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
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
        fail(DISTBIND_ERR_ENV,
             quoted(what, s) + ": expected seconds, a number like 30 or 2.5 above 0 and at most 604800");
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

namespace {

// "0" or "1" in NAME; `def` when unset.
bool read_flag(const Env &env, const char *name, bool def) {
    const char *v = env.get(name);
    if (!v) return def;
    if (std::strcmp(v, "0") != 0 && std::strcmp(v, "1") != 0)
        fail(DISTBIND_ERR_ENV, quoted(name, v) + ": expected 0 or 1");
    return v[0] == '1';
}

// DIST_BIND_STEP_KEY, else SLURM_JOB_ID.SLURM_STEP_ID, else "".
std::string read_step_key(const Env &env) {
    if (const char *v = env.get("DIST_BIND_STEP_KEY")) {
        note("DIST_BIND_STEP_KEY", v);
        if (!*v || std::strlen(v) > 200)
            fail(DISTBIND_ERR_ENV, quoted("DIST_BIND_STEP_KEY", v) + ": expected 1 to 200 characters");
        return v;
    }
    const char *job = env.get("SLURM_JOB_ID"), *step = env.get("SLURM_STEP_ID");
    // Only an identity both halves of which are there; a partial one
    // would make two steps of one job look alike.
    if (job && step && std::strlen(job) + std::strlen(step) < 200) return std::string(job) + "." + step;
    return "";
}

// DIST_BIND_SECRET and DIST_BIND_TCP_INSECURE.  The secret's value is
// never shown, not even when debugging.
void read_tcp_trust(const Env &env, Params &p) {
    if (const char *v = env.get("DIST_BIND_SECRET")) {
        if (!p.secret.parse_hex(v))
            fail(DISTBIND_ERR_ENV, "DIST_BIND_SECRET (" + std::to_string(std::strlen(v)) +
                                       " characters) is not a secret: expected 64 hex digits (256 bits), as srun "
                                       "--dist-bind sets it or `openssl rand -hex 32` prints it");
        debugf("DIST_BIND_SECRET set by environment (%zu characters)", std::strlen(v));
    }
    note("DIST_BIND_TCP_INSECURE", env.get("DIST_BIND_TCP_INSECURE"));
    p.tcp_insecure = read_flag(env, "DIST_BIND_TCP_INSECURE", p.tcp_insecure);
}

// MASTER_ADDR and MASTER_PORT, for the TCP bootstrap.
void read_master(const Env &env, Params &p) {
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
}

}  // namespace

Params read_params(const Env &env) {
    Params p;
    p.debug = read_flag(env, "DIST_BIND_DEBUG", p.debug);
    // The settings read from here on are noted when debugging.
    DebugCtx ctx{p.debug, -1};
    DebugScope scope(ctx);
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
    p.step_key = read_step_key(env);
    read_tcp_trust(env, p);
    read_master(env, p);
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

}  // namespace db::rt
