// The TCP bootstrap's message decoders (lib/runtime/wire.cc) and PMI2's
// (pmi2.cc): whatever another process sends, a decoder either refuses it
// or returns values in range, and what it accepts re-encodes to the same
// bytes (text fields excepted: they come back printable).  Then the checks
// the collectives make with them: an Up carries what its subtree owes, a
// Missing list names ranks that exist.
#include <cstring>

#include "bootstrap/pmi2.hh"
#include "bootstrap/tcp/wire.hh"
#include "core/rt.hh"
#include "fuzz.hh"

using namespace db::rt;
using namespace db::rt::tcp;

namespace {

bool printable_ascii(const std::string &s) {
    for (unsigned char c : s)
        if (c < 0x20 || c >= 0x7f) return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Take in(data, size);
    uint8_t which = in.u8();
    int world = 1 + static_cast<int>(in.u32() % (1u << 24));
    std::string rest = in.rest();
    std::vector<uint8_t> body(rest.begin(), rest.end());
    switch (which % 12) {
    case 0: {
        Header h;
        if (body.size() >= kHeader && decode_header(body.data(), kMaxHello, h)) {
            FUZZ_CHECK(h.len <= kMaxHello, "len %u past the limit", h.len);
            uint8_t again[kHeader];
            encode_header(again, h.type, h.op, h.seq, h.len);
            FUZZ_CHECK(!std::memcmp(again, body.data(), kHeader), "header does not re-encode");
        }
        break;
    }
    case 1: {
        Hello h;
        if (decode(body, h)) {
            FUZZ_CHECK(h.world >= 1 && h.world <= kMaxWorld && h.client < kMaxWorld && h.server < kMaxWorld, "ranks");
            FUZZ_CHECK(h.step.size() <= kMaxStep && encode(h) == body, "Hello does not re-encode");
        }
        break;
    }
    case 2: {
        Challenge c;
        if (decode(body, c)) FUZZ_CHECK(encode(c) == body, "Challenge does not re-encode");
        break;
    }
    case 3: {
        Register r;
        if (decode(body, r))
            FUZZ_CHECK(r.listener.port != 0 && r.host.size() <= kMaxHost + 6 && printable_ascii(r.host),
                       "registration");
        break;
    }
    case 4: {
        Welcome w;
        if (decode(body, w)) FUZZ_CHECK(w.fanout >= 1 && w.fanout <= 65535 && encode(w) == body, "welcome");
        break;
    }
    case 5: {
        Verdict v;
        if (decode(body, v))
            FUZZ_CHECK(v.status > DISTBIND_OK && v.status <= DISTBIND_ERR_INTERNAL && printable_ascii(v.text) &&
                           v.text.size() <= kMaxText + 6,
                       "verdict");
        break;
    }
    case 6: {
        Subtree t;
        if (decode(body, world, t)) {
            FUZZ_CHECK(t.sub.size() < static_cast<size_t>(world) && t.fanout >= 1 && t.fanout <= 65535, "subtree");
            for (const Member &m : t.sub) FUZZ_CHECK(m.rank >= 0 && m.rank < world && m.addr.port, "rank %d", m.rank);
            FUZZ_CHECK(encode(t) == body, "subtree does not re-encode");
        }
        break;
    }
    case 7: {
        Missing m;
        if (decode(body, world, m)) {
            for (auto *l : {&m.missing, &m.unreachable})
                for (int r : *l) FUZZ_CHECK(r >= 0 && r < world, "rank %d of %d", r, world);
            FUZZ_CHECK(encode(m) == body, "missing does not re-encode");
            // The message text may name any of them.
            std::string s = rank_list(m.missing) + rank_list(m.unreachable);
            (void)s;
        }
        break;
    }
    case 8: {
        Up u;
        if (decode(body, u)) {
            FUZZ_CHECK(u.n + 8 == body.size(), "up length");
            uint64_t expected = static_cast<uint64_t>(u.len) * (static_cast<unsigned>(world) % 64);
            FUZZ_CHECK(check_up(u, expected).empty() == (u.n == expected), "check_up");
        }
        break;
    }
    case 11: {
        Ack a;
        if (decode(body, a)) FUZZ_CHECK(encode(a) == body, "ack does not re-encode");
        break;
    }
    case 9: {
        std::vector<uint8_t> out;
        if (b64_decode_bytes(rest.data(), rest.size(), out))
            FUZZ_CHECK(b64_encode_bytes(out.data(), out.size()) == rest, "base64 does not re-encode");
        break;
    }
    default: {
        uint64_t total = 0;
        const char *d = nullptr;
        std::string v = rest.substr(0, rest.find('\0'));
        if (pmi2_first_chunk(v.c_str(), DISTBIND_MAX_EXCHANGE_BYTES, total, d))
            FUZZ_CHECK(total <= DISTBIND_MAX_EXCHANGE_BYTES && d > v.c_str() && d[-1] == ',', "pmi2 chunk");
        std::string p = printable(rest, 64);
        FUZZ_CHECK(printable_ascii(p) && p.size() <= 64 + 4 + 3, "printable");
        // Another release's Hello and Mismatch: what a stranger may send
        // before any proof.
        Release r;
        if (peek_release(body, r)) FUZZ_CHECK(printable_ascii(r.version) && r.version.size() <= 64 + 4 + 3, "release");
        Mismatch m;
        if (decode(body, m))
            FUZZ_CHECK(printable_ascii(m.release.version) && m.release.version.size() <= 64 + 4 + 3, "mismatch");
        break;
    }
    }
    return 0;
}
