// The internals the C unit tests reach (see runtime_hooks.h); linked into
// the tests only, never into libdistbind.
#include "runtime_hooks.h"

#include <array>
#include <cctype>
#include <cstring>
#include <functional>
#include <future>
#include <memory>

#include "bootstrap/beside_mpi.hh"
#include "bootstrap/pmi2.hh"
#include "bootstrap/tcp/wire.hh"
#include "core/bounded.hh"
#include "core/rt.hh"
#include "gpu/agree.hh"
#include "gpu/gpu.hh"
#include "gpu/loaders.hh"
#include "text.hh"

using namespace db::rt;

namespace {

// An exchange that plays the other ranks from a script: this is rank 0;
// rank r's allgather contribution and broadcasts come from `peer`.  It
// counts what this rank receives.
class Scripted : public Exchange {
  public:
    Scripted(int world, std::function<void(int rank, void *buf, size_t len, bool bcast)> peer)
        : world_(world), peer_(std::move(peer)) {}
    const char *name() const override { return "scripted"; }
    void broadcast(void *buf, size_t len, int root) override {
        collectives++;
        if (root == 0) return;
        bytes += static_cast<long>(len);
        peer_(root, buf, len, true);
    }
    void allgather(const void *send, size_t len, void *recv) override {
        collectives++;
        bytes += static_cast<long>(len) * world_;
        std::memcpy(recv, send, len);
        for (int r = 1; r < world_; r++) {
            uint8_t *slot = static_cast<uint8_t *>(recv) + static_cast<size_t>(r) * len;
            std::memcpy(slot, send, len);
            peer_(r, slot, len, false);
        }
    }
    void barrier() override { collectives++; }
    long bytes = 0;
    int collectives = 0;

  private:
    int world_;
    std::function<void(int, void *, size_t, bool)> peer_;
};

Identity rank0(int world) {
    Identity id;
    id.rank = 0;
    id.world = world;
    id.local_rank = 0;
    id.local_world = 1;
    id.node_rank = 0;
    id.device = 0;
    id.device_from = "DIST_BIND_DEVICE";
    id.host = "host0";
    return id;
}

// A failing peer's broadcast details, one field left unterminated if asked.
void peer_detail(int r, void *buf, const char *const *hosts, const char *unterminated) {
    gpu::Detail d =
        gpu::make_detail(hosts ? hosts[r] : "host" + std::to_string(r), "0000:0" + std::to_string(r) + ":00.0",
                         "GPU-uuid-of-rank-" + std::to_string(r), "failure of rank " + std::to_string(r));
    std::string f = unterminated ? unterminated : "";
    if (f == "host") std::memset(d.host, 'h', sizeof d.host);
    if (f == "bus") std::memset(d.bus, 'b', sizeof d.bus);
    if (f == "uuid") std::memset(d.uuid, 'u', sizeof d.uuid);
    if (f == "msg") std::memset(d.msg, 'm', sizeof d.msg);
    std::memcpy(buf, &d, sizeof d);
}

template <typename F>
int outcome(F &&f, char *msg, size_t len) {
    try {
        f();
    } catch (const Failure &e) {
        db::copy_out(e.what(), msg, len);
        return e.status;
    }
    db::copy_out("", msg, len);
    return 0;
}

}  // namespace

extern "C" {

int db_rt_test_find_duplicate(int n, const unsigned char (*uuids)[16], int *a, int *b) {
    std::vector<std::array<uint8_t, 16>> u(static_cast<size_t>(n));
    for (int r = 0; r < n; r++) std::memcpy(u[static_cast<size_t>(r)].data(), uuids[r], 16);
    auto [x, y] = gpu::find_duplicate(u);
    *a = x;
    *b = y;
    return x >= 0;
}

void db_rt_test_cudart_names(int major, char *out, size_t len) {
    std::string all;
    for (const std::string &n : gpu::cudart_names(major, "/usr/local/cuda")) all += (all.empty() ? "" : ";") + n;
    db::copy_out(all, out, len);
}

int db_rt_test_nccl_roots(int world, int per_root, int *out, int max) {
    std::vector<int> r = gpu::nccl_roots(world, per_root);
    for (size_t i = 0; i < r.size() && static_cast<int>(i) < max; i++) out[i] = r[i];
    return static_cast<int>(r.size());
}

void db_rt_test_rank_list(const int *ranks, int n, char *out, size_t len) {
    db::copy_out(rank_list(std::vector<int>(ranks, ranks + n)), out, len);
}

int db_rt_test_b64_roundtrip(const unsigned char *p, size_t n) {
    std::string e = b64_encode_bytes(p, n);
    for (char c : e)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return 0;
    std::vector<uint8_t> back;
    return b64_decode_bytes(e.data(), e.size(), back) && back.size() == n &&
           (n == 0 || !std::memcmp(back.data(), p, n));
}

int db_rt_test_bounded_throw(int *status, char *msg, size_t len) {
    try {
        run_bounded<int>([]() -> int { fail(DISTBIND_ERR_PEER, "thrown on the helper thread"); }, Deadline::in(60));
    } catch (const Failure &f) {
        *status = f.status;
        db::copy_out(f.what(), msg, len);
        return 1;
    }
    return 0;
}

int db_rt_test_bounded_late(void) {
    auto release = std::make_shared<std::promise<void>>();
    auto finished = std::make_shared<std::promise<void>>();
    std::shared_future<void> go = release->get_future().share();
    std::future<void> end = finished->get_future();
    std::optional<int> late = run_bounded<int>(
        [go, finished] {
            go.wait();
            finished->set_value();
            return 1;
        },
        Deadline::in(0));
    release->set_value();
    end.wait();
    std::optional<int> in_time = run_bounded<int>([] { return 7; }, Deadline::in(60));
    return !late && in_time && *in_time == 7;
}

double db_rt_test_seconds(const char *s, char *err, size_t len) {
    try {
        return parse_seconds(s, "DIST_BIND_TIMEOUT");
    } catch (const Failure &f) {
        db::copy_out(f.what(), err, len);
        return -1;
    }
}
}

extern "C" {

int db_rt_test_peer_probes(int n, const int *statuses, const unsigned char (*uuids)[16], const char *const *hosts,
                           const char *unterminated, char *msg, size_t len) {
    Scripted ex(n, [&](int r, void *buf, size_t l, bool bcast) {
        if (bcast) return peer_detail(r, buf, hosts, unterminated);
        // set_device's record: status, device, uuid.
        int32_t st = statuses[r], dev = 0;
        std::memcpy(buf, &st, 4);
        std::memcpy(static_cast<char *>(buf) + 4, &dev, 4);
        if (l >= 24) std::memcpy(static_cast<char *>(buf) + 8, uuids[r], 16);
    });
    gpu::Probe p;
    p.status = static_cast<distbind_status>(statuses[0]);
    p.device = 0;
    p.bus = "0000:00:00.0";
    std::memcpy(p.uuid_bytes.data(), uuids[0], 16);
    p.uuid = gpu::format_uuid(p.uuid_bytes);
    p.msg = p.status ? "failure of rank 0" : "";
    return outcome([&] { gpu::agree_on_probes(ex, rank0(n), p); }, msg, len);
}

int db_rt_test_peer_nccl(int n, const int *statuses, const char *unterminated, char *msg, size_t len) {
#ifdef DB_HAVE_CUDA
    Scripted ex(n, [&](int r, void *buf, size_t l, bool bcast) {
        if (bcast && l == sizeof(gpu::Detail)) return peer_detail(r, buf, nullptr, unterminated);
        if (!bcast) std::memcpy(buf, &statuses[r], 4);
    });
    ncclUniqueId uid{};
    Identity id = rank0(n);
    std::vector<int> roots = gpu::nccl_roots(n, 128);
    return outcome(
        [&] {
            gpu::share_ids(ex, id, roots, static_cast<distbind_status>(statuses[0]),
                           statuses[0] ? "failure of rank 0" : "", uid);
        },
        msg, len);
#else
    (void)n, (void)statuses, (void)unterminated;
    db::copy_out("built without CUDA", msg, len);
    return -1;
#endif
}

int db_rt_test_bringup_traffic(int world, int per_root, long *probe_bytes, int *probe_collectives, long *nccl_bytes,
                               int *nccl_collectives) {
    // Every rank well, each on a GPU of its own.
    Scripted px(world, [](int r, void *buf, size_t, bool bcast) {
        if (!bcast) std::memcpy(static_cast<char *>(buf) + 8, &r, sizeof r);
    });
    gpu::Probe p;
    p.device = 0;
    p.uuid_bytes[15] = 0xff;
    gpu::agree_on_probes(px, rank0(world), p);
    *probe_bytes = px.bytes;
    *probe_collectives = px.collectives;
#ifdef DB_HAVE_CUDA
    Scripted nx(world, [](int, void *, size_t, bool) {});
    ncclUniqueId uid{};
    gpu::share_ids(nx, rank0(world), gpu::nccl_roots(world, per_root), DISTBIND_OK, "", uid);
    *nccl_bytes = nx.bytes;
    *nccl_collectives = nx.collectives;
    return 1;
#else
    (void)per_root;
    *nccl_bytes = 0;
    *nccl_collectives = 0;
    return 0;
#endif
}

int db_rt_test_up(const unsigned char *body, size_t n, unsigned long long expected, char *out, size_t len) {
    std::vector<uint8_t> b(body, body + n);
    tcp::Up u;
    if (!tcp::decode(b, u)) {
        db::copy_out("not an Up message", out, len);
        return 0;
    }
    std::string why = tcp::check_up(u, expected);
    db::copy_out(why, out, len);
    return why.empty();
}

int db_rt_test_missing(const unsigned char *body, size_t n, int world) {
    std::vector<uint8_t> b(body, body + n);
    tcp::Missing m;
    if (!tcp::decode(b, world, m)) return -1;
    return static_cast<int>(m.missing.size() + m.unreachable.size());
}
}

extern "C" int db_rt_test_pmi_conflict(const char *version, int initialized, const char *pmi, char *out, size_t len) {
    MpiSeen m;
    m.present = version != nullptr;
    m.initialized = initialized != 0;
    m.version = version ? version : "";
    std::string why = pmi_conflict(m, pmi);
    db::copy_out(why, out, len);
    return !why.empty();
}

extern "C" int db_rt_test_mpi_seen(void) { return mpi_in_process().present; }
