// The TCP bootstrap's messages: framing and the body of every message,
// each with an encoder and a decoder.  Decoders are pure and take nothing
// on trust: a body is accepted only when it has exactly the layout of its
// type and every length, count, rank and status is in range; text from a
// peer comes back printable.  Nothing here touches a socket (net.hh does),
// so the fuzzers and unit tests run the same code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bootstrap/tcp/auth.hh"
#include "distbind.h"

namespace db::rt::tcp {

// ---- framing ------------------------------------------------------------

// Every message: magic, type, op (the collective's kind), seq (its
// number), body length; 16 bytes, little-endian, then the body.
enum class Msg : uint16_t {
    Hello = 1,  // opens every connection: who calls whom
    Challenge,  // rank 0's answer to a Hello: its fresh nonce (its proof follows, an Ack)
    Proof,      // the client's proof
    Register,   // a rank to rank 0: where it listens
    Welcome,    // rank 0's answer to a registration (with a secret also its greeting, with the Challenge)
    Reject,     // rank 0 refuses a registration: why
    Tree,       // a parent to a child: the addresses of its subtree
    Ack,        // a server's proof: a child's to its parent, rank 0's to a registering rank
    Abort,      // a rank failed: why (status, text)
    Up,         // a collective's data toward rank 0
    Down,       // its answer from rank 0
    Missing,    // ranks that did not arrive in a collective
    // A server's answer to a Hello of another protocol (see Release below);
    // its number stays the same in every protocol.
    Mismatch = 0x7fff,
};
constexpr uint16_t kLastMsg = static_cast<uint16_t>(Msg::Missing);
constexpr size_t kHeader = 16;

// The largest body of any message (a collective's whole payload plus its
// framing).
constexpr size_t kMaxBody = (size_t{1} << 30) + 64;

struct Header {
    Msg type{};
    uint16_t op = 0;
    uint32_t seq = 0;
    uint32_t len = 0;
};
void encode_header(uint8_t *h, Msg type, uint16_t op, uint32_t seq, uint32_t len);
// false: not a dist-bind message of a known type, or its body is longer
// than max_body (refused before anything is allocated for it).
bool decode_header(const uint8_t *h, size_t max_body, Header &out);
std::vector<uint8_t> frame(Msg type, uint16_t op, uint32_t seq, const std::vector<uint8_t> &body);

// Little-endian encoding of message bodies.
class Writer {
  public:
    Writer &u8(uint8_t v) { return put(v, 1); }
    Writer &u16(uint16_t v) { return put(v, 2); }
    Writer &u32(uint32_t v) { return put(v, 4); }
    Writer &u64(uint64_t v) { return put(v, 8); }
    Writer &str(std::string_view s);
    Writer &bytes(const void *p, size_t n);
    const std::vector<uint8_t> &data() const { return b_; }

  private:
    Writer &put(uint64_t v, int n);
    std::vector<uint8_t> b_;
};

// Reads until the body runs out; then ok() is false and every value 0.
class Reader {
  public:
    explicit Reader(const std::vector<uint8_t> &b) : p_(b.data()), n_(b.size()) {}
    Reader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
    uint8_t u8() { return static_cast<uint8_t>(get(1)); }
    uint16_t u16() { return static_cast<uint16_t>(get(2)); }
    uint32_t u32() { return static_cast<uint32_t>(get(4)); }
    uint64_t u64() { return get(8); }
    // A u32 length, then that many bytes; refused (ok() false) above max.
    std::string str(size_t max);
    const uint8_t *bytes(size_t n);
    bool ok() const { return ok_; }
    size_t left() const { return n_; }
    // Everything read, nothing left over.
    bool done() const { return ok_ && n_ == 0; }

  private:
    uint64_t get(int n);
    const uint8_t *p_;
    size_t n_;
    bool ok_ = true;
};

struct Addr {
    uint32_t ip = 0;    // network byte order
    uint16_t port = 0;  // host byte order
    std::string str() const;
    bool operator==(const Addr &o) const { return ip == o.ip && port == o.port; }
};

// Text from another process, fit for a message: printable ASCII kept,
// anything else (terminal escapes, newlines, NULs) as \xNN, cut at max.
std::string printable(std::string_view s, size_t max = 512);

// ---- bodies ---------------------------------------------------------------

constexpr uint32_t kProto = 4;
constexpr uint32_t kMaxWorld = 1u << 24;
constexpr size_t kMaxStep = 200;  // DIST_BIND_STEP_KEY's limit
constexpr size_t kMaxHost = 255;
constexpr size_t kMaxText = 4096;  // an error message
// Until a connection has authenticated, nothing longer than these is read.
constexpr size_t kMaxHello = 512;
constexpr size_t kMaxProof = auth::kMacBytes;
// What a rank that has proved itself may answer at most (Welcome, Reject,
// Ack, Abort): one message.
constexpr size_t kMaxReply = 2 + 4 + kMaxText;

// How the two ends of a connection prove themselves (handshake.hh).
enum class Mode : uint8_t {
    None = 0,       // they do not: both run without a secret (DIST_BIND_TCP_INSECURE=1)
    Challenge = 1,  // rank 0 answers the Hello with a fresh nonce; the client proves over it
    Announced = 2,  // the client proves over the nonce the server announced when it registered
};

// ---- another release -----------------------------------------------------
//
// Ranks of two releases that speak different protocols tell each other so
// at once, instead of taking each other for strangers until the timeout.
// What every protocol keeps for that: the frame header and its magic,
// Msg::Hello and Msg::Mismatch, a Hello body that starts with its
// protocol's number (from protocol 5 on followed by the library's version,
// a str), and the proofs of auth.hh over a Hello's bytes, whatever else
// they hold.  A server that does not speak a client's protocol answers its
// Hello with a Mismatch: its protocol, its version, a fresh nonce and its
// proof over the client's Hello and that nonce.  A client that finds the
// proof good sends its own proof over the same (a Proof) and fails naming
// both releases; the server fails only once that proof holds, so a
// stranger's Hello of another protocol gets a Mismatch and is dropped, as
// any stranger is.  Without a secret on both ends the Mismatch carries no
// proof and both fail at once.  Protocol 4 (libdistbind 0.1.0 and 0.2.0)
// sends no version of its own; a later release names it by its number.
// 0.1.0 predates the Mismatch: it drops a Hello of another protocol as a
// stranger's.

// The protocol this process speaks and its library's version.
struct Release {
    uint32_t proto = kProto;
    std::string version;
};
// This process's (a test build reads DIST_BIND_TEST_TCP_RELEASE="PROTO
// VERSION", to speak as another release would).
const Release &this_release();
// "libdistbind 0.2.0 (protocol 4)".
std::string release_text(const Release &r);
// A Hello's protocol and (from protocol 5 on) version, whatever follows.
bool peek_release(const std::vector<uint8_t> &hello_body, Release &out);

struct Mismatch {
    Release release;
    auth::Nonce nonce{};
    auth::Mac proof{};  // zero without a secret
};
constexpr size_t kMaxMismatch = 4 + 4 + 64 + auth::kNonceBytes + auth::kMacBytes;
std::vector<uint8_t> encode(const Mismatch &m);
bool decode(const std::vector<uint8_t> &body, Mismatch &out);

// "libdistbind 0.2.0 (protocol 4) on rank 0 met libdistbind 0.3.0
// (protocol 5), <where>: every node of a step needs the same libdistbind".
std::string releases_met(int my_rank, const std::string &theirs, const std::string &where);

struct Hello {
    uint32_t proto = kProto;  // this_release()'s when it is sent
    Mode mode = Mode::Challenge;
    uint32_t client = 0;  // the rank opening the connection
    uint32_t server = 0;  // the rank it means to reach
    uint32_t world = 0;   // the world size it believes in
    std::string step;     // the step it believes it is in
    auth::Nonce nonce{};  // the client's
};
std::vector<uint8_t> encode(const Hello &h);
bool decode(const std::vector<uint8_t> &body, Hello &out);

// What a server that takes challenged handshakes sends the moment it
// accepts a connection: its fresh nonce.
struct Challenge {
    auth::Nonce nonce{};
};
std::vector<uint8_t> encode(const Challenge &c);
bool decode(const std::vector<uint8_t> &body, Challenge &out);

struct Register {
    Addr listener;  // where the rank accepts its parent
    std::string host;
    uint32_t pid = 0;
    auth::Nonce nonce{};  // its listener's announced nonce
};
std::vector<uint8_t> encode(const Register &r);
bool decode(const std::vector<uint8_t> &body, Register &out);

struct Welcome {
    uint32_t fanout = 0;  // 1..65535
};
std::vector<uint8_t> encode(const Welcome &w);
bool decode(const std::vector<uint8_t> &body, Welcome &out);

// Reject and Abort: a failure status (never DISTBIND_OK) and its message.
struct Verdict {
    distbind_status status = DISTBIND_ERR_PEER;
    std::string text;
};
std::vector<uint8_t> encode(const Verdict &v);
bool decode(const std::vector<uint8_t> &body, Verdict &out);

// A registered rank as the ranks above it in the tree know it.
struct Member {
    int rank = 0;
    Addr addr;
    auth::Nonce nonce{};  // what it announced
};

// A parent hands a child the members of the child's subtree (without the
// child itself).  Ranks are below `world` and distinct; that they are in
// the child's subtree is the tree's to check.
struct Subtree {
    uint32_t fanout = 0;
    std::vector<Member> sub;
};
std::vector<uint8_t> encode(const Subtree &t);
bool decode(const std::vector<uint8_t> &body, int world, Subtree &out);
// The largest Tree body for a world size.
size_t max_tree_body(int world);

// The server's proof, once the client proved itself (either mode): all
// it says before the caller's answer.
struct Ack {
    auth::Mac proof{};
};
std::vector<uint8_t> encode(const Ack &a);
bool decode(const std::vector<uint8_t> &body, Ack &out);

// Ranks below a child that did not arrive in a collective, and the ranks
// below those (who could not report).  Every rank below `world`.
struct Missing {
    std::vector<int> missing, unreachable;
};
std::vector<uint8_t> encode(const Missing &m);
bool decode(const std::vector<uint8_t> &body, int world, Missing &out);

// A gather's message up the tree: the collective's per-rank length, then
// the bytes of the child's subtree.
struct Up {
    uint32_t len = 0;
    const uint8_t *data = nullptr;  // into the body
    size_t n = 0;
};
std::vector<uint8_t> encode_up(uint32_t len, const std::vector<uint8_t> &data);
bool decode(const std::vector<uint8_t> &body, Up &out);
// "" when an Up carries what the collective needs from that child:
// `expected` bytes (len for each rank of its subtree in an allgather, len
// from the root's branch of a broadcast, nothing in a barrier); else what
// is wrong with it.  (That u.len is the caller's len is checked first: a
// different one is the user's mistake, with a message of its own.)
std::string check_up(const Up &u, uint64_t expected);

}  // namespace db::rt::tcp
