#include "bootstrap/tcp/wire.hh"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

namespace db::rt::tcp {

namespace {

// "DBX2": a peer whose messages do not start with it is not a dist-bind
// rank of this protocol.
constexpr uint32_t kMagic = 0x32584244;

void put_le(uint8_t *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get_le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}

bool valid_status(uint16_t s) { return s > DISTBIND_OK && s <= DISTBIND_ERR_INTERNAL; }

void put_addr(Writer &w, const Addr &a) { w.u32(a.ip).u16(a.port); }
Addr get_addr(Reader &r) {
    Addr a;
    a.ip = r.u32();
    a.port = r.u16();
    return a;
}

template <size_t N>
void get_array(Reader &r, std::array<uint8_t, N> &out) {
    if (const uint8_t *p = r.bytes(N)) std::memcpy(out.data(), p, N);
}

// A message that is one fixed-size array (a nonce, a proof): the array
// is changed only when the body is exactly that.
template <size_t N>
std::vector<uint8_t> encode_array(const std::array<uint8_t, N> &a) {
    Writer w;
    w.bytes(a.data(), a.size());
    return w.data();
}
template <size_t N>
bool decode_array(const std::vector<uint8_t> &body, std::array<uint8_t, N> &out) {
    Reader r(body);
    std::array<uint8_t, N> a{};
    get_array(r, a);
    if (!r.done()) return false;
    out = a;
    return true;
}

// A list of ranks: count, then each; at most `world` of them, each below it.
void put_ranks(Writer &w, const std::vector<int> &v) {
    w.u32(static_cast<uint32_t>(v.size()));
    for (int r : v) w.u32(static_cast<uint32_t>(r));
}
bool get_ranks(Reader &r, int world, std::vector<int> &out) {
    uint32_t n = r.u32();
    if (!r.ok() || n > static_cast<uint32_t>(world) || n > r.left() / 4) return false;
    out.clear();
    out.reserve(n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = r.u32();
        if (x >= static_cast<uint32_t>(world)) return false;
        out.push_back(static_cast<int>(x));
    }
    return r.ok();
}

}  // namespace

// ---- framing ------------------------------------------------------------

void encode_header(uint8_t *h, Msg type, uint16_t op, uint32_t seq, uint32_t len) {
    put_le(h, kMagic, 4);
    put_le(h + 4, static_cast<uint16_t>(type), 2);
    put_le(h + 6, op, 2);
    put_le(h + 8, seq, 4);
    put_le(h + 12, len, 4);
}

bool decode_header(const uint8_t *h, size_t max_body, Header &out) {
    if (get_le(h, 4) != kMagic) return false;
    uint64_t type = get_le(h + 4, 2), len = get_le(h + 12, 4);
    if ((type < 1 || type > kLastMsg) && type != static_cast<uint16_t>(Msg::Mismatch)) return false;
    if (len > std::min(max_body, kMaxBody)) return false;
    out.type = static_cast<Msg>(type);
    out.op = static_cast<uint16_t>(get_le(h + 6, 2));
    out.seq = static_cast<uint32_t>(get_le(h + 8, 4));
    out.len = static_cast<uint32_t>(len);
    return true;
}

std::vector<uint8_t> frame(Msg type, uint16_t op, uint32_t seq, const std::vector<uint8_t> &body) {
    std::vector<uint8_t> out(kHeader + body.size());
    encode_header(out.data(), type, op, seq, static_cast<uint32_t>(body.size()));
    if (!body.empty()) std::memcpy(out.data() + kHeader, body.data(), body.size());
    return out;
}

Writer &Writer::put(uint64_t v, int n) {
    size_t at = b_.size();
    b_.resize(at + static_cast<size_t>(n));
    put_le(b_.data() + at, v, n);
    return *this;
}

Writer &Writer::str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    return bytes(s.data(), s.size());
}

Writer &Writer::bytes(const void *p, size_t n) {
    const uint8_t *b = static_cast<const uint8_t *>(p);
    b_.insert(b_.end(), b, b + n);
    return *this;
}

uint64_t Reader::get(int n) {
    if (!ok_ || n_ < static_cast<size_t>(n)) {
        ok_ = false;
        return 0;
    }
    uint64_t v = get_le(p_, n);
    p_ += n;
    n_ -= static_cast<size_t>(n);
    return v;
}

std::string Reader::str(size_t max) {
    uint32_t n = u32();
    if (n > max) {
        ok_ = false;
        return {};
    }
    const uint8_t *p = bytes(n);
    return p ? std::string(reinterpret_cast<const char *>(p), n) : std::string();
}

const uint8_t *Reader::bytes(size_t n) {
    if (!ok_ || n_ < n) {
        ok_ = false;
        return nullptr;
    }
    const uint8_t *p = p_;
    p_ += n;
    n_ -= n;
    return p;
}

std::string Addr::str() const {
    char buf[INET_ADDRSTRLEN] = "?";
    in_addr a{};
    a.s_addr = ip;
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(port);
}

std::string printable(std::string_view s, size_t max) {
    std::string out;
    for (size_t i = 0; i < s.size(); i++) {
        if (out.size() >= max) {
            out += "...";
            break;
        }
        auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    return out;
}

// ---- another release -----------------------------------------------------

namespace {

// From this protocol on a Hello names its library's version.
constexpr uint32_t kVersionedProto = 5;
constexpr size_t kMaxVersion = 64;

}  // namespace

const Release &this_release() {
    static const Release r = [] {
        Release x;
        x.version = DB_VERSION_STRING;
#ifdef DB_TEST_KNOBS
        if (const char *v = std::getenv("DIST_BIND_TEST_TCP_RELEASE")) {
            char ver[kMaxVersion + 1] = "";
            unsigned p = 0;
            if (std::sscanf(v, "%u %64s", &p, ver) == 2) {
                x.proto = p;
                x.version = ver;
            }
        }
#endif
        return x;
    }();
    return r;
}

std::string release_text(const Release &r) {
    if (!r.version.empty()) return "libdistbind " + r.version + " (protocol " + std::to_string(r.proto) + ")";
    if (r.proto == 4) return "libdistbind 0.1.0 or 0.2.x (protocol 4)";
    return "a libdistbind of protocol " + std::to_string(r.proto);
}

bool peek_release(const std::vector<uint8_t> &hello_body, Release &out) {
    if (hello_body.size() > kMaxHello) return false;
    Reader r(hello_body);
    Release x;
    x.proto = r.u32();
    if (x.proto >= kVersionedProto) x.version = printable(r.str(kMaxVersion), kMaxVersion);
    if (!r.ok()) return false;
    out = std::move(x);
    return true;
}

std::vector<uint8_t> encode(const Mismatch &m) {
    Writer w;
    w.u32(m.release.proto).str(m.release.version);
    w.bytes(m.nonce.data(), m.nonce.size()).bytes(m.proof.data(), m.proof.size());
    return w.data();
}

bool decode(const std::vector<uint8_t> &body, Mismatch &out) {
    Reader r(body);
    Mismatch m;
    m.release.proto = r.u32();
    m.release.version = printable(r.str(kMaxVersion), kMaxVersion);
    get_array(r, m.nonce);
    get_array(r, m.proof);
    if (!r.done()) return false;
    out = std::move(m);
    return true;
}

std::string releases_met(int my_rank, const std::string &theirs, const std::string &where) {
    return release_text(this_release()) + " on rank " + std::to_string(my_rank) + " met " + theirs + ", " + where +
           ": every node of a step needs the same libdistbind (their TCP bootstraps do not "
           "understand each other)";
}

// ---- bodies ---------------------------------------------------------------

std::vector<uint8_t> encode(const Hello &h) {
    Writer w;
    w.u32(h.proto);
    if (h.proto >= kVersionedProto) w.str(this_release().version);
    w.u8(static_cast<uint8_t>(h.mode)).u32(h.client).u32(h.server).u32(h.world).str(h.step);
    w.bytes(h.nonce.data(), h.nonce.size());
    return w.data();
}

bool decode(const std::vector<uint8_t> &body, Hello &out) {
    if (body.size() > kMaxHello) return false;
    Reader r(body);
    Hello h;
    h.proto = r.u32();
    if (h.proto != this_release().proto) return false;
    if (h.proto >= kVersionedProto) r.str(kMaxVersion);
    uint8_t a = r.u8();
    h.mode = static_cast<Mode>(a <= 2 ? a : 0);
    h.client = r.u32();
    h.server = r.u32();
    h.world = r.u32();
    h.step = r.str(kMaxStep);
    get_array(r, h.nonce);
    if (!r.done() || a > 2 || h.world == 0 || h.world > kMaxWorld || h.client >= kMaxWorld || h.server >= kMaxWorld)
        return false;
    out = std::move(h);
    return true;
}

std::vector<uint8_t> encode(const Challenge &c) { return encode_array(c.nonce); }

bool decode(const std::vector<uint8_t> &body, Challenge &out) { return decode_array(body, out.nonce); }

std::vector<uint8_t> encode(const Register &x) {
    Writer w;
    put_addr(w, x.listener);
    w.str(x.host).u32(x.pid).bytes(x.nonce.data(), x.nonce.size());
    return w.data();
}

bool decode(const std::vector<uint8_t> &body, Register &out) {
    Reader r(body);
    Register x;
    x.listener = get_addr(r);
    x.host = printable(r.str(kMaxHost), kMaxHost);
    x.pid = r.u32();
    get_array(r, x.nonce);
    if (!r.done() || x.listener.port == 0) return false;
    out = std::move(x);
    return true;
}

std::vector<uint8_t> encode(const Welcome &x) {
    Writer w;
    w.u32(x.fanout);
    return w.data();
}

bool decode(const std::vector<uint8_t> &body, Welcome &out) {
    Reader r(body);
    uint32_t k = r.u32();
    if (!r.done() || k == 0 || k > 65535) return false;
    out.fanout = k;
    return true;
}

std::vector<uint8_t> encode(const Verdict &v) {
    Writer w;
    w.u16(static_cast<uint16_t>(v.status)).str(v.text.substr(0, kMaxText));
    return w.data();
}

bool decode(const std::vector<uint8_t> &body, Verdict &out) {
    Reader r(body);
    uint16_t st = r.u16();
    std::string text = r.str(kMaxText);
    if (!r.done() || !valid_status(st)) return false;
    out.status = static_cast<distbind_status>(st);
    out.text = printable(text, kMaxText);
    return true;
}

std::vector<uint8_t> encode(const Subtree &t) {
    Writer w;
    w.u32(t.fanout).u32(static_cast<uint32_t>(t.sub.size()));
    for (const Member &m : t.sub) {
        w.u32(static_cast<uint32_t>(m.rank));
        put_addr(w, m.addr);
        w.bytes(m.nonce.data(), m.nonce.size());
    }
    return w.data();
}

namespace {
constexpr size_t kMemberBytes = 4 + 6 + auth::kNonceBytes;
}

size_t max_tree_body(int world) { return 8 + kMemberBytes * static_cast<size_t>(world > 0 ? world : 0); }

bool decode(const std::vector<uint8_t> &body, int world, Subtree &out) {
    Reader r(body);
    Subtree t;
    t.fanout = r.u32();
    uint32_t n = r.u32();
    if (!r.ok() || t.fanout == 0 || t.fanout > 65535 || n >= static_cast<uint32_t>(world) ||
        n > r.left() / kMemberBytes)
        return false;
    std::set<int> seen;
    t.sub.reserve(n);
    for (uint32_t i = 0; i < n; i++) {
        Member m;
        uint32_t rank = r.u32();
        m.addr = get_addr(r);
        get_array(r, m.nonce);
        if (rank >= static_cast<uint32_t>(world) || m.addr.port == 0 || !seen.insert(static_cast<int>(rank)).second)
            return false;
        m.rank = static_cast<int>(rank);
        t.sub.push_back(m);
    }
    if (!r.done()) return false;
    out = std::move(t);
    return true;
}

std::vector<uint8_t> encode(const Ack &a) { return encode_array(a.proof); }

bool decode(const std::vector<uint8_t> &body, Ack &out) { return decode_array(body, out.proof); }

std::vector<uint8_t> encode(const Missing &m) {
    Writer w;
    put_ranks(w, m.missing);
    put_ranks(w, m.unreachable);
    return w.data();
}

bool decode(const std::vector<uint8_t> &body, int world, Missing &out) {
    Reader r(body);
    Missing m;
    if (!get_ranks(r, world, m.missing) || !get_ranks(r, world, m.unreachable) || !r.done()) return false;
    out = std::move(m);
    return true;
}

std::vector<uint8_t> encode_up(uint32_t len, const std::vector<uint8_t> &data) {
    Writer w;
    w.u32(len).u32(static_cast<uint32_t>(data.size())).bytes(data.data(), data.size());
    return w.data();
}

bool decode(const std::vector<uint8_t> &body, Up &out) {
    Reader r(body);
    Up u;
    u.len = r.u32();
    uint32_t n = r.u32();
    if (!r.ok() || r.left() != n) return false;
    u.n = n;
    u.data = r.bytes(n);
    out = u;
    return true;
}

std::string check_up(const Up &u, uint64_t expected) {
    if (u.n == expected) return "";
    return "sent " + std::to_string(u.n) + " bytes for its subtree where the collective needs " +
           std::to_string(expected);
}

}  // namespace db::rt::tcp
