// DIST_BIND_BOOTSTRAP: auto, pmix, pmi2 or tcp.
#include "bootstrap/choose.hh"

#include <string>

#include "bootstrap/beside_mpi.hh"
#include "bootstrap/pmi2.hh"
#include "bootstrap/pmix.hh"
#include "bootstrap/tcp/tcp.hh"

namespace db::rt {

namespace {

ExchangeConfig config_for(const Identity &id, const Params &p) {
    ExchangeConfig c;
    c.rank = id.rank;
    c.world = id.world;
    c.timeout_s = p.timeout_s;
    c.fanout = p.fanout;
    c.step_key = p.step_key;
    c.secret = p.secret;
    c.tcp_insecure = p.tcp_insecure;
    c.master_addr = p.master_addr;
    c.master_port = p.master_port;
    if (id.relaunched && c.master_port) {
        // torchrun's workers: its store listens on MASTER_PORT, and the
        // PMI server's ranks are its agents', not theirs.
        c.master_port = c.master_port < 65535 ? c.master_port + 1 : c.master_port - 1;
        c.port_from = std::string("MASTER_PORT") + (p.master_port < 65535 ? "+1" : "-1") +
                      ", as a launcher re-ranked this process and its store holds MASTER_PORT";
        debugf("a launcher re-ranked this process: the TCP bootstrap on port %u (%s)", c.master_port,
               c.port_from.c_str());
    }
    return c;
}

// A PMI server that Slurm started is there for this step; TCP needs only
// rank 0 to be reachable.  The next one is tried only when a backend is
// UNAVAILABLE, which the backends report only before their first
// collective (library, init, job size): once the ranks have begun one
// together, a failure there is PEER, SYSTEM or TIMEOUT, so ranks never end
// up split between them.  Beside an MPI library that would break on the
// same PMI server, TCP (beside_mpi.cc).
std::unique_ptr<Exchange> choose_auto(const Env &env, const ExchangeConfig &c) {
    const MpiSeen mpi = mpi_in_process();
    std::string skipped;
    auto clashes = [&](const char *pmi) {
        std::string why = pmi_conflict(mpi, pmi);
        if (why.empty()) return false;
        debugf("not %s: %s", pmi, why.c_str());
        skipped = std::string("not ") + pmi + ": " + why;
        return true;
    };
    struct Pmi {
        const char *name;
        bool (*has_server)(const Env &);
        std::unique_ptr<Exchange> (*make)(const ExchangeConfig &);
    };
    for (const Pmi &b : {Pmi{"pmix", pmix_has_server, make_pmix}, Pmi{"pmi2", pmi2_has_server, make_pmi2}}) {
        if (!b.has_server(env) || clashes(b.name)) continue;
        try {
            return b.make(c);
        } catch (const Failure &f) {
            if (f.status != DISTBIND_ERR_UNAVAILABLE) throw;
            debugf("%s unavailable, trying the next bootstrap: %s", b.name, f.what());
        }
    }
    try {
        return make_tcp(c);
    } catch (const Failure &f) {
        if (skipped.empty()) throw;
        fail(f.status, std::string(f.what()) + " (DIST_BIND_BOOTSTRAP=auto took tcp, " + skipped + ")");
    }
}

}  // namespace

std::unique_ptr<Exchange> choose_exchange(const Env &env, const Identity &id, const Params &p) {
    const ExchangeConfig c = config_for(id, p);
    const std::string &how = p.bootstrap;
    if (how == "auto" && id.relaunched) {
        debugf("a launcher re-ranked this process: its PMI ranks are the launcher's, using tcp");
        return make_tcp(c);
    }
    if (how == "auto") return choose_auto(env, c);
    if (how == "pmix") {
        if (!pmix_has_server(env))
            fail(DISTBIND_ERR_UNAVAILABLE,
                 "DIST_BIND_BOOTSTRAP=pmix, but this task has no PMIx server "
                 "(PMIX_NAMESPACE is not set): start it with srun --mpi=pmix");
        return make_pmix(c);
    }
    if (how == "pmi2") {
        if (!pmi2_has_server(env))
            fail(DISTBIND_ERR_UNAVAILABLE,
                 "DIST_BIND_BOOTSTRAP=pmi2, but this task has no PMI2 server "
                 "(PMI_FD is not set): start it with srun --mpi=pmi2");
        return make_pmi2(c);
    }
    return make_tcp(c);
}

bool launcher_place(const Env &env, std::shared_ptr<void> &keep, double timeout_s, LauncherPlace &out) {
    if (!pmix_has_server(env)) return false;
    const PmixPlace p = pmix_place(keep, timeout_s);
    out = {p.rank, p.world, p.local_rank, p.local_world, p.node_rank};
    return true;
}

}  // namespace db::rt
