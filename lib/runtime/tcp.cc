// The TCP bootstrap: a k-ary tree of ranks rooted at rank 0.
//
// Set-up.  Only rank 0's address is known (MASTER_ADDR:MASTER_PORT).  Each
// rank opens a listener of its own, then registers with rank 0 over a short
// connection (rank, world size, step key, its listener's address) and hangs
// up.  Rank 0 serves registrations one at a time, so however large the
// world it holds at most one registration plus its k children open.  Once
// every rank has registered, rank 0 connects to its children and hands each
// the addresses of its subtree; each child does the same below it.  A rank
// therefore only ever talks to its parent and its children.
//
// Collectives run up the tree (gather) and down (answer); every message
// carries the collective's number and kind, so ranks that call different
// collectives are caught.  Waits are staggered by depth: a rank gives up on
// its children a little before its parent would give up on it, and reports
// the ranks that never arrived upward, so rank 0 can name them.  Any
// failure is sent to every neighbour (who pass it on) before the rank
// returns it, so the whole step fails with the same message instead of
// hanging.
#include <netinet/in.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <thread>

#include "net.hh"
#include "rt.hh"

namespace db::rt {

namespace {

using namespace net;

constexpr uint32_t kProto = 1;
enum Op : uint16_t { kBarrier = 1, kBroadcast, kAllgather };

// How long rank 0 waits for one registration to say who it is: a real rank
// sends it right after connecting; anything slower is not one.
constexpr double kHelloWait = 2.0;

const char *op_name(uint16_t op) {
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

uint64_t random64() {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != sizeof v)
        v = static_cast<uint64_t>(Clock::now().time_since_epoch().count()) ^ (static_cast<uint64_t>(getpid()) << 32);
    return v | 1;
}

std::string secs(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", s);
    return buf;
}

Deadline sooner(const Deadline &a, double s) {
    Deadline b = Deadline::in(s);
    return b.at < a.at ? b : a;
}

bool retryable_connect(int err) {
    return err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH ||
           err == ECONNRESET || err == EAGAIN || err == EINTR || err == ECONNABORTED;
}

class TcpExchange final : public Exchange {
  public:
    explicit TcpExchange(const ExchangeConfig &c) : c_(c) {
        tree_.n = c.world;
        tree_.k = c.fanout;
        Deadline d = Deadline::in(c.timeout_s);
        grace_ = 1.0 + c.timeout_s / 10;
        if (c.world == 1) return;
        if (c.rank == 0)
            setup_root(d);
        else
            setup_child(d);
        barrier_named("the set-up check");
    }

    const char *name() const override { return "tcp"; }
    long peak_connections() const override { return peak_; }

    void barrier() override { barrier_named(nullptr); }

    void broadcast(void *buf, size_t len, int root) override {
        Op op = begin(kBroadcast);
        if (c_.world == 1) return;
        std::string what = label(op, nullptr);
        auto t0 = Clock::now();
        std::vector<uint8_t> data;
        if (root != 0) {
            // The data first climbs from `root` to rank 0, as a gather in
            // which only root's branch carries bytes.
            bool mine = c_.rank == root;
            std::vector<uint8_t> up = gather(op, what, t0, mine ? buf : nullptr, mine ? len : 0, len,
                                             [&](int child) { return tree_.below(root, child); });
            if (c_.rank == 0) data = std::move(up);
        } else if (c_.rank == 0) {
            const uint8_t *p = static_cast<const uint8_t *>(buf);
            data.assign(p, p + len);
        }
        Writer w;
        w.u32(static_cast<uint32_t>(root)).u32(static_cast<uint32_t>(len));
        if (c_.rank == 0) w.bytes(data.data(), data.size());
        std::vector<uint8_t> got = down(op, what, t0, w.data());
        Reader r(got);
        uint32_t their_root = r.u32(), their_len = r.u32();
        if (!r.ok() || their_root != static_cast<uint32_t>(root) || their_len != len || r.left() != len)
            spread(DISTBIND_ERR_PEER, what + ": rank 0 broadcast " + std::to_string(their_len) + " bytes from rank " +
                                          std::to_string(their_root) + ", but rank " + std::to_string(c_.rank) +
                                          " expected " + std::to_string(len) + " bytes from rank " +
                                          std::to_string(root) + " (every rank must pass the same size and root)");
        if (c_.rank != root && len) std::memcpy(buf, r.bytes(len), len);
    }

    void allgather(const void *send, size_t len, void *recv) override {
        Op op = begin(kAllgather);
        if (c_.world == 1) {
            if (len) std::memmove(recv, send, len);
            return;
        }
        std::string what = label(op, nullptr);
        auto t0 = Clock::now();
        std::vector<uint8_t> pre = gather(op, what, t0, send, len, len, [](int) { return true; });
        Writer w;
        w.u32(static_cast<uint32_t>(len));
        if (c_.rank == 0) {
            // Pre-order, as gathered, to rank order.
            std::vector<int> order = tree_.preorder(0);
            std::vector<uint8_t> all(static_cast<size_t>(c_.world) * len);
            for (size_t i = 0; i < order.size() && len; i++)
                std::memcpy(all.data() + static_cast<size_t>(order[i]) * len, pre.data() + i * len, len);
            w.bytes(all.data(), all.size());
        }
        std::vector<uint8_t> got = down(op, what, t0, w.data());
        Reader r(got);
        uint32_t their_len = r.u32();
        if (!r.ok() || their_len != len || r.left() != static_cast<size_t>(c_.world) * len)
            spread(DISTBIND_ERR_PEER, what + ": rank 0 gathered " + std::to_string(their_len) +
                                          " bytes per rank but rank " + std::to_string(c_.rank) + " passed " +
                                          std::to_string(len) + " (every rank must pass the same size)");
        if (len) std::memcpy(recv, r.bytes(r.left()), static_cast<size_t>(c_.world) * len);
    }

  private:
    using Op = std::pair<uint16_t, uint32_t>;  // kind, number

    ExchangeConfig c_;
    Tree tree_;
    double grace_ = 1;
    uint64_t session_ = 0;
    Peer parent_;
    std::vector<Peer> children_;
    uint32_t seq_ = 0;
    std::string broken_;
    distbind_status broken_status_ = DISTBIND_OK;
    long open_ = 0, peak_ = 0;

    Op begin(uint16_t kind) {
        if (!broken_.empty()) fail(DISTBIND_ERR_STATE, "the exchange failed earlier: " + broken_);
        Op op{kind, ++seq_};
        // A neighbour that failed while this rank was away left word (or
        // hung up): report that, not whatever this collective would trip on.
        std::string what = label(op, nullptr);
        check_pending(parent_, what);
        for (Peer &ch : children_) check_pending(ch, what);
        return op;
    }

    void check_pending(Peer &p, const std::string &what) {
        if (!p.link) return;
        int t = peek_type(p.link.fd());
        if (t == static_cast<int>(Msg::Abort)) {
            Message m;
            if (recv_msg(p.link.fd(), m, Deadline::in(1.0)).ok()) on_abort(m, p.rank);
        }
        if (t < 0) lost(what, p.rank, {Io::Eof, 0});
    }

    std::string label(Op op, const char *name) const {
        if (name) return name;
        return std::string(op_name(op.first)) + " #" + std::to_string(op.second);
    }

    void barrier_named(const char *name) {
        Op op = begin(kBarrier);
        if (c_.world == 1) return;
        std::string what = label(op, name);
        auto t0 = Clock::now();
        gather(op, what, t0, nullptr, 0, 0, [](int) { return false; });
        down(op, what, t0, {});
    }

    // Once a message has begun to arrive, the rest of it gets its own time:
    // it may begin just as the collective's deadline passes.
    Deadline rest_of_message() const { return Deadline::in(std::max(2.0, c_.timeout_s)); }

    double margin() const {
        int height = tree_.depth(c_.world - 1);
        return std::min(0.5, c_.timeout_s / (4.0 * (height + 1)));
    }

    // ---- failing ----------------------------------------------------------

    // Tell every neighbour but `except`, mark the exchange broken, throw.
    [[noreturn]] void spread(distbind_status st, const std::string &msg, int except = -1) {
        Writer w;
        w.u64(session_).u16(static_cast<uint16_t>(st)).str(msg);
        Deadline d = Deadline::in(1.0);
        auto tell = [&](Peer &p) {
            if (p.link && p.rank != except)
                send_msg(p.link.fd(), Msg::Abort, 0, seq_, w.data().data(), w.data().size(), d);
        };
        tell(parent_);
        for (Peer &ch : children_) tell(ch);
        broken_ = msg;
        broken_status_ = st;
        fail(st, msg);
    }

    [[noreturn]] void on_abort(const Message &m, int from) {
        Reader r(m.body);
        r.u64();
        auto st = static_cast<distbind_status>(r.u16());
        std::string text = r.str();
        if (!r.ok() || st == DISTBIND_OK) {
            st = DISTBIND_ERR_PEER;
            text = "rank " + std::to_string(from) + " failed and sent an unreadable message";
        }
        spread(st, text, from);
    }

    [[noreturn]] void lost(const std::string &what, int who, const IoResult &r) {
        Peer *p = who == parent_.rank ? &parent_ : nullptr;
        for (Peer &ch : children_)
            if (ch.rank == who) p = &ch;
        if (p && p->link && peek_type(p->link.fd()) == static_cast<int>(Msg::Abort)) {
            Message m;
            if (recv_msg(p->link.fd(), m, Deadline::in(1.0)).ok()) on_abort(m, who);
        }
        std::string how = r.kind == Io::Garbage ? "sent something that is not a dist-bind message"
                          : r.kind == Io::Timeout ? "stopped in the middle of a message"
                                                  : "closed its connection (" + r.str() +
                                                        "): it exited, crashed or called distbind_destroy";
        spread(DISTBIND_ERR_PEER, what + " failed: rank " + std::to_string(who) + " " + how + " (seen by rank " +
                                      std::to_string(c_.rank) + ")",
               who);
    }

    [[noreturn]] void mismatch(const std::string &what, int who, const Message &m) {
        std::string theirs = m.type == Msg::Up || m.type == Msg::Down
                                 ? std::string(op_name(m.op)) + " #" + std::to_string(m.seq)
                                 : "message type " + std::to_string(static_cast<int>(m.type));
        spread(DISTBIND_ERR_PEER, what + " failed: rank " + std::to_string(who) + " sent " + theirs + " instead (seen by rank " +
                                      std::to_string(c_.rank) + "): the ranks called different collectives",
               who);
    }

    // ---- collectives ------------------------------------------------------

    // Gather toward rank 0.  Each rank sends up [len][n][bytes]: its own
    // `mine` (n_mine bytes) followed by what its children sent for whom
    // `carries(child)` holds, in child order.  Returns the bytes at rank 0.
    template <typename Carries>
    std::vector<uint8_t> gather(Op op, const std::string &what, Clock::time_point t0, const void *mine,
                                size_t n_mine, size_t len, Carries carries) {
        size_t nch = children_.size();
        std::vector<std::vector<uint8_t>> got(nch);
        std::vector<bool> done(nch, false);
        std::vector<int> missing, unreachable;
        size_t pending = nch;
        int depth = tree_.depth(c_.rank);
        auto wait_end = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(c_.timeout_s - depth * margin()));
        Deadline dch{wait_end};
        Deadline dmsg = Deadline::in(c_.timeout_s + grace_);
        while (pending) {
            std::vector<int> fds, who;
            if (parent_.link) fds.push_back(parent_.link.fd()), who.push_back(-1);
            for (size_t i = 0; i < nch; i++)
                if (!done[i]) fds.push_back(children_[i].link.fd()), who.push_back(static_cast<int>(i));
            int at = wait_readable(fds, dch);
            if (at < 0) break;
            Message m;
            if (who[at] < 0) {
                IoResult r = recv_msg(parent_.link.fd(), m, rest_of_message());
                if (!r.ok()) lost(what, parent_.rank, r);
                if (m.type == Msg::Abort) on_abort(m, parent_.rank);
                mismatch(what, parent_.rank, m);
            }
            size_t i = static_cast<size_t>(who[at]);
            int ch = children_[i].rank;
            IoResult r = recv_msg(children_[i].link.fd(), m, rest_of_message());
            if (!r.ok()) lost(what, ch, r);
            if (m.type == Msg::Abort) on_abort(m, ch);
            if (m.type == Msg::Missing) {
                Reader rd(m.body);
                for (auto *list : {&missing, &unreachable})
                    for (uint32_t n = rd.u32(); rd.ok() && n > 0; n--) list->push_back(static_cast<int>(rd.u32()));
            } else if (m.type == Msg::Up && m.op == op.first && m.seq == op.second) {
                Reader rd(m.body);
                uint32_t their_len = rd.u32();
                uint32_t n = rd.u32();
                if (!rd.ok() || rd.left() != n) lost(what, ch, {Io::Garbage, 0});
                if (their_len != len)
                    spread(DISTBIND_ERR_PEER,
                           what + " failed: rank " + std::to_string(ch) + " passed " + std::to_string(their_len) +
                               " bytes but rank " + std::to_string(c_.rank) + " passed " + std::to_string(len) +
                               " (every rank must pass the same size)");
                const uint8_t *p = rd.bytes(n);
                got[i].assign(p, p + n);
            } else {
                mismatch(what, ch, m);
            }
            done[i] = true;
            pending--;
        }
        for (size_t i = 0; i < nch; i++) {
            if (done[i]) continue;
            missing.push_back(children_[i].rank);
            for (int r : tree_.preorder(children_[i].rank))
                if (r != children_[i].rank) unreachable.push_back(r);
        }
        if (!missing.empty()) report_missing(what, std::move(missing), std::move(unreachable));

        std::vector<uint8_t> body;
        if (n_mine) body.assign(static_cast<const uint8_t *>(mine), static_cast<const uint8_t *>(mine) + n_mine);
        for (size_t i = 0; i < nch; i++)
            if (carries(children_[i].rank)) body.insert(body.end(), got[i].begin(), got[i].end());
        if (c_.rank == 0) return body;
        Writer w;
        w.u32(static_cast<uint32_t>(len)).u32(static_cast<uint32_t>(body.size())).bytes(body.data(), body.size());
        IoResult r = send_msg(parent_.link.fd(), Msg::Up, op.first, op.second, w.data().data(), w.data().size(), dmsg);
        if (!r.ok()) lost(what, parent_.rank, r);
        return {};
    }

    [[noreturn]] void report_missing(const std::string &what, std::vector<int> missing, std::vector<int> unreachable) {
        std::sort(missing.begin(), missing.end());
        std::sort(unreachable.begin(), unreachable.end());
        std::string msg = what + " failed: rank" + (missing.size() > 1 ? "s " : " ") + rank_list(missing) +
                          " did not arrive within " + secs(c_.timeout_s);
        if (!unreachable.empty())
            msg += " (rank" + std::string(unreachable.size() > 1 ? "s " : " ") + rank_list(unreachable) +
                   ", below them in the tree, could not report)";
        if (c_.rank == 0) spread(DISTBIND_ERR_TIMEOUT, msg + " (seen by rank 0)");
        // Tell the parent who is missing, then wait for rank 0's verdict so
        // every rank fails with the same message.
        Writer w;
        w.u32(static_cast<uint32_t>(missing.size()));
        for (int r : missing) w.u32(static_cast<uint32_t>(r));
        w.u32(static_cast<uint32_t>(unreachable.size()));
        for (int r : unreachable) w.u32(static_cast<uint32_t>(r));
        Deadline d = Deadline::in(grace_ + margin());
        send_msg(parent_.link.fd(), Msg::Missing, 0, seq_, w.data().data(), w.data().size(), d);
        if (wait_readable({parent_.link.fd()}, d) == 0) {
            Message m;
            if (recv_msg(parent_.link.fd(), m, rest_of_message()).ok() && m.type == Msg::Abort) on_abort(m, parent_.rank);
        }
        spread(DISTBIND_ERR_TIMEOUT, msg + " (seen by rank " + std::to_string(c_.rank) + ")");
    }

    // Rank 0's answer travels down; returns it.
    std::vector<uint8_t> down(Op op, const std::string &what, Clock::time_point t0, const std::vector<uint8_t> &at_root) {
        std::vector<uint8_t> body;
        Deadline dmsg{t0 + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(c_.timeout_s + grace_))};
        if (c_.rank == 0) {
            body = at_root;
        } else {
            for (;;) {
                std::vector<int> fds{parent_.link.fd()};
                for (Peer &ch : children_) fds.push_back(ch.link.fd());
                int at = wait_readable(fds, dmsg);
                if (at < 0)
                    spread(DISTBIND_ERR_TIMEOUT,
                           what + " failed: no answer from rank 0 (through rank " + std::to_string(parent_.rank) +
                               ") within " + secs(c_.timeout_s) + ": rank 0, or a rank between, did not arrive (seen by rank " +
                               std::to_string(c_.rank) + ")");
                Peer &from = at == 0 ? parent_ : children_[static_cast<size_t>(at - 1)];
                Message m;
                IoResult r = recv_msg(from.link.fd(), m, rest_of_message());
                if (!r.ok()) lost(what, from.rank, r);
                if (m.type == Msg::Abort) on_abort(m, from.rank);
                if (at != 0 || m.type != Msg::Down || m.op != op.first || m.seq != op.second)
                    mismatch(what, from.rank, m);
                body = std::move(m.body);
                break;
            }
        }
        for (Peer &ch : children_) {
            IoResult r = send_msg(ch.link.fd(), Msg::Down, op.first, op.second, body.data(), body.size(), dmsg);
            if (!r.ok()) lost(what, ch.rank, r);
        }
        return body;
    }

    // ---- set-up -------------------------------------------------------------

    std::string master() const { return c_.master_addr + ":" + std::to_string(c_.master_port); }

    // Rank 0 stops the set-up: every registered rank hears why, directly.
    void abort_registered(const std::vector<Addr> &addr, const std::vector<bool> &have, distbind_status st,
                          const std::string &msg) {
        Writer w;
        w.u64(session_).u16(static_cast<uint16_t>(st)).str(msg);
        Deadline all = Deadline::in(5.0);
        for (size_t r = 1; r < addr.size() && !all.passed(); r++) {
            if (!have[r]) continue;
            int err;
            Deadline one = sooner(all, 1.0);
            Socket s = connect_to(addr[r], one, err);
            if (s) send_msg(s.fd(), Msg::Abort, 0, 0, w.data().data(), w.data().size(), one);
        }
    }

    // After a failed set-up, answer the ranks still connecting with the
    // reason (instead of leaving them to time out), until each has heard
    // it or the deadline passes.
    void turn_away(const Socket &lis, std::vector<bool> told, const Deadline &d, const std::string &why) {
        size_t left = static_cast<size_t>(std::count(told.begin(), told.end(), false));
        Writer w;
        w.u16(DISTBIND_ERR_PEER).str(why);
        while (left > 0 && wait_readable({lis.fd()}, d) == 0) {
            int err;
            Socket s = accept_from(lis, err);
            Message m;
            if (!s || !recv_msg(s.fd(), m, sooner(d, kHelloWait)).ok() || m.type != Msg::Hello) continue;
            Reader rd(m.body);
            rd.u32();
            uint32_t rank = rd.u32();
            rd.u32();
            if (rd.str() != c_.step_key) continue;
            send_msg(s.fd(), Msg::Reject, 0, 0, w.data().data(), w.data().size(), sooner(d, 1.0));
            if (rank < told.size() && !told[rank]) {
                told[rank] = true;
                left--;
            }
        }
    }

    void setup_root(const Deadline &d) {
        if (!c_.master_port)
            fail(DISTBIND_ERR_ENV, "MASTER_PORT is not set (rank 0 of the TCP bootstrap listens on it; srun --dist-bind sets it)");
        int err;
        Socket lis = listen_on(Addr{htonl(INADDR_ANY), static_cast<uint16_t>(c_.master_port)}, err);
        if (!lis && err == EADDRINUSE)
            fail(DISTBIND_ERR_SYSTEM, "rank 0 cannot listen on MASTER_PORT=" + std::to_string(c_.master_port) +
                                          ": the port is already in use (another program, or another step, holds "
                                          "it); choose a free one with --dist-bind=port=N or MASTER_PORT");
        if (!lis)
            fail(DISTBIND_ERR_SYSTEM, "rank 0 cannot listen on MASTER_PORT=" + std::to_string(c_.master_port) + ": " +
                                          errno_str(err));
        session_ = random64();
        std::vector<Addr> addr(c_.world);
        std::vector<std::string> host(c_.world);
        std::vector<bool> have(c_.world, false);
        have[0] = true;
        int count = 1, foreign = 0;
        std::string foreign_key;
        debugf("tcp: rank 0 listening on port %u for %d ranks", c_.master_port, c_.world - 1);
        while (count < c_.world) {
            if (wait_readable({lis.fd()}, d) < 0) {
                std::vector<int> missing;
                for (int r = 0; r < c_.world; r++)
                    if (!have[r]) missing.push_back(r);
                std::string msg = "set-up failed: rank" + std::string(missing.size() > 1 ? "s " : " ") +
                                  rank_list(missing) + " did not reach rank 0 at " + master() + " within " +
                                  secs(c_.timeout_s);
                if (foreign)
                    msg += "; " + std::to_string(foreign) + " connection(s) from another step ('" + foreign_key +
                           "') were turned away";
                abort_registered(addr, have, DISTBIND_ERR_TIMEOUT, msg);
                fail(DISTBIND_ERR_TIMEOUT, msg);
            }
            Socket raw = accept_from(lis, err);
            if (!raw) {
                if (err == EAGAIN || err == EWOULDBLOCK) continue;
                fail(DISTBIND_ERR_SYSTEM, "rank 0: accepting on MASTER_PORT failed: " + errno_str(err));
            }
            Link l(std::move(raw), &open_, &peak_);
            Message m;
            if (!recv_msg(l.fd(), m, sooner(d, kHelloWait)).ok() || m.type != Msg::Hello) continue;
            Reader rd(m.body);
            uint32_t proto = rd.u32(), rank = rd.u32(), world = rd.u32();
            std::string key = rd.str();
            Addr a;
            a.ip = rd.u32();
            a.port = rd.u16();
            std::string h = rd.str();
            uint32_t pid = rd.u32();
            auto reject = [&](distbind_status st, const std::string &why) {
                Writer w;
                w.u16(static_cast<uint16_t>(st)).str(why);
                send_msg(l.fd(), Msg::Reject, 0, 0, w.data().data(), w.data().size(), sooner(d, 1.0));
            };
            if (!rd.ok() || proto != kProto) {
                reject(DISTBIND_ERR_PEER, "rank 0 at " + master() + " speaks another version of the dist-bind protocol");
                continue;
            }
            if (key != c_.step_key) {
                foreign++;
                foreign_key = key;
                reject(DISTBIND_ERR_PEER, "rank 0 at " + master() + " belongs to step '" + c_.step_key +
                                              "', but this rank is in step '" + key +
                                              "': two steps are using the same MASTER_PORT");
                continue;
            }
            std::string who = "rank " + std::to_string(rank) + " (" + h + ", pid " + std::to_string(pid) + ")";
            std::string bad;
            if (world != static_cast<uint32_t>(c_.world))
                bad = who + " has world size " + std::to_string(world) + " but rank 0 has " + std::to_string(c_.world) +
                      ": the ranks disagree on WORLD_SIZE";
            else if (rank == 0 || rank >= world)
                bad = who + " claims rank " + std::to_string(rank) + ", but rank 0 is " + host_name() +
                      " and the others must be 1.." + std::to_string(c_.world - 1);
            else if (have[rank])
                bad = "rank " + std::to_string(rank) + " registered twice: from " + host[rank] + " and from " + h +
                      ": two processes have the same RANK";
            if (!bad.empty()) {
                bad = "set-up failed: " + bad;
                reject(DISTBIND_ERR_PEER, bad);
                if (rank < world && rank < have.size()) have[rank] = true;  // told
                abort_registered(addr, have, DISTBIND_ERR_PEER, bad);
                turn_away(lis, have, d, bad);
                fail(DISTBIND_ERR_PEER, bad);
            }
            addr[rank] = a;
            host[rank] = h;
            have[rank] = true;
            count++;
            Writer w;
            w.u64(session_).u32(tree_.k);
            send_msg(l.fd(), Msg::Welcome, 0, 0, w.data().data(), w.data().size(), sooner(d, 1.0));
        }
        lis.close();
        debugf("tcp: all %d ranks registered, %ld connections at most so far", c_.world, peak_);
        std::vector<std::pair<int, Addr>> all;
        for (int r = 1; r < c_.world; r++) all.emplace_back(r, addr[r]);
        try {
            connect_children(all, d);
        } catch (const Failure &f) {
            abort_registered(addr, have, f.status, f.what());
            throw;
        }
    }

    static std::string host_name() {
        char buf[256] = "?";
        gethostname(buf, sizeof buf - 1);
        return buf;
    }

    void setup_child(const Deadline &d) {
        if (c_.master_addr.empty())
            fail(DISTBIND_ERR_ENV, "MASTER_ADDR is not set (the TCP bootstrap connects to rank 0 at MASTER_ADDR:MASTER_PORT; "
                                   "srun --dist-bind sets both)");
        if (!c_.master_port)
            fail(DISTBIND_ERR_ENV, "MASTER_PORT is not set (the TCP bootstrap connects to rank 0 at MASTER_ADDR:MASTER_PORT; "
                                   "srun --dist-bind sets both)");
        Addr root;
        for (;;) {
            int rc = resolve(c_.master_addr, c_.master_port, root);
            if (rc == 0) break;
            if (rc != EAI_AGAIN || d.passed())
                fail(DISTBIND_ERR_ENV, "MASTER_ADDR=\"" + c_.master_addr + "\" does not resolve to an IPv4 address: " +
                                           gai_strerror(rc));
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        std::string where = "rank 0 at " + master() + " (MASTER_ADDR:MASTER_PORT)";
        int err = 0;
        Socket s;
        auto pause = std::chrono::milliseconds(10);
        for (;;) {
            s = connect_to(root, d, err);
            if (s) break;
            if (d.passed())
                fail(DISTBIND_ERR_TIMEOUT, "could not reach " + where + " within " + secs(c_.timeout_s) + " (" +
                                               errno_str(err) + "): rank 0 is not running, has failed, or listens elsewhere");
            if (!retryable_connect(err)) fail(DISTBIND_ERR_SYSTEM, "cannot connect to " + where + ": " + errno_str(err));
            std::this_thread::sleep_for(std::min(pause, std::chrono::milliseconds(d.ms_left())));
            pause = std::min(pause * 2, std::chrono::milliseconds(500));
        }
        Link reg(std::move(s), &open_, &peak_);
        // Listen on the address this node uses to reach rank 0: the one the
        // parent can reach it on.
        Addr me = local_addr(reg.fd());
        me.port = 0;
        Socket lis = listen_on(me, err);
        if (!lis) fail(DISTBIND_ERR_SYSTEM, "cannot open a listening socket on " + me.str() + ": " + errno_str(err));
        Addr mine = local_addr(lis.fd());
        Writer w;
        w.u32(kProto).u32(static_cast<uint32_t>(c_.rank)).u32(static_cast<uint32_t>(c_.world)).str(c_.step_key);
        w.u32(mine.ip).u16(mine.port).str(host_name()).u32(static_cast<uint32_t>(getpid()));
        send_msg(reg.fd(), Msg::Hello, 0, 0, w.data().data(), w.data().size(), d);
        Message m;
        IoResult r = recv_msg(reg.fd(), m, d);
        if (r.kind == Io::Timeout)
            fail(DISTBIND_ERR_TIMEOUT, where + " accepted the connection but did not answer within " +
                                           secs(c_.timeout_s) + ": another program may be listening on MASTER_PORT, or rank 0 is stuck");
        if (r.kind == Io::Garbage || (r.ok() && m.type != Msg::Welcome && m.type != Msg::Reject))
            fail(DISTBIND_ERR_PEER, where + " answered, but not as a dist-bind rank 0: another program is listening on MASTER_PORT");
        if (!r.ok())
            fail(DISTBIND_ERR_PEER, where + " closed the connection without answering (" + r.str() +
                                        "): it failed, or it is another program listening on MASTER_PORT");
        Reader rd(m.body);
        if (m.type == Msg::Reject) {
            auto st = static_cast<distbind_status>(rd.u16());
            std::string why = rd.str();
            fail(rd.ok() && st != DISTBIND_OK ? st : DISTBIND_ERR_PEER, why);
        }
        session_ = rd.u64();
        tree_.k = rd.u32();
        if (!rd.ok() || tree_.k == 0) fail(DISTBIND_ERR_PEER, where + " sent a malformed answer");
        reg.close();
        parent_.rank = tree_.parent(c_.rank);

        // Wait for the parent to hand over this rank's subtree, or for rank 0
        // to say the set-up failed.
        Deadline dt = Deadline::in(d.s_left() + grace_);
        std::vector<std::pair<int, Addr>> sub;
        for (;;) {
            if (wait_readable({lis.fd()}, dt) < 0)
                fail(DISTBIND_ERR_TIMEOUT, "rank 0 at " + master() + " took this rank in but did not finish setting up the step within " +
                                               secs(c_.timeout_s) + ": other ranks did not arrive or rank 0 failed (its error names them)");
            Socket in = accept_from(lis, err);
            if (!in) continue;
            Message t;
            if (!recv_msg(in.fd(), t, sooner(dt, kHelloWait)).ok()) continue;
            Reader tr(t.body);
            if (tr.u64() != session_) continue;
            if (t.type == Msg::Abort) {
                auto st = static_cast<distbind_status>(tr.u16());
                std::string why = tr.str();
                fail(tr.ok() && st != DISTBIND_OK ? st : DISTBIND_ERR_PEER, why);
            }
            if (t.type != Msg::Tree) continue;
            tr.u32();  // the fan-out, as in the welcome
            for (uint32_t n = tr.u32(); tr.ok() && n > 0; n--) {
                int rank = static_cast<int>(tr.u32());
                Addr a;
                a.ip = tr.u32();
                a.port = tr.u16();
                sub.emplace_back(rank, a);
            }
            if (!tr.ok()) fail(DISTBIND_ERR_PEER, "rank " + std::to_string(parent_.rank) + " sent a malformed tree");
            parent_.link = Link(std::move(in), &open_, &peak_);
            break;
        }
        lis.close();
        connect_children(sub, dt);
    }

    // Connect to each child and hand it the addresses of its subtree.
    void connect_children(const std::vector<std::pair<int, Addr>> &sub, const Deadline &d) {
        for (int ch : tree_.children(c_.rank)) {
            const Addr *a = nullptr;
            Writer w;
            std::vector<std::pair<int, Addr>> below;
            for (const auto &e : sub) {
                if (e.first == ch) a = &e.second;
                else if (tree_.below(e.first, ch)) below.push_back(e);
            }
            if (!a) spread(DISTBIND_ERR_INTERNAL, "set-up failed: no address for rank " + std::to_string(ch));
            w.u64(session_).u32(tree_.k).u32(static_cast<uint32_t>(below.size()));
            for (const auto &e : below) w.u32(static_cast<uint32_t>(e.first)).u32(e.second.ip).u16(e.second.port);
            int err;
            Socket s = connect_to(*a, d, err);
            if (!s)
                spread(DISTBIND_ERR_PEER, "set-up failed: rank " + std::to_string(ch) + " registered but cannot be reached at " +
                                              a->str() + " (" + errno_str(err) + "): it exited or crashed (seen by rank " +
                                              std::to_string(c_.rank) + ")");
            Peer p;
            p.rank = ch;
            p.link = Link(std::move(s), &open_, &peak_);
            IoResult r = send_msg(p.link.fd(), Msg::Tree, 0, 0, w.data().data(), w.data().size(), d);
            children_.push_back(std::move(p));
            if (!r.ok()) lost("set-up", ch, r);
        }
    }
};

}  // namespace

std::unique_ptr<Exchange> make_tcp(const ExchangeConfig &c) { return std::make_unique<TcpExchange>(c); }

}  // namespace db::rt
