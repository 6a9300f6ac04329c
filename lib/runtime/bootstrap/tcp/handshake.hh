// The start of every connection between two ranks of the TCP bootstrap.
//
// The rank that connects (the client) opens with a Hello: its rank, the
// rank it wants, the world size and step it believes in, a fresh nonce.
// Both ends prove they know the step's secret with an HMAC over the Hello
// and a nonce of the server's, one proof per role (auth.hh), and the
// server's nonce is either
//   - Announced (every rank but 0): the fresh one the server announced in
//     its own registration, which reached the client through rank 0 and
//     the tree.  The client's proof and the message the connection is for
//     (a tree, an abort) go in the Hello's write; the server checks the
//     proof before it reads the message, then answers with its own proof
//     (Ack) ahead of anything else.
//   - Challenge (rank 0, taking registrations): a fresh one per
//     connection, which rank 0 sends in answer to the Hello, together with
//     its own proof and its greeting (the Welcome: the tree's fan-out).
//     The client checks that proof before it sends anything more; then
//     its proof and its registration go in one write.  Rank 0 counts the
//     registration once the proof holds and answers on that connection
//     (Welcome, or Reject, which also reaches the rank at its listener),
//     but the rank does not wait for that answer: it keeps the connection
//     and reads it only when the tree is slow to come (setup.cc).  A
//     connection closed without an answer means rank 0 dropped it after
//     its challenge (the cap below, or the time budget), and the rank
//     registers again.
// Either way the client waits for one answer (one round trip), as it would
// for rank 0's Welcome without a secret; a parent links all its children
// at once.  Those waits are not what the secret costs a set-up (a build
// whose proofs hash nothing sets up 256 ranks on two cores as fast as one
// without a secret, and one without the children's proofs is no faster
// than this one): the HMAC is, on the first run of its code in each
// process, which maps libsodium's SHA-256 code and tables (page faults: 30
// to 50 us each in a VM; fewer since libsodium is linked in).  A
// registering rank therefore makes its listener, its registration and its
// key's HMAC state (auth::Key::prepare) while its Hello travels to rank 0
// (dial's `meanwhile`), so that the turn in which it reads rank 0's
// challenge and sends its proof is short.  Each
// dial counts its round trips (Dial::trips); DIST_BIND_DEBUG=1 prints a
// rank's and tests/exchange/t_tcp_trips.py checks them.
//
// What a server sends ahead of the client's proof is set-up data (a nonce,
// its proof over the client's own Hello, the fan-out); what a client sends
// ahead of the server's is its Hello, or what the announced nonce's owner
// alone can use (its proof, a tree of listeners' addresses and announced
// nonces).  No collective's data ever goes to a connection that has not
// proved itself, and a connection that does not prove itself changes
// nothing: it is dropped and counted (debug).
//
// A Door serves a listener: every connection that has not yet proved
// itself is read without waiting, with a time budget of its own and a cap
// on how many are held at once (when full, the oldest is dropped), so no
// number of idle or slow strangers keeps a rank from being heard.  dial()
// brings up connections the same way from the other end, retrying until
// the deadline when what answers does not prove itself.
//
// With DIST_BIND_TCP_INSECURE=1 on every rank there are no proofs (Hello
// and the message go in one write, rank 0 answers with Welcome or Reject,
// as before there were secrets).
//
// Rank 0 answers a Hello of another protocol (a rank of another release)
// with a Mismatch instead of its challenge, and both ends fail naming both
// releases once each has checked the other's proof (without a secret, at
// once): see wire.hh, "another release".
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/tcp/auth.hh"
#include "bootstrap/tcp/net.hh"

namespace db::rt::tcp {

// This rank, as both ends of a handshake see it.
struct Credentials {
    auth::Key *key = nullptr;  // nullptr: no proofs (DIST_BIND_TCP_INSECURE=1)
    int rank = 0, world = 1;
    std::string step;
    double budget_s = 2;                // time one connection has to finish its handshake
    auth::NoncePool *nonces = nullptr;  // this rank's fresh nonces (with a secret)
};

// A frame read from a non-blocking socket, never more than the limit it
// was started with.  Read-ahead (where the peer sends nothing past what
// will be read before it hears back: every handshake step but the tree's
// proof) takes whatever is there in one call and keeps what goes past
// this frame for the next start(); otherwise nothing past the frame is
// read.
class FrameReader {
  public:
    void start(size_t max_body, bool read_ahead);
    // A new connection: forget what was read ahead on the last one.
    void reset() { ahead_.clear(); }
    // 1: a whole frame is in; 0: more to come; -1: closed, or not a frame
    // within the limit.
    int pump(int fd);
    // Bytes read past the frame that is in.
    bool read_past() const { return !ahead_.empty(); }
    const Header &header() const { return hd_; }
    std::vector<uint8_t> &body() { return body_; }

  private:
    uint8_t head_[kHeader] = {};
    size_t have_ = 0, max_ = 0;
    bool in_body_ = false, read_ahead_ = false;
    Header hd_;
    std::vector<uint8_t> body_, ahead_;
    // Into p, up to n bytes: first what was read ahead, then the socket.
    long take(int fd, uint8_t *p, size_t n);
};

// A connection that proved itself, with the message it came for.
struct Admitted {
    Socket sock;
    Hello hello;
    Message first;
    std::string peer;          // its address
    std::vector<uint8_t> ack;  // this rank's proof, to send ahead of any answer (empty without a secret)
    // Not empty: a rank of another release (another protocol, wire.hh)
    // that proved it knows the secret; nothing else above is filled in.
    std::string other;
};

class Door {
  public:
    // `client_ok`: which ranks may call here.  `first`: the messages that
    // may follow the handshake, at most max_first bytes of body.
    Door(Socket listener, const Credentials &me, std::function<bool(uint32_t)> client_ok, std::set<Msg> first,
         size_t max_first);
    Door(const Door &) = delete;
    Door &operator=(const Door &) = delete;
    ~Door();
    // Serve until one connection has proved itself and sent its message,
    // or until d.
    std::optional<Admitted> next(const Deadline &d);
    // With `announced` (the nonce this rank registered with), connections
    // prove themselves over it (Mode::Announced); else over a nonce the
    // door sends each one as it accepts it (Mode::Challenge).
    void announce(const auth::Nonce *announced) { announced_ = announced; }
    // What goes out behind rank 0's challenge and proof: set-up data
    // (Mode::Challenge only).
    void greet(std::vector<uint8_t> framed) { greeting_ = std::move(framed); }
    // Connections dropped because they did not prove themselves in time.
    long dropped() const { return dropped_; }
    // At most this many connections are held before they proved themselves.
    static constexpr size_t kMaxPending = 256;

  private:
    struct Conn;
    Socket lis_;
    Credentials me_;
    std::function<bool(uint32_t)> client_ok_;
    std::set<Msg> first_;
    size_t max_first_;
    std::vector<std::unique_ptr<Conn>> conns_;
    std::vector<Admitted> ready_;  // admitted in the last round, not yet handed out
    long dropped_ = 0;
    const auth::Nonce *announced_ = nullptr;
    std::vector<uint8_t> greeting_;

    void accept_all();
    // Conn i's Hello is in: send it the challenge, this rank's proof and
    // the greeting.  false: it was dropped.
    bool challenge(size_t i);
    void drop(size_t i, const char *why);
    // Conn i opened with a Hello of another release: answer with this
    // one's (wire.hh), then wait for its proof.  false: it was dropped.
    bool mismatch(size_t i, const Release &theirs);
    // Read what conn i has sent; true when it is admitted.
    bool progress(size_t i);
    // Move conn i out of the door, admitted.
    void admit(size_t i);
};

// One connection to bring up.
struct Dial {
    int rank = 0;  // the rank listening there
    Addr addr;
    const auth::Nonce *announced = nullptr;  // the nonce it registered with: Mode::Announced
    std::vector<uint8_t> first;              // the framed message the connection is for
    bool verify = true;                      // wait for the server's proof (not for a one-way abort)
    bool await_reply = false;                // then read one answer (at most kMaxReply) before done
    // Results.
    Socket sock;
    Message reply;
    bool done = false;
    // How many times the connection that came up sent something and then
    // had to hear back before it was up: the handshake's round trips.
    int trips = 0;
    std::string why;       // the last failure, for the caller's message
    std::string answered;  // the last failure of a connection that was up: what answered there badly
    // Not empty: the server is of another release (wire.hh) and proved it
    // knows the secret; the dial failed for good.
    std::string other;
};

// Bring up every dial by d: each failure that a stranger could cause (no
// answer, a closed connection, a wrong proof) is retried until d;
// "connection refused" only when retry_refused.  `meanwhile` runs once, as
// soon as no dial is still connecting (each has sent its opening, or waits
// to try again) and before any answer is read: the caller's own work,
// done while the openings travel.  It may fill in the `first` of a dial to
// a server that challenges (that message goes out only behind this rank's
// proof, after the challenge).
void dial(std::vector<Dial> &dials, const Credentials &me, const Deadline &d, bool retry_refused,
          std::function<void()> meanwhile = nullptr);

}  // namespace db::rt::tcp
