// The internals the C unit tests reach (see testhooks.h).
#include "testhooks.h"

#include <cctype>
#include <cstring>
#include <future>
#include <memory>

#include "bounded.hh"
#include "gpu.hh"
#include "rt.hh"
#include "text.hh"
#include "wire.hh"

using namespace db::rt;

extern "C" {

int db_rt_test_find_duplicate(int n, const char *const *hosts, const char *const *bus, const int *devices, char *out,
                              size_t len) {
    std::vector<gpu::Probe> all(static_cast<size_t>(n));
    for (int r = 0; r < n; r++) {
        gpu::Probe &p = all[static_cast<size_t>(r)];
        std::memset(&p, 0, sizeof p);
        p.status = DISTBIND_OK;
        p.device = devices[r];
        db::copy_out(hosts[r], p.host, sizeof p.host);
        db::copy_out(bus[r], p.bus, sizeof p.bus);
    }
    std::string m = gpu::find_duplicate(all);
    db::copy_out(m, out, len);
    return m.empty() ? 0 : 1;
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
    return b64_decode_bytes(e.data(), e.size(), back) && back.size() == n && (n == 0 || !std::memcmp(back.data(), p, n));
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

int db_rt_test_up(const unsigned char *body, size_t n, unsigned long long expected, char *out, size_t len) {
    std::vector<uint8_t> b(body, body + n);
    net::Up u;
    if (!net::decode(b, u)) {
        db::copy_out("not an Up message", out, len);
        return 0;
    }
    std::string why = net::check_up(u, expected);
    db::copy_out(why, out, len);
    return why.empty();
}

int db_rt_test_missing(const unsigned char *body, size_t n, int world) {
    std::vector<uint8_t> b(body, body + n);
    net::Missing m;
    if (!net::decode(b, world, m)) return -1;
    return static_cast<int>(m.missing.size() + m.unreachable.size());
}
}
