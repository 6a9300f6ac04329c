// The C boundary of libdistbind: every exception stops here and becomes a
// status plus one message, "dist-bind: rank R: ...".
#include <cstring>
#include <new>
#include <string>

#include "bootstrap/choose.hh"
#include "capi.hh"
#include "core/rt.hh"
#include "discovery.hh"
#include "gpu/gpu.hh"
#include "text.hh"

namespace {

// An error message that can be set without throwing: a fixed text is only
// pointed at, and a built one that cannot be stored (out of memory) falls
// back to a fixed one.  Moving it never allocates.
class ErrText {
  public:
    void set_fixed(const char *text) noexcept {
        s_.clear();
        fixed_ = text;
    }
    void set(std::string &&text) noexcept {
        s_ = std::move(text);
        fixed_ = nullptr;
    }
    void clear() noexcept { set_fixed(""); }
    const char *c_str() const noexcept { return fixed_ ? fixed_ : s_.c_str(); }

  private:
    std::string s_;
    const char *fixed_ = "";
};

}  // namespace

struct distbind {
    db::rt::Env env;
    db::rt::DebugCtx dbg;  // DIST_BIND_DEBUG and the rank, for this handle's calls
    db::rt::Params params;
    db::rt::Identity id;
    std::shared_ptr<void> pmix_keep;  // the PMIx client, when discovery used it
    std::unique_ptr<db::rt::Exchange> ex;
    ErrText err;
    bool device_set = false;
    std::string bus_id;
    void *comm = nullptr;
    int nccl_blocking = -1;         // for a NULL config: -1 NCCL's default
    bool comm_nonblocking = false;  // whether NCCL made `comm` non-blocking

    explicit distbind(db::rt::Env e) : env(std::move(e)) {}
};

namespace {

thread_local ErrText t_err;

using db::rt::Failure;
using db::rt::fail;

std::string format(const distbind *h, const std::string &msg) {
    if (h && h->id.rank >= 0) return "dist-bind: rank " + std::to_string(h->id.rank) + ": " + msg;
    return "dist-bind: " + msg;
}

template <typename F>
distbind_status guarded(const distbind *h, ErrText &err, F &&f) noexcept {
    distbind_status st = DISTBIND_ERR_INTERNAL;
    // Building the message allocates, and may throw inside a handler: the
    // outer try catches that, and the status found so far stands.
    try {
        try {
            f();
            return DISTBIND_OK;
        } catch (const Failure &e) {
            st = e.status;
            err.set(format(h, e.what()));
        } catch (const db::Error &e) {
            st = DISTBIND_ERR_ENV;
            err.set(format(h, e.what()));
        } catch (const std::bad_alloc &) {
            st = DISTBIND_ERR_INTERNAL;
            err.set_fixed("dist-bind: out of memory");
        } catch (const std::exception &e) {
            st = DISTBIND_ERR_INTERNAL;
            err.set(format(h, std::string("internal error: ") + e.what()));
        } catch (...) {
            st = DISTBIND_ERR_INTERNAL;
            err.set_fixed("dist-bind: internal error");
        }
    } catch (...) {
        err.set_fixed("dist-bind: out of memory (while reporting an error)");
    }
    return st;
}

// For calls on a handle: the message goes to the handle.
template <typename F>
distbind_status on(distbind *h, F &&f) noexcept {
    if (!h) {
        t_err.set_fixed("dist-bind: NULL handle");
        return DISTBIND_ERR_ARG;
    }
    db::rt::DebugScope scope(h->dbg);
    return guarded(h, h->err, std::forward<F>(f));
}

// What one collective may carry.  The message names the numbers, so the
// caller sees what to split.
void check_size(const char *fn, size_t len, int world, bool per_rank) {
    constexpr size_t kMax = DISTBIND_MAX_EXCHANGE_BYTES;
    size_t w = static_cast<size_t>(world);
    if (per_rank ? len <= kMax / w : len <= kMax) return;
    std::string limit = "the limit of " + std::to_string(kMax) + " bytes (1 GiB) one collective can carry";
    if (!per_rank)
        fail(DISTBIND_ERR_ARG, std::string(fn) + ": len " + std::to_string(len) + " is above " + limit +
                                   " (world size " + std::to_string(world) + "): send it in parts");
    std::string total = len <= kMax ? " = " + std::to_string(len * w) + " bytes" : "";
    fail(DISTBIND_ERR_ARG, std::string(fn) + ": len " + std::to_string(len) + " bytes per rank x world size " +
                               std::to_string(world) + total + " is above " + limit + ": send it in parts");
}

db::rt::Exchange &exchange(distbind *h) {
    if (!h->ex) fail(DISTBIND_ERR_STATE, "the exchange is not up: call distbind_connect (or distbind_init) first");
    return *h->ex;
}

// env: a NAME=VALUE array, or nullptr for the process's environment.
void create_into(distbind **out, const char *const *env) {
    auto h = std::make_unique<distbind>(env ? db::rt::Env(env) : db::rt::Env::process());
    h->params = db::rt::read_params(h->env);
    h->env.forget("DIST_BIND_SECRET");  // it lives in params now
    h->dbg.on = h->params.debug;
    db::rt::DebugScope scope(h->dbg);
    h->id = db::rt::discover(h->env, h->pmix_keep, h->params.timeout_s);
    h->dbg.rank = h->id.rank;
    db::rt::debugf("place from %s: rank %d of %d, local rank %d of %d, node %d, device %d (from %s), host %s",
                   db::rt::source_name(h->id.source), h->id.rank, h->id.world, h->id.local_rank, h->id.local_world,
                   h->id.node_rank, h->id.device, h->id.device_from.c_str(), h->id.host.c_str());
    *out = h.release();
}

distbind_status create(distbind **out, const char *const *env) noexcept {
    if (!out) {
        t_err.set_fixed("dist-bind: distbind_create: out is NULL");
        return DISTBIND_ERR_ARG;
    }
    *out = nullptr;
    t_err.clear();
    return guarded(nullptr, t_err, [&] { create_into(out, env); });
}

}  // namespace

distbind_status db::rt::unbound_call(const std::function<void()> &f) noexcept {
    t_err.clear();
    return guarded(nullptr, t_err, f);
}

extern "C" {

const char *distbind_status_name(distbind_status s) {
    switch (s) {
    case DISTBIND_OK: return "DISTBIND_OK";
    case DISTBIND_ERR_ARG: return "DISTBIND_ERR_ARG";
    case DISTBIND_ERR_ENV: return "DISTBIND_ERR_ENV";
    case DISTBIND_ERR_TIMEOUT: return "DISTBIND_ERR_TIMEOUT";
    case DISTBIND_ERR_PEER: return "DISTBIND_ERR_PEER";
    case DISTBIND_ERR_SYSTEM: return "DISTBIND_ERR_SYSTEM";
    case DISTBIND_ERR_UNAVAILABLE: return "DISTBIND_ERR_UNAVAILABLE";
    case DISTBIND_ERR_NO_GPU: return "DISTBIND_ERR_NO_GPU";
    case DISTBIND_ERR_DEVICE: return "DISTBIND_ERR_DEVICE";
    case DISTBIND_ERR_NCCL: return "DISTBIND_ERR_NCCL";
    case DISTBIND_ERR_STATE: return "DISTBIND_ERR_STATE";
    case DISTBIND_ERR_INTERNAL: return "DISTBIND_ERR_INTERNAL";
    }
    return "DISTBIND_ERR_UNKNOWN";
}

const char *distbind_version(void) { return DB_VERSION_STRING; }

distbind_status distbind_create(distbind_t **out) { return create(out, nullptr); }

distbind_status distbind_create_env(distbind_t **out, const char *const *env) {
    if (!env) {
        t_err.set_fixed("dist-bind: distbind_create_env: env is NULL");
        if (out) *out = nullptr;
        return DISTBIND_ERR_ARG;
    }
    return create(out, env);
}

distbind_status distbind_set_bootstrap(distbind_t *h, const char *name) {
    return on(h, [&] {
        if (!name) fail(DISTBIND_ERR_ARG, "distbind_set_bootstrap: name is NULL");
        if (h->ex) fail(DISTBIND_ERR_STATE, "distbind_set_bootstrap: the exchange is already up");
        try {
            db::rt::check_bootstrap_name(name, "bootstrap");
        } catch (const Failure &f) {
            fail(DISTBIND_ERR_ARG, f.what());
        }
        h->params.bootstrap = name;
    });
}

distbind_status distbind_set_timeout(distbind_t *h, double seconds) {
    return on(h, [&] {
        if (!(seconds > 0) || seconds > 604800)
            fail(DISTBIND_ERR_ARG, "distbind_set_timeout: " + std::to_string(seconds) +
                                       " is not a timeout (expected seconds above 0, at most 604800)");
        if (h->ex) fail(DISTBIND_ERR_STATE, "distbind_set_timeout: the exchange is already up");
        h->params.timeout_s = seconds;
    });
}

distbind_status distbind_connect(distbind_t *h) {
    return on(h, [&] {
        if (h->ex) fail(DISTBIND_ERR_STATE, "distbind_connect: the exchange is already up");
        h->ex = db::rt::choose_exchange(h->env, h->id, h->params);
        db::rt::debugf("exchange up over %s", h->ex->name());
    });
}

distbind_status distbind_init(distbind_t **out) {
    distbind_status st = distbind_create(out);
    if (st != DISTBIND_OK) return st;
    st = distbind_connect(*out);
    if (st != DISTBIND_OK) {
        t_err = std::move((*out)->err);
        distbind_destroy(*out);
        *out = nullptr;
    }
    return st;
}

void distbind_destroy(distbind_t *h) {
    if (!h) return;
    db::rt::DebugScope scope(h->dbg);
    try {
        db::rt::gpu::nccl_destroy(h->comm);
    } catch (...) {}
    delete h;
}

int distbind_rank(const distbind_t *h) { return h ? h->id.rank : -1; }
int distbind_world_size(const distbind_t *h) { return h ? h->id.world : -1; }
int distbind_local_rank(const distbind_t *h) { return h ? h->id.local_rank : -1; }
int distbind_local_world_size(const distbind_t *h) { return h ? h->id.local_world : -1; }
int distbind_node_rank(const distbind_t *h) { return h ? h->id.node_rank : -1; }
int distbind_device(const distbind_t *h) { return h ? h->id.device : -1; }

const char *distbind_source(const distbind_t *h) { return h ? db::rt::source_name(h->id.source) : nullptr; }

int distbind_relaunched(const distbind_t *h) { return h && h->id.relaunched ? 1 : 0; }

const char *distbind_bootstrap(const distbind_t *h) { return h && h->ex ? h->ex->name() : nullptr; }

distbind_status distbind_broadcast(distbind_t *h, void *buf, size_t len, int root) {
    return on(h, [&] {
        if (!buf && len) fail(DISTBIND_ERR_ARG, "distbind_broadcast: buf is NULL");
        if (root < 0 || root >= h->id.world)
            fail(DISTBIND_ERR_ARG, "distbind_broadcast: root " + std::to_string(root) + " is not a rank (0.." +
                                       std::to_string(h->id.world - 1) + ")");
        check_size("distbind_broadcast", len, h->id.world, false);
        exchange(h).broadcast(buf, len, root);
    });
}

distbind_status distbind_allgather(distbind_t *h, const void *send, size_t len, void *recv) {
    return on(h, [&] {
        if ((!send || !recv) && len) fail(DISTBIND_ERR_ARG, "distbind_allgather: send or recv is NULL");
        check_size("distbind_allgather", len, h->id.world, true);
        exchange(h).allgather(send, len, recv);
    });
}

distbind_status distbind_barrier(distbind_t *h) {
    return on(h, [&] { exchange(h).barrier(); });
}

distbind_status distbind_set_device(distbind_t *h, int *device) {
    return on(h, [&] {
        h->bus_id = db::rt::gpu::set_device(exchange(h), h->id, h->env);
        h->device_set = true;
        if (device) *device = h->id.device;
    });
}

distbind_status distbind_gpu_query(distbind_t *h, distbind_gpu_info *info) {
    return on(h, [&] {
        if (!info) fail(DISTBIND_ERR_ARG, "distbind_gpu_query: info is NULL");
        db::rt::gpu::Probe p = db::rt::gpu::probe(h->id, h->env);
        *info = distbind_gpu_info{};
        info->status = p.status;
        info->device = p.device;
        info->count = p.count;
        info->numa = p.numa;
        db::copy_out(p.bus, info->bus_id, sizeof info->bus_id);
        db::copy_out(p.uuid, info->uuid, sizeof info->uuid);
        db::copy_out(p.msg, info->message, sizeof info->message);
    });
}

distbind_status distbind_gpu_bus_id(const distbind_t *ch, char *buf, size_t len) {
    auto *h = const_cast<distbind_t *>(ch);
    return on(h, [&] {
        if (!buf || len == 0) fail(DISTBIND_ERR_ARG, "distbind_gpu_bus_id: no buffer");
        if (!h->device_set) fail(DISTBIND_ERR_STATE, "distbind_gpu_bus_id: call distbind_set_device first");
        if (h->bus_id.size() >= len) fail(DISTBIND_ERR_ARG, "distbind_gpu_bus_id: buffer too small");
        db::copy_out(h->bus_id, buf, len);
    });
}

distbind_status distbind_set_nccl_blocking(distbind_t *h, int blocking) {
    return on(h, [&] {
        if (blocking != 0 && blocking != 1)
            fail(DISTBIND_ERR_ARG, "distbind_set_nccl_blocking: " + std::to_string(blocking) + " is not 0 or 1");
        h->nccl_blocking = blocking;
    });
}

distbind_status distbind_nccl_init(distbind_t *h, const void *config, struct ncclComm **comm) {
    return on(h, [&] {
        if (!comm) fail(DISTBIND_ERR_ARG, "distbind_nccl_init: comm is NULL");
        *comm = nullptr;
        if (!h->device_set) fail(DISTBIND_ERR_STATE, "distbind_nccl_init: call distbind_set_device first");
        if (h->comm) fail(DISTBIND_ERR_STATE, "distbind_nccl_init: this handle already has a communicator");
        h->comm = db::rt::gpu::nccl_init(exchange(h), h->id, h->params, config, h->nccl_blocking, &h->comm_nonblocking);
        *comm = static_cast<struct ncclComm *>(h->comm);
    });
}

distbind_status distbind_nccl_abort(distbind_t *h) {
    return on(h, [&] {
        if (!h->comm) fail(DISTBIND_ERR_STATE, "distbind_nccl_abort: this handle has no communicator");
        void *c = h->comm;
        h->comm = nullptr;
        db::rt::gpu::nccl_abort(c);
    });
}

distbind_status distbind_nccl_allreduce_check(distbind_t *h, size_t bytes, int iters, double *seconds) {
    return on(h, [&] {
        if (!h->comm) fail(DISTBIND_ERR_STATE, "distbind_nccl_allreduce_check: call distbind_nccl_init first");
        double s =
            db::rt::gpu::allreduce_check(exchange(h), h->id, h->params, h->comm, h->comm_nonblocking, bytes, iters);
        if (seconds) *seconds = s;
    });
}

double distbind_timeout(const distbind_t *h) { return h ? h->params.timeout_s : -1; }

const char *distbind_last_error(const distbind_t *h) { return h ? h->err.c_str() : t_err.c_str(); }

long distbind_peak_connections(const distbind_t *h) { return h && h->ex ? h->ex->peak_connections() : 0; }

}  // extern "C"
