// How each end of the handshake is served (the protocol is in
// handshake.hh).
#include "bootstrap/tcp/handshake.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace db::rt::tcp {

namespace {

int ms_until(Clock::time_point t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
    return ms <= 0 ? 0 : ms > 1000000 ? 1000000 : static_cast<int>(ms) + 1;
}

std::string peer_of(int fd) {
    sockaddr_in sa{};
    socklen_t len = sizeof sa;
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&sa), &len) != 0) return "?";
    Addr a;
    a.ip = sa.sin_addr.s_addr;
    a.port = ntohs(sa.sin_port);
    return a.str();
}

// The whole of a small frame now, or nothing useful: a fresh connection
// takes a few hundred bytes at once, so a partial write means the peer is
// not reading (or gone).
bool send_whole(int fd, const std::vector<uint8_t> &f) {
    return send_some(fd, f.data(), f.size()) == static_cast<long>(f.size());
}

// A connection closed before it proved itself is let go only when it is
// older than this and the door is full: a rank answers within microseconds.
constexpr double kEvictAge = 0.2;

// What one read takes when reading ahead: a Hello, its proof and a
// registration come in one read.
constexpr size_t kReadAhead = 1024;

}  // namespace

// ---- FrameReader ------------------------------------------------------------

void FrameReader::start(size_t max_body, bool read_ahead) {
    have_ = 0;
    max_ = max_body;
    in_body_ = false;
    read_ahead_ = read_ahead;
    body_.clear();
}

long FrameReader::take(int fd, uint8_t *p, size_t n) {
    if (!ahead_.empty()) {
        size_t k = std::min(n, ahead_.size());
        std::memcpy(p, ahead_.data(), k);
        ahead_.erase(ahead_.begin(), ahead_.begin() + static_cast<long>(k));
        return static_cast<long>(k);
    }
    if (!read_ahead_ || n >= kReadAhead) return recv_some(fd, p, n);
    uint8_t buf[kReadAhead];
    long got = recv_some(fd, buf, sizeof buf);
    if (got <= 0) return got;
    size_t k = std::min(n, static_cast<size_t>(got));
    std::memcpy(p, buf, k);
    ahead_.assign(buf + k, buf + got);
    return static_cast<long>(k);
}

int FrameReader::pump(int fd) {
    for (;;) {
        if (!in_body_) {
            long n = take(fd, head_ + have_, kHeader - have_);
            if (n < 0) return -1;
            if (n == 0) return 0;
            have_ += static_cast<size_t>(n);
            if (have_ < kHeader) continue;
            if (!decode_header(head_, max_, hd_)) return -1;
            body_.assign(hd_.len, 0);
            have_ = 0;
            in_body_ = true;
        }
        if (have_ == body_.size()) return 1;
        long n = take(fd, body_.data() + have_, body_.size() - have_);
        if (n < 0) return -1;
        if (n == 0) return 0;
        have_ += static_cast<size_t>(n);
    }
}

// ---- Door -----------------------------------------------------------------

struct Door::Conn {
    Socket s;
    std::string peer;
    Clock::time_point since, until;
    enum Phase { AwaitHello, AwaitProof, AwaitFirst } phase = AwaitHello;
    FrameReader in;
    std::vector<uint8_t> hello_body;
    Hello hello;
    auth::Nonce server_nonce{};
    auth::Proofs proofs;  // once the server's nonce is known
    std::string other;    // of another release (Door::mismatch)
};

Door::Door(Socket listener, const Credentials &me, std::function<bool(uint32_t)> client_ok, std::set<Msg> first,
           size_t max_first)
    : lis_(std::move(listener)),
      me_(me),
      client_ok_(std::move(client_ok)),
      first_(std::move(first)),
      max_first_(max_first) {}

Door::~Door() = default;

void Door::drop(size_t i, const char *why) {
    dropped_++;
    debugf("tcp: dropped a connection from %s to rank %d's listener: %s (%ld dropped so far)", conns_[i]->peer.c_str(),
           me_.rank, why, dropped_);
    conns_.erase(conns_.begin() + static_cast<long>(i));
}

void Door::accept_all() {
    for (;;) {
        if (conns_.size() >= kMaxPending) {
            // Full: the oldest goes, if it has had its chance.
            size_t oldest = 0;
            for (size_t i = 1; i < conns_.size(); i++)
                if (conns_[i]->since < conns_[oldest]->since) oldest = i;
            if (Clock::now() - conns_[oldest]->since < to_duration(kEvictAge)) return;
            drop(oldest, "too many connections waiting to prove themselves, and it is the oldest");
        }
        int err;
        Socket s = accept_from(lis_, err);
        if (!s) return;  // EAGAIN: none left; anything else: try again on the next wake-up
        auto c = std::make_unique<Conn>();
        c->peer = peer_of(s.fd());
        c->s = std::move(s);
        c->since = Clock::now();
        c->until = c->since + to_duration(me_.budget_s);
        c->in.start(kMaxHello, true);
        conns_.push_back(std::move(c));
    }
}

bool Door::challenge(size_t i) {
    Conn &c = *conns_[i];
    if (c.in.read_past()) {
        drop(i, "it sent more than its Hello before this rank's challenge");
        return false;
    }
    c.server_nonce = me_.nonces->next();
    c.proofs = me_.key->prove_both(c.hello_body, c.server_nonce);
    Ack ack;
    ack.proof = c.proofs.server;
    std::vector<uint8_t> out = frame(Msg::Challenge, 0, 0, encode(Challenge{c.server_nonce}));
    std::vector<uint8_t> proof = frame(Msg::Ack, 0, 0, encode(ack));
    out.insert(out.end(), proof.begin(), proof.end());
    out.insert(out.end(), greeting_.begin(), greeting_.end());
    if (!send_whole(c.s.fd(), out)) {
        drop(i, "it does not read");
        return false;
    }
    return true;
}

bool Door::mismatch(size_t i, const Release &theirs) {
    Conn &c = *conns_[i];
    Mismatch m;
    m.release = this_release();
    c.hello_body = c.in.body();
    if (me_.key) {
        m.nonce = me_.nonces->next();
        c.proofs = me_.key->prove_both(c.hello_body, m.nonce);
        m.proof = c.proofs.server;
    }
    if (!send_whole(c.s.fd(), frame(Msg::Mismatch, 0, 0, encode(m)))) {
        drop(i, "it speaks another protocol, and does not read");
        return false;
    }
    c.other = release_text(theirs);
    debugf("tcp: %s connects from %s: answered with this release's", c.other.c_str(), c.peer.c_str());
    c.phase = Conn::AwaitProof;
    c.in.start(kMaxProof, true);
    return true;
}

bool Door::progress(size_t i) {
    Conn &c = *conns_[i];
    for (;;) {
        int got = c.in.pump(c.s.fd());
        if (got == 0) return false;
        if (got < 0) {
            drop(i, c.phase == Conn::AwaitFirst ? "it closed, or sent too much, after its proof"
                                                : "it closed, or sent something that is not the handshake");
            return false;
        }
        const Header &h = c.in.header();
        if (c.phase == Conn::AwaitHello) {
            Release theirs;
            if (h.type == Msg::Hello && !announced_ && peek_release(c.in.body(), theirs) &&
                theirs.proto != this_release().proto) {
                if (!mismatch(i, theirs)) return false;
                if (!me_.key) return true;
                continue;
            }
            if (h.type != Msg::Hello || !decode(c.in.body(), c.hello)) {
                drop(i, "it did not open with a dist-bind Hello of this version");
                return false;
            }
            if (c.hello.server != static_cast<uint32_t>(me_.rank) || !client_ok_(c.hello.client)) {
                drop(i, "it asked for another rank, or came from a rank not expected here");
                return false;
            }
            if ((c.hello.mode == Mode::None) != (me_.key == nullptr)) {
                drop(i, me_.key ? "it runs without a secret (DIST_BIND_TCP_INSECURE=1), this rank with one"
                                : "it proves a secret, and this rank runs without one (DIST_BIND_TCP_INSECURE=1)");
                return false;
            }
            // A listener that announced a nonce takes only proofs over it
            // (its callers all know it); rank 0's only over its challenge.
            if (me_.key && (c.hello.mode == Mode::Announced) != (announced_ != nullptr)) {
                drop(i, announced_ ? "it proves over a challenge this listener does not give"
                                   : "it proves over a nonce this rank never announced");
                return false;
            }
            c.hello_body = c.in.body();
            if (me_.key && c.hello.mode == Mode::Challenge && !challenge(i)) return false;
            if (c.hello.mode == Mode::Announced) {
                c.server_nonce = *announced_;
                c.proofs = me_.key->prove_both(c.hello_body, c.server_nonce);
            }
            c.phase = me_.key ? Conn::AwaitProof : Conn::AwaitFirst;
            c.in.start(me_.key ? kMaxProof : max_first_, true);
        } else if (c.phase == Conn::AwaitProof) {
            const auth::Mac &want = c.proofs.client;
            if (h.type != Msg::Proof || c.in.body().size() != want.size() || !auth::same(want, c.in.body().data())) {
                drop(i, "its proof does not match this step's secret");
                return false;
            }
            if (!c.other.empty()) return true;
            c.phase = Conn::AwaitFirst;
            c.in.start(max_first_, true);
        } else {
            if (!first_.count(h.type)) {
                drop(i, "it proved itself, then sent a message that does not belong here");
                return false;
            }
            if (c.in.read_past()) {
                drop(i, "it sent more than its first message before this rank answered");
                return false;
            }
            return true;
        }
    }
}

void Door::admit(size_t i) {
    Conn *c = conns_[i].get();
    Admitted a;
    a.sock = std::move(c->s);
    a.hello = std::move(c->hello);
    a.first.type = c->in.header().type;
    a.first.op = c->in.header().op;
    a.first.seq = c->in.header().seq;
    a.first.body = std::move(c->in.body());
    a.peer = c->peer;
    a.other = c->other;
    // Rank 0's proof went out with its challenge.
    if (me_.key && a.hello.mode == Mode::Announced) {
        Ack ack;
        ack.proof = c->proofs.server;
        a.ack = frame(Msg::Ack, 0, 0, encode(ack));
    }
    conns_.erase(conns_.begin() + static_cast<long>(i));
    ready_.push_back(std::move(a));
}

std::optional<Admitted> Door::next(const Deadline &d) {
    // One poll serves every connection that is ready: what it admits is
    // handed out one by one before the next poll (rank 0 admits hundreds).
    while (ready_.empty()) {
        auto now = Clock::now();
        for (size_t i = conns_.size(); i-- > 0;)
            if (now >= conns_[i]->until) drop(i, "it did not finish its handshake in time");
        if (d.passed()) return std::nullopt;

        // The listener is watched unless the door is full of connections
        // too young to be dropped; then the next wake-up is when the
        // oldest comes of age.
        Clock::time_point wake = d.at;
        bool full = conns_.size() >= kMaxPending;
        if (full) {
            Clock::time_point oldest = conns_[0]->since;
            for (const auto &c : conns_) oldest = std::min(oldest, c->since);
            wake = std::min(wake, oldest + to_duration(kEvictAge));
            if (now >= oldest + to_duration(kEvictAge)) full = false;
        }
        for (const auto &c : conns_) wake = std::min(wake, c->until);
        std::vector<pollfd> p;
        p.push_back({full ? -1 : lis_.fd(), POLLIN, 0});
        for (const auto &c : conns_) p.push_back({c->s.fd(), POLLIN, 0});
        int n = poll(p.data(), p.size(), ms_until(wake));
        if (n < 0 && errno != EINTR) fail(DISTBIND_ERR_SYSTEM, "poll failed: " + errno_str(errno));
        if (n <= 0) continue;
        // Last to first: dropping or admitting one moves only those after
        // it, which are done.
        for (size_t i = p.size() - 1; i >= 1; i--)
            if (p[i].revents && progress(i - 1)) admit(i - 1);
        if (p[0].revents) accept_all();
    }
    Admitted a = std::move(ready_.front());
    ready_.erase(ready_.begin());
    return a;
}

// ---- dial -----------------------------------------------------------------

namespace {

struct DialState {
    enum Phase { Wait, Connecting, AwaitChallenge, AwaitAck, AwaitReply, Done, Failed } phase = Wait;
    Clock::time_point wake{}, until{};
    std::chrono::milliseconds pause{1};
    Socket s;
    Mode mode = Mode::None;
    FrameReader in;
    std::vector<uint8_t> hello_body;
    auth::Nonce server_nonce{};
    auth::Proofs proofs;  // once the server's nonce is known
    bool spoke = false;   // it sent something since it last read
    int trips = 0;        // on this connection (Dial::trips)
};

std::vector<uint8_t> proof_frame(const DialState &s) {
    return frame(Msg::Proof, 0, 0, std::vector<uint8_t>(s.proofs.client.begin(), s.proofs.client.end()));
}

bool retryable(int err, bool refused) {
    if (err == ECONNREFUSED) return refused;
    return err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == ECONNRESET || err == EAGAIN ||
           err == EINTR || err == ECONNABORTED || err == EADDRNOTAVAIL;
}

// The Hello, its proof and the message, in one write; to a server that
// challenges, the Hello alone (the proof and the message follow its
// challenge and its proof: finish()).
IoResult open_with(const Dial &x, DialState &s, const Credentials &me) {
    Hello h;
    h.proto = this_release().proto;
    h.mode = s.mode;
    h.client = static_cast<uint32_t>(me.rank);
    h.server = static_cast<uint32_t>(x.rank);
    h.world = static_cast<uint32_t>(me.world);
    h.step = me.step;
    if (me.key) h.nonce = me.nonces->next();
    s.hello_body = encode(h);
    std::vector<uint8_t> out = frame(Msg::Hello, 0, 0, s.hello_body);
    if (s.mode != Mode::Challenge) {
        if (me.key) {
            s.proofs = me.key->prove_both(s.hello_body, s.server_nonce);
            std::vector<uint8_t> p = proof_frame(s);
            out.insert(out.end(), p.begin(), p.end());
        }
        out.insert(out.end(), x.first.begin(), x.first.end());
    }
    return send_all(s.s.fd(), out, Deadline{s.until});
}

// The dials of one call, each a small state machine (DialState), driven
// by one poll loop until every one is done or has failed.
class Dialer {
  public:
    Dialer(std::vector<Dial> &dials, const Credentials &me, const Deadline &d, bool retry_refused,
           std::function<void()> meanwhile)
        : dials_(dials),
          st_(dials.size()),
          me_(me),
          d_(d),
          retry_refused_(retry_refused),
          meanwhile_(std::move(meanwhile)) {}

    void run() {
        for (;;) {
            start_due(Clock::now());
            bool all = std::all_of(st_.begin(), st_.end(), [](const DialState &s) {
                return s.phase == DialState::Done || s.phase == DialState::Failed;
            });
            if (all) break;
            if (meanwhile_ && std::none_of(st_.begin(), st_.end(),
                                           [](const DialState &s) { return s.phase == DialState::Connecting; })) {
                std::function<void()> f = std::move(meanwhile_);
                meanwhile_ = nullptr;
                f();
                continue;
            }
            std::vector<pollfd> p;
            std::vector<size_t> who;
            const Clock::time_point wake = poll_set(p, who);
            int n = poll(p.data(), p.size(), ms_until(wake));
            if (n < 0 && errno != EINTR) fail(DISTBIND_ERR_SYSTEM, "poll failed: " + errno_str(errno));
            if (n <= 0) continue;
            for (size_t j = 0; j < p.size(); j++)
                if (p[j].revents) on_ready(who[j]);
        }
        for (size_t i = 0; i < dials_.size(); i++) {
            dials_[i].done = st_[i].phase == DialState::Done;
            if (dials_[i].done) {
                dials_[i].sock = std::move(st_[i].s);
                dials_[i].trips = st_[i].trips;
                dials_[i].why.clear();
                dials_[i].answered.clear();
            }
        }
    }

  private:
    std::vector<Dial> &dials_;
    std::vector<DialState> st_;
    const Credentials &me_;
    const Deadline &d_;
    const bool retry_refused_;
    std::function<void()> meanwhile_;

    // Again after a pause that doubles from 1 ms: up to 25 ms while nothing
    // listens there yet (rank 0 starting with the others: every rank should
    // be in as soon as it listens; a node's rank 0 typically listens a few
    // ms after its peers start), from at least 10 ms up to 100 ms when
    // something answered badly.
    void failed(size_t i, std::string why, bool retry, bool refused = false) {
        Dial &x = dials_[i];
        DialState &s = st_[i];
        if (s.phase != DialState::Wait && s.phase != DialState::Connecting && !refused) x.answered = why;
        if (s.phase == DialState::Connecting && why.compare(0, 14, "cannot connect") != 0) x.answered = why;
        x.why = std::move(why);
        s.s.close();
        if (!retry || d_.passed()) {
            s.phase = DialState::Failed;
            return;
        }
        if (!refused) s.pause = std::max(s.pause, std::chrono::milliseconds(10));
        debugf("tcp: connection to rank %d at %s: %s; again in %d ms", x.rank, x.addr.str().c_str(), x.why.c_str(),
               static_cast<int>(s.pause.count()));
        s.phase = DialState::Wait;
        s.wake = Clock::now() + s.pause;
        s.pause = std::min(s.pause * 2, std::chrono::milliseconds(refused ? 25 : 100));
    }

    void cannot_connect(size_t i, int err) {
        failed(i, "cannot connect (" + errno_str(err) + ")", retryable(err, retry_refused_), err == ECONNREFUSED);
    }

    // The connection is open and the message sent: what is left to read.
    void sent(size_t i) {
        Dial &x = dials_[i];
        DialState &s = st_[i];
        if (s.mode == Mode::Challenge) {
            // Its challenge, its proof and its greeting come in one write.
            // Or a Mismatch, from rank 0 of another release (wire.hh).
            await(i, DialState::AwaitChallenge, std::max(auth::kNonceBytes, kMaxMismatch), true);
        } else if (me_.key && x.verify) {
            // A child's proof on the tree may have the child's first
            // message up behind it, which is the link's to read: nothing
            // past the proof is read here unless an answer follows it.
            await(i, DialState::AwaitAck, auth::kMacBytes, x.await_reply);
        } else {
            acked(i);
        }
    }
    // Read what the server sends next: a round trip when this rank spoke
    // last (Dial::trips).
    void await(size_t i, DialState::Phase phase, size_t max_body, bool read_ahead) {
        DialState &s = st_[i];
        if (s.spoke) s.trips++;
        s.spoke = false;
        s.phase = phase;
        s.in.start(max_body, read_ahead);
    }
    void acked(size_t i) {
        if (dials_[i].await_reply) {
            await(i, DialState::AwaitReply, kMaxReply, true);
        } else {
            finish(i);
        }
    }
    // Where the server challenged: it has proved itself (and greeted), so
    // this rank's proof and the message go now, and nothing comes back.
    void finish(size_t i) {
        DialState &s = st_[i];
        if (s.mode == Mode::Challenge) {
            if (dials_[i].first.empty()) fail(DISTBIND_ERR_INTERNAL, "a challenged dial has no message to send");
            std::vector<uint8_t> out = proof_frame(s);
            out.insert(out.end(), dials_[i].first.begin(), dials_[i].first.end());
            IoResult r = send_all(s.s.fd(), out, Deadline{s.until});
            if (!r.ok()) return failed(i, "the connection broke before this rank's proof (" + r.str() + ")", true);
            s.spoke = true;
        }
        s.phase = DialState::Done;
    }

    // Starts the dials whose pause is over; fails those past their time.
    void start_due(Clock::time_point now) {
        for (size_t i = 0; i < dials_.size(); i++) {
            Dial &x = dials_[i];
            DialState &s = st_[i];
            if (s.phase == DialState::Done || s.phase == DialState::Failed) continue;
            if (d_.passed()) {
                if (x.why.empty()) x.why = "no answer in time";
                s.phase = DialState::Failed;
                continue;
            }
            if (s.phase == DialState::Wait && now >= s.wake) {
                int err;
                s.s = connect_start(x.addr, err);
                if (!s.s) {
                    cannot_connect(i, err);
                    continue;
                }
                s.mode = !me_.key ? Mode::None : x.announced ? Mode::Announced : Mode::Challenge;
                if (x.announced) s.server_nonce = *x.announced;
                s.in.reset();
                s.spoke = false;
                s.trips = 0;
                s.phase = DialState::Connecting;
                s.until = std::min(d_.at, now + to_duration(me_.budget_s));
            } else if (s.phase != DialState::Wait && now >= s.until) {
                failed(i,
                       s.phase == DialState::Connecting ? "cannot connect (the connection was not accepted in time)"
                       : s.phase == DialState::AwaitChallenge
                           ? "it accepted the connection but sent no challenge in time"
                           : "it did not finish the handshake in time",
                       true);
            }
        }
    }

    // A connection is ready when it can be written to (or failed), then
    // when what it waits for is there.  Returns when to wake at the latest.
    Clock::time_point poll_set(std::vector<pollfd> &p, std::vector<size_t> &who) const {
        Clock::time_point wake = d_.at;
        for (size_t i = 0; i < dials_.size(); i++) {
            const DialState &s = st_[i];
            if (s.phase == DialState::Wait) wake = std::min(wake, s.wake);
            if (s.phase == DialState::Connecting || s.phase == DialState::AwaitChallenge ||
                s.phase == DialState::AwaitAck || s.phase == DialState::AwaitReply) {
                wake = std::min(wake, s.until);
                bool out = s.phase == DialState::Connecting;
                p.push_back({s.s.fd(), static_cast<short>(out ? POLLOUT : POLLIN), 0});
                who.push_back(i);
            }
        }
        return wake;
    }

    // What a read brought in may hold the next step's message too (read
    // ahead): each step runs while its phase moves on and bytes are left.
    void on_ready(size_t i) {
        for (;;) {
            const DialState::Phase was = st_[i].phase;
            switch (was) {
            case DialState::Connecting: on_connected(i); break;
            case DialState::AwaitChallenge: on_challenge(i); break;
            case DialState::AwaitAck: on_ack(i); break;
            case DialState::AwaitReply: on_reply(i); break;
            default: return;
            }
            if (st_[i].phase == was || !st_[i].in.read_past()) return;
        }
    }

    void on_connected(size_t i) {
        DialState &s = st_[i];
        int err = connect_error(s.s.fd());
        if (err != 0) return cannot_connect(i, err);
        IoResult r = open_with(dials_[i], s, me_);
        if (!r.ok()) return failed(i, "the connection broke as it opened (" + r.str() + ")", true);
        s.spoke = true;
        sent(i);
    }

    void on_challenge(size_t i) {
        DialState &s = st_[i];
        int got = s.in.pump(s.s.fd());
        if (got == 0) return;
        if (got > 0 && s.in.header().type == Msg::Mismatch) return on_mismatch(i);
        Challenge ch;
        if (got < 0 || s.in.header().type != Msg::Challenge || !decode(s.in.body(), ch))
            return failed(i, "it closed the connection, or sent something that is not the handshake", true);
        s.server_nonce = ch.nonce;
        s.proofs = me_.key->prove_both(s.hello_body, s.server_nonce);
        await(i, DialState::AwaitAck, auth::kMacBytes, true);
    }

    // The server speaks another protocol: with its proof good, this rank's
    // goes back (so the server may fail too) and the dial fails for good.
    void on_mismatch(size_t i) {
        DialState &s = st_[i];
        Mismatch m;
        if (!decode(s.in.body(), m)) return failed(i, "it sent something that is not the handshake", true);
        s.proofs = me_.key->prove_both(s.hello_body, m.nonce);
        if (!auth::same(s.proofs.server, m.proof.data()))
            return failed(i, "it did not prove that it knows this step's secret", true);
        send_whole(s.s.fd(), proof_frame(s));
        dials_[i].other = release_text(m.release);
        failed(i, dials_[i].other, false);
    }

    void on_ack(size_t i) {
        DialState &s = st_[i];
        int got = s.in.pump(s.s.fd());
        if (got == 0) return;
        Ack ack;
        // Closed before proving itself: it did not take this rank's proof
        // (another step's secret), or dropped the connection; either way,
        // again.
        if (got < 0 || s.in.header().type != Msg::Ack || !decode(s.in.body(), ack) ||
            !auth::same(s.proofs.server, ack.proof.data()))
            return failed(i, "it did not prove that it knows this step's secret", true);
        acked(i);
    }

    void on_reply(size_t i) {
        Dial &x = dials_[i];
        DialState &s = st_[i];
        int got = s.in.pump(s.s.fd());
        if (got == 0) return;
        if (got < 0) return failed(i, "it closed the connection without answering", true);
        x.reply.type = s.in.header().type;
        x.reply.op = s.in.header().op;
        x.reply.seq = s.in.header().seq;
        x.reply.body = std::move(s.in.body());
        finish(i);
    }
};

}  // namespace

void dial(std::vector<Dial> &dials, const Credentials &me, const Deadline &d, bool retry_refused,
          std::function<void()> meanwhile) {
    Dialer(dials, me, d, retry_refused, std::move(meanwhile)).run();
}

}  // namespace db::rt::tcp
