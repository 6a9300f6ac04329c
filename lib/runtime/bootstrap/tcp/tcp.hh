// The TCP bootstrap: a k-ary tree of ranks rooted at rank 0.
//
// Set-up.  Only rank 0's address is known (MASTER_ADDR:MASTER_PORT); rank 0
// listens on the address MASTER_ADDR resolves to.  Each rank opens a
// listener of its own, then registers with rank 0 over a short connection
// (its rank, world size, step, its listener's address); rank 0 answers on
// it, and a rank that finds it closed unanswered registers again.  Every
// connection between ranks, these included, starts with the handshake of
// handshake.hh: both ends prove that they know the step's secret
// before anything else is said, and rank 0 serves all registrations at
// once, so a stranger can neither take a rank's place nor hold the others
// up.  Once every rank has registered, rank 0 connects to its children and
// hands each the addresses of its subtree; each child does the same below
// it.  A rank therefore only ever talks to its parent and its children.
//
// Collectives run up the tree (gather) and down (answer); every message
// carries the collective's number and kind, so ranks that call different
// collectives are caught, and its size is checked against what the
// collective needs from that part of the tree.  Waits are staggered by
// depth: a rank gives up on its children a little before its parent would
// give up on it, and reports the ranks that never arrived upward, so rank 0
// can name them.  Any failure is sent to every neighbour (who pass it on)
// before the rank returns it, so the whole step fails with the same message
// instead of hanging.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/tcp/net.hh"
#include "bootstrap/exchange.hh"
#include "core/rt.hh"
#include "bootstrap/tcp/handshake.hh"

namespace db::rt::tcp {

enum Op : uint16_t { kBarrier = 1, kBroadcast, kAllgather };

inline const char *op_name(uint16_t op) {
    switch (op) {
    case kBarrier: return "barrier";
    case kBroadcast: return "broadcast";
    case kAllgather: return "allgather";
    }
    return "collective";
}

// Heap-numbered k-ary tree: the children of r are r*k+1 .. r*k+k.
struct Tree {
    int n = 1;
    unsigned k = 8;
    int parent(int r) const { return r == 0 ? -1 : static_cast<int>((r - 1) / k); }
    std::vector<int> children(int r) const {
        std::vector<int> out;
        uint64_t first = static_cast<uint64_t>(r) * k + 1;
        for (uint64_t c = first; c < first + k && c < static_cast<uint64_t>(n); c++) out.push_back(static_cast<int>(c));
        return out;
    }
    int depth(int r) const {
        int d = 0;
        for (; r > 0; r = parent(r)) d++;
        return d;
    }
    // How many ranks r's subtree holds (r included), level by level.
    uint64_t size(int r) const {
        uint64_t total = 0, lo = static_cast<uint64_t>(r), hi = lo, end = static_cast<uint64_t>(n);
        while (lo < end) {
            hi = std::min(hi, end - 1);
            total += hi - lo + 1;
            lo = lo * k + 1;
            hi = hi * k + k;
        }
        return total;
    }
    bool below(int r, int top) const {  // r in top's subtree
        while (r > top) r = parent(r);
        return r == top;
    }
    // The subtree of r in pre-order (r first, then each child's subtree).
    std::vector<int> preorder(int r) const {
        std::vector<int> out, stack{r};
        while (!stack.empty()) {
            int x = stack.back();
            stack.pop_back();
            out.push_back(x);
            std::vector<int> ch = children(x);
            for (auto it = ch.rbegin(); it != ch.rend(); ++it) stack.push_back(*it);
        }
        return out;
    }
};

// An open connection to another rank, counted for peak_connections().
class Link {
  public:
    Link() = default;
    Link(Socket s, long *open, long *peak) : s_(std::move(s)), open_(open) {
        if (++*open_ > *peak) *peak = *open_;
    }
    Link(Link &&o) noexcept : s_(std::move(o.s_)), open_(o.open_) {}
    Link &operator=(Link &&o) noexcept {
        close();
        s_ = std::move(o.s_);
        open_ = o.open_;
        return *this;
    }
    ~Link() { close(); }
    void close() {
        if (s_) {
            s_.close();
            --*open_;
        }
    }
    int fd() const { return s_.fd(); }
    explicit operator bool() const { return static_cast<bool>(s_); }

  private:
    Socket s_;
    long *open_ = nullptr;
};

struct Peer {
    int rank = -1;
    Link link;
};

inline Deadline sooner(const Deadline &a, double s) {
    Deadline b = Deadline::in(s);
    return b.at < a.at ? b : a;
}

class TcpExchange final : public Exchange {
  public:
    explicit TcpExchange(const ExchangeConfig &c);
    const char *name() const override { return "tcp"; }
    long peak_connections() const override { return peak_; }
    void barrier() override { barrier_named(nullptr); }
    void broadcast(void *buf, size_t len, int root) override;
    void allgather(const void *send, size_t len, void *recv) override;

  private:
    using Op = std::pair<uint16_t, uint32_t>;  // kind, number
    ExchangeConfig c_;
    Tree tree_;
    double grace_ = 1;
    auth::NoncePool nonces_;
    std::optional<auth::Key> key_;  // with a secret
    Credentials cred_;
    auth::Nonce announced_{};  // what this rank registered with (handshake.hh)
    // Before the links: each Link counts itself out of open_ when it is
    // destroyed, and members are destroyed in reverse order.
    long open_ = 0, peak_ = 0;
    Peer parent_;
    std::vector<Peer> children_;
    uint32_t seq_ = 0;
    Broken broken_;
    // With a secret: the connection this rank registered over, until rank
    // 0's answer on it is read (handshake.hh), and its reader.
    Socket registration_;
    FrameReader answer_in_;
    // The handshakes' round trips (Dial::trips): of the registration that
    // went through, and the most that any link to a child took.
    int trips_registering_ = 0, trips_to_children_ = 0;

    Op begin(uint16_t kind);
    void check_pending(Peer &p, const std::string &what);
    std::string label(Op op, const char *name) const;
    void barrier_named(const char *name);
    // When a collective that began at t0 stops waiting for messages: its
    // timeout plus the grace that lets rank 0's verdict travel down.
    Deadline message_deadline(Clock::time_point t0) const { return {t0 + to_duration(c_.timeout_s + grace_)}; }
    double margin() const;

    // ---- failing ----------------------------------------------------------
    // Tell every neighbour but `except`, mark the exchange broken, throw.
    [[noreturn]] void spread(distbind_status st, const std::string &msg, int except = -1);
    [[noreturn]] void on_abort(const Message &m, int from);
    [[noreturn]] void lost(const std::string &what, int who, const IoResult &r);
    // A message to `who` did not go out: the peer's doing when it hung up
    // or stopped reading (lost), this rank's when the OS refused (SYSTEM).
    [[noreturn]] void unsent(const std::string &what, int who, const IoResult &r);
    [[noreturn]] void mismatch(const std::string &what, int who, const Message &m);

    // ---- collectives ------------------------------------------------------
    // Gather toward rank 0.  Each rank sends up [len][n][bytes]: its own
    // `mine` (n_mine bytes) followed by what its children sent for whom
    // `carries(child)` holds, in child order: len bytes from each rank of
    // the child's subtree when `per_rank`, else len bytes from the whole
    // subtree.  Returns the bytes at rank 0.
    std::vector<uint8_t> gather(Op op, const std::string &what, Clock::time_point t0, const void *mine, size_t n_mine,
                                size_t len, const std::function<bool(int)> &carries, bool per_rank);
    // A child's report of the ranks missing below it, checked (they must be
    // below it), added to the lists.
    void take_missing(const std::string &what, int ch, const Message &m, std::vector<int> &missing,
                      std::vector<int> &unreachable);
    // A child's Up message, checked: its size as this rank's, its data as
    // `expected` bytes.  Returns the data.
    std::vector<uint8_t> take_up(const std::string &what, int ch, const Message &m, size_t len, uint64_t expected);
    [[noreturn]] void report_missing(const std::string &what, std::vector<int> missing, std::vector<int> unreachable);
    // Rank 0's answer travels down; returns it.
    std::vector<uint8_t> down(Op op, const std::string &what, Clock::time_point t0,
                              const std::vector<uint8_t> &at_root);

    // ---- set-up -------------------------------------------------------------
    std::string master() const { return c_.master_addr + ":" + std::to_string(c_.master_port); }
    // MASTER_ADDR:MASTER_PORT as an address (getaddrinfo, bounded by d).
    Addr resolve_master(const Deadline &d) const;
    // TCP needs MASTER_ADDR and MASTER_PORT (rank 0 listens there, the
    // others connect there).
    void need_master() const;
    // Rank 0 stops the set-up: every registered rank hears why, directly.
    void abort_registered(const std::vector<Member> &reg, const std::vector<bool> &have, distbind_status st,
                          const std::string &msg);
    // A one-way Abort to the rank listening at addr (it checks rank 0's proof).
    static Dial abort_dial(int rank, const Addr &addr, const auth::Nonce *announced, const std::vector<uint8_t> &abort);
    // Rank 0's answer to a registration (Welcome or Reject; setup.cc).
    void answer(Admitted &a, Msg type, const Verdict &v, const Deadline &d);
    // After a failed set-up, answer the ranks still registering with the
    // reason (instead of leaving them to time out), until each has heard
    // it or the deadline passes.
    void turn_away(Door &door, std::vector<bool> told, const Deadline &d, distbind_status st, const std::string &why);
    void setup_root(const Deadline &d);
    // Rank 0's listener on MASTER_ADDR:MASTER_PORT, or the reason for none.
    Socket listen_as_root(const Addr &at);
    // Why rank 0 refuses a registration that proved the secret ("" when it
    // does not); fills x from the message.
    std::string refusal(const Admitted &a, Register &x, const std::vector<bool> &have,
                        const std::vector<Register> &reg) const;
    // The ranks that did not register by the deadline, for the message.
    std::string no_shows(const std::vector<bool> &have, long dropped) const;
    static std::string host_name();
    void setup_child(const Deadline &d);
    // A child's listener, on the address this node reaches rank 0 from.
    Socket child_listener(const Addr &root, const std::string &where);
    // Register with rank 0 and take its answer (the tree's fan-out; with a
    // secret its greeting, the answer itself left in registration_).
    // `prepare`, when given, fills in reg (and makes the listener it
    // names): with a secret while the Hello travels to rank 0 (dial's
    // meanwhile), else before the Hello, which the registration goes with.
    void register_with_root(const Addr &root, Register &reg, const std::string &where, const Deadline &d,
                            const std::function<void()> &prepare);
    // With a secret, rank 0's answer to the registration, if it has come:
    // true when rank 0 closed the connection without one (it dropped it
    // after its challenge: a full door, the time budget), false when it
    // welcomed this rank or has not answered yet; a refusal fails here.
    bool registration_dropped(const std::string &where);
    // Rank 0's answer to this rank's registration: its Welcome, or the
    // failure it names (Reject) or a malformed one.
    Welcome take_answer(Msg type, const std::vector<uint8_t> &body, const std::string &where) const;
    // Wait for the parent to hand over this rank's subtree (or rank 0 to
    // abort the set-up); links the parent.  While it waits, a registration
    // rank 0 dropped is made again (register_again).
    std::vector<Member> await_subtree(Socket lis, const Deadline &dt, const std::string &where,
                                      const std::function<void()> &register_again);
    // Connect to each child and hand it the addresses of its subtree.
    void connect_children(const std::vector<Member> &sub, const Deadline &d);
};

}  // namespace db::rt::tcp

namespace db::rt {

// The TCP bootstrap (tcp.cc), for the bootstrap choice.
std::unique_ptr<Exchange> make_tcp(const ExchangeConfig &c);

}  // namespace db::rt
