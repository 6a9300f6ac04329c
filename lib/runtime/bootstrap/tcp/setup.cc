// The TCP bootstrap's set-up: registration with rank 0 and the tree (see
// tcp.hh), every connection opened with the handshake of handshake.hh.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <thread>

#include "core/bounded.hh"
#include "bootstrap/tcp/tcp.hh"

namespace db::rt::tcp {

// A one-way Abort: the rank listening at `addr` checks rank 0's proof over
// the nonce it announced; rank 0 does not wait for the rank's.
Dial TcpExchange::abort_dial(int rank, const Addr &addr, const auth::Nonce *announced,
                             const std::vector<uint8_t> &abort) {
    Dial x;
    x.rank = rank;
    x.addr = addr;
    x.announced = announced;
    x.first = abort;
    x.verify = false;
    return x;
}

void TcpExchange::abort_registered(const std::vector<Member> &reg, const std::vector<bool> &have, distbind_status st,
                                   const std::string &msg) {
    std::vector<uint8_t> abort = frame(Msg::Abort, 0, 0, encode(Verdict{st, msg}));
    std::vector<Dial> ds;
    for (size_t r = 1; r < reg.size(); r++)
        if (have[r] && reg[r].addr.port != 0)
            ds.push_back(abort_dial(static_cast<int>(r), reg[r].addr, &reg[r].nonce, abort));
    // Best effort: whoever cannot be told times out, naming rank 0's wait.
    dial(ds, cred_, Deadline::in(std::min(5.0, grace_)), false);
}

// Rank 0's answer to a registration, on its connection (behind rank 0's
// proof where there is one to send).  With a secret the rank reads it only
// when the tree is slow to come (await_subtree), so a refusal also goes to
// the rank's listener, where it waits.
void TcpExchange::answer(Admitted &a, Msg type, const Verdict &v, const Deadline &d) {
    std::vector<uint8_t> out = a.ack;
    std::vector<uint8_t> reply =
        type == Msg::Welcome ? frame(type, 0, 0, encode(Welcome{tree_.k})) : frame(type, 0, 0, encode(v));
    out.insert(out.end(), reply.begin(), reply.end());
    send_all(a.sock.fd(), out, d);
    Register x;
    if (!cred_.key || type == Msg::Welcome || !decode(a.first.body, x) || x.listener.port == 0) return;
    std::vector<Dial> ds;
    ds.push_back(
        abort_dial(static_cast<int>(a.hello.client), x.listener, &x.nonce, frame(Msg::Abort, 0, 0, encode(v))));
    dial(ds, cred_, d, false);
}

void TcpExchange::turn_away(Door &door, std::vector<bool> told, const Deadline &d, distbind_status st,
                            const std::string &why) {
    size_t left = static_cast<size_t>(std::count(told.begin(), told.end(), false));
    while (left > 0) {
        std::optional<Admitted> a = door.next(d);
        if (!a) return;
        if (!a->other.empty()) continue;  // it failed already, and reads no Reject
        answer(*a, Msg::Reject, Verdict{st, why}, sooner(d, 1.0));
        uint32_t rank = a->hello.client;
        if (rank < told.size() && !told[rank]) {
            told[rank] = true;
            left--;
        }
    }
}

void TcpExchange::need_master() const {
    const char *role = c_.rank == 0 ? "rank 0 of the TCP bootstrap listens on MASTER_ADDR:MASTER_PORT"
                                    : "the TCP bootstrap connects to rank 0 at MASTER_ADDR:MASTER_PORT";
    const char *unset = c_.master_addr.empty() ? "MASTER_ADDR" : !c_.master_port ? "MASTER_PORT" : nullptr;
    if (unset) fail(DISTBIND_ERR_ENV, std::string(unset) + " is not set (" + role + "; srun --dist-bind sets both)");
}

Addr TcpExchange::resolve_master(const Deadline &d) const {
    // A numeric address needs no name service (and no helper thread).
    Addr a;
    if (inet_pton(AF_INET, c_.master_addr.c_str(), &a.ip) == 1) {
        a.port = static_cast<uint16_t>(c_.master_port);
        return a;
    }
    for (;;) {
        // getaddrinfo has no timeout of its own (a name server that does
        // not answer holds it for as long as the resolver's settings say).
        struct Resolved {
            int rc;
            Addr a;
        };
        std::string host = c_.master_addr;
        unsigned port = c_.master_port;
        std::optional<Resolved> got = run_bounded<Resolved>(
            [host, port] {
                Resolved r{};
                r.rc = resolve(host, port, r.a);
                return r;
            },
            d);
        if (!got)
            fail(DISTBIND_ERR_TIMEOUT, "MASTER_ADDR=\"" + c_.master_addr + "\" did not resolve within " +
                                           seconds_text(c_.timeout_s) + ": the name service does not answer");
        if (got->rc == 0) return got->a;
        if (got->rc != EAI_AGAIN || d.passed())
            fail(DISTBIND_ERR_ENV, "MASTER_ADDR=\"" + c_.master_addr +
                                       "\" does not resolve to an IPv4 address: " + gai_strerror(got->rc));
        std::this_thread::sleep_for(std::min(std::chrono::milliseconds(100), std::chrono::milliseconds(d.ms_left())));
    }
}

Socket TcpExchange::listen_as_root(const Addr &at) {
    int err;
    Socket lis = listen_on(at, err);
    if (!lis && err == EADDRINUSE)
        fail(DISTBIND_ERR_SYSTEM,
             "rank 0 cannot listen on " + at.str() + " (MASTER_ADDR=" + c_.master_addr +
                 (c_.port_from.empty() ? ", MASTER_PORT=" + std::to_string(c_.master_port)
                                       : ", port " + std::to_string(c_.master_port) + ": " + c_.port_from) +
                 "): the port is already in use (another program, or another step, holds "
                 "it); choose a free one with --dist-bind=port=N or MASTER_PORT");
    if (!lis && err == EADDRNOTAVAIL)
        fail(DISTBIND_ERR_ENV, "rank 0 cannot listen on " + at.str() + ": MASTER_ADDR=\"" + c_.master_addr +
                                   "\" is not an address of this host (" + host_name() +
                                   "); it must name the node rank 0 runs on");
    if (!lis) fail(DISTBIND_ERR_SYSTEM, "rank 0 cannot listen on " + at.str() + ": " + errno_str(err));
    return lis;
}

std::string TcpExchange::no_shows(const std::vector<bool> &have, long dropped) const {
    std::vector<int> missing;
    for (int r = 0; r < c_.world; r++)
        if (!have[r]) missing.push_back(r);
    std::string msg = "set-up failed: " + ranks_text(missing) + " did not reach rank 0 at " + master() + " within " +
                      seconds_text(c_.timeout_s);
    if (dropped)
        msg += "; " + std::to_string(dropped) +
               " connection(s) that did not prove they know this step's secret were dropped (ranks of "
               "another step using the same MASTER_PORT, or other programs)";
    return msg;
}

std::string TcpExchange::refusal(const Admitted &a, Register &x, const std::vector<bool> &have,
                                 const std::vector<Register> &reg) const {
    const Hello &h = a.hello;
    const uint32_t rank = h.client;
    std::string who = "rank " + std::to_string(rank) + " (" + a.peer + ")";
    if (!decode(a.first.body, x)) return who + " sent a malformed registration";
    who = "rank " + std::to_string(rank) + " (" + x.host + ", pid " + std::to_string(x.pid) + ")";
    if (h.world != static_cast<uint32_t>(c_.world))
        return who + " has world size " + std::to_string(h.world) + " but rank 0 has " + std::to_string(c_.world) +
               ": the ranks disagree on WORLD_SIZE";
    if (h.step != c_.step_key)
        return who + " is in step '" + printable(h.step) + "' but rank 0 in step '" + printable(c_.step_key) +
               "': two steps share one DIST_BIND_SECRET and MASTER_PORT";
    if (rank >= h.world)
        return who + " claims rank " + std::to_string(rank) + ", but the ranks other than rank 0 are 1.." +
               std::to_string(c_.world - 1);
    if (have[rank] && !(reg[rank].listener == x.listener && reg[rank].pid == x.pid && reg[rank].host == x.host))
        return "rank " + std::to_string(rank) + " registered twice: from " + reg[rank].host + " and from " + x.host +
               ": two processes have the same RANK";
    return "";
}

void TcpExchange::setup_root(const Deadline &d) {
    need_master();
    // Only on the address the other ranks are told to use.
    Addr at = resolve_master(d);
    Socket lis = listen_as_root(at);

    std::vector<Member> members(c_.world);
    std::vector<Register> reg(c_.world);
    std::vector<bool> have(c_.world, false);
    have[0] = true;
    int count = 1;
    debugf("tcp: rank 0 listening on %s for %d ranks%s", at.str().c_str(), c_.world - 1,
           cred_.key ? "" : " WITHOUT authentication (DIST_BIND_TCP_INSECURE=1)");
    // Before the first Hello is served (the first proof would make it).
    if (cred_.key) cred_.key->prepare();
    Door door(
        std::move(lis), cred_, [](uint32_t r) { return r != 0; }, {Msg::Register}, kMaxReply);
    if (cred_.key) door.greet(frame(Msg::Welcome, 0, 0, encode(Welcome{tree_.k})));
    while (count < c_.world) {
        std::optional<Admitted> a = door.next(d);
        if (!a) {
            const std::string msg = no_shows(have, door.dropped());
            abort_registered(members, have, DISTBIND_ERR_TIMEOUT, msg);
            fail(DISTBIND_ERR_TIMEOUT, msg);
        }
        // From here on the caller knows the secret: a rank of this step,
        // whose mistakes may fail the set-up.  One of another release
        // fails it at once (it fails too); the ranks still coming get a
        // second to hear why.
        if (!a->other.empty()) {
            const std::string msg = "set-up failed: " + releases_met(0, a->other, "a rank connecting from " + a->peer);
            abort_registered(members, have, DISTBIND_ERR_PEER, msg);
            turn_away(door, have, sooner(d, 1.0), DISTBIND_ERR_PEER, msg);
            fail(DISTBIND_ERR_PEER, msg);
        }
        Register x;
        const uint32_t rank = a->hello.client;
        std::string bad = refusal(*a, x, have, reg);
        if (!bad.empty()) {
            bad = "set-up failed: " + bad;
            answer(*a, Msg::Reject, Verdict{DISTBIND_ERR_PEER, bad}, sooner(d, 1.0));
            if (rank < have.size()) have[rank] = true;  // told
            abort_registered(members, have, DISTBIND_ERR_PEER, bad);
            turn_away(door, have, d, DISTBIND_ERR_PEER, bad);
            fail(DISTBIND_ERR_PEER, bad);
        }
        // The same rank again (its first answer was lost): welcomed again.
        if (!have[rank]) count++;
        members[rank] = Member{static_cast<int>(rank), x.listener, x.nonce};
        reg[rank] = x;
        have[rank] = true;
        answer(*a, Msg::Welcome, Verdict{}, sooner(d, 1.0));
    }
    debugf("tcp: all %d ranks registered; %ld connection(s) that did not prove themselves were dropped", c_.world,
           door.dropped());
    std::vector<Member> all(members.begin() + 1, members.end());
    try {
        // The last rank may have registered just before d: connecting to
        // the children (who wait d's length plus the grace for it) gets
        // the grace of its own.
        connect_children(all, Deadline::in(grace_));
    } catch (const Failure &f) {
        abort_registered(members, have, f.status, f.what());
        throw;
    }
}

std::string TcpExchange::host_name() {
    char buf[256] = "?";
    gethostname(buf, sizeof buf - 1);
    return buf;
}

Socket TcpExchange::child_listener(const Addr &root, const std::string &where) {
    // Listen on the address this node uses to reach rank 0: the one the
    // parent can reach it on.
    Addr me;
    int rc = route_from(root, me.ip);
    if (rc != 0) fail(DISTBIND_ERR_SYSTEM, "no route to " + where + ": " + errno_str(-rc));
    int err;
    Socket lis = listen_on(me, err);
    if (!lis) fail(DISTBIND_ERR_SYSTEM, "cannot open a listening socket on " + me.str() + ": " + errno_str(err));
    return lis;
}

void TcpExchange::register_with_root(const Addr &root, Register &reg, const std::string &where, const Deadline &d,
                                     const std::function<void()> &prepare) {
    std::vector<Dial> ds(1);
    ds[0].rank = 0;
    ds[0].addr = root;
    ds[0].await_reply = true;
    auto fill = [&] { ds[0].first = frame(Msg::Register, 0, 0, encode(reg)); };
    if (prepare && cred_.key) {
        // The Hello goes first; what rank 0 will want behind this rank's
        // proof is made while it travels, and so is the key's state, which
        // the proof over rank 0's challenge needs.
        dial(ds, cred_, d, true, [&] {
            prepare();
            cred_.key->prepare();
            fill();
        });
    } else {
        if (prepare) prepare();
        fill();
        dial(ds, cred_, d, true);
    }
    if (!ds[0].done && !ds[0].other.empty()) fail(DISTBIND_ERR_PEER, releases_met(c_.rank, ds[0].other, where));
    if (!ds[0].done) {
        // Something answered there, but not as this step's rank 0 would.
        bool stranger = !ds[0].answered.empty();
        fail(DISTBIND_ERR_TIMEOUT,
             "could not register with " + where + " within " + seconds_text(c_.timeout_s) + " (" +
                 (stranger ? ds[0].answered : ds[0].why) + "): " +
                 (stranger ? "the process listening on port " + std::to_string(c_.master_port) +
                                 " did not authenticate as this step's rank 0 (another program, or another step, holds "
                                 "MASTER_PORT)"
                           : "rank 0 is not running, has failed, or listens elsewhere"));
    }
    tree_.k = take_answer(ds[0].reply.type, ds[0].reply.body, where).fanout;
    trips_registering_ = ds[0].trips;
    // With a secret that Welcome was rank 0's greeting; its answer to the
    // registration follows the proof, and is left unread for now.
    if (cred_.key) {
        registration_ = std::move(ds[0].sock);
        answer_in_.reset();
        answer_in_.start(kMaxReply, false);
    }
}

bool TcpExchange::registration_dropped(const std::string &where) {
    int got = answer_in_.pump(registration_.fd());
    if (got == 0) return false;  // not yet: rank 0 has not read the proof
    if (got < 0) {
        registration_.close();
        return true;
    }
    registration_.close();
    take_answer(answer_in_.header().type, answer_in_.body(), where);
    return false;
}

Welcome TcpExchange::take_answer(Msg type, const std::vector<uint8_t> &body, const std::string &where) const {
    // Without a secret rank 0 of another release answers a registration so.
    Mismatch m;
    if (type == Msg::Mismatch && decode(body, m))
        fail(DISTBIND_ERR_PEER, releases_met(c_.rank, release_text(m.release), where));
    Verdict v;
    if (type == Msg::Reject) {
        if (!decode(body, v)) v = Verdict{DISTBIND_ERR_PEER, where + " refused this rank, with a malformed reason"};
        fail(v.status, v.text);
    }
    Welcome w;
    if (type != Msg::Welcome || !decode(body, w)) fail(DISTBIND_ERR_PEER, where + " sent a malformed answer");
    return w;
}

std::vector<Member> TcpExchange::await_subtree(Socket lis, const Deadline &dt, const std::string &where,
                                               const std::function<void()> &register_again) {
    const int parent = parent_.rank;
    Door door(
        std::move(lis), cred_, [parent](uint32_t r) { return r == static_cast<uint32_t>(parent) || r == 0; },
        {Msg::Tree, Msg::Abort}, std::max(kMaxReply, max_tree_body(c_.world)));
    door.announce(&announced_);
    // Rank 0's answer to the registration is read only while the tree is
    // slow to come: a set-up that finishes sooner never waits for it
    // (waiting for it took every rank one more turn on the CPU, and the
    // set-up of 256 ranks on two cores 1.05 to 1.23 times as long).
    const double look = std::min(1.0, c_.timeout_s / 4);
    std::optional<Admitted> a;
    while (!(a = door.next(registration_ ? sooner(dt, look) : dt)) && !dt.passed()) {
        if (registration_ && registration_dropped(where)) {
            debugf(
                "tcp: rank 0 closed this rank's registration unanswered (it dropped it after its challenge); "
                "registering again");
            register_again();
        }
    }
    if (!a) {
        // Taken in: rank 0's Welcome was read (or came without a secret).
        bool taken = !registration_ || (!registration_dropped(where) && !registration_);
        if (!taken)
            fail(DISTBIND_ERR_TIMEOUT, "rank 0 at " + master() + " did not take this rank's registration in within " +
                                           seconds_text(c_.timeout_s) + ": it is overloaded, or it failed");
        fail(DISTBIND_ERR_TIMEOUT,
             "rank 0 at " + master() + " took this rank in but did not finish setting up the step within " +
                 seconds_text(c_.timeout_s) + ": other ranks did not arrive or rank 0 failed (its error names them)");
    }
    registration_.close();
    int from = static_cast<int>(a->hello.client);
    // No link is up yet: the abort fails this rank only.
    if (a->first.type == Msg::Abort) on_abort(a->first, from);
    Subtree t;
    std::vector<int> want = tree_.preorder(c_.rank);
    bool ok = from == parent && a->hello.world == static_cast<uint32_t>(c_.world) &&
              decode(a->first.body, c_.world, t) && t.fanout == tree_.k && t.sub.size() + 1 == want.size();
    for (size_t i = 0; ok && i < t.sub.size(); i++)
        ok = t.sub[i].rank != c_.rank && tree_.below(t.sub[i].rank, c_.rank);
    if (!ok) fail(DISTBIND_ERR_PEER, "rank " + std::to_string(from) + " sent this rank a malformed tree");
    // This rank's proof: the parent waits for it before it counts the link as up.
    if (!a->ack.empty()) {
        IoResult r = send_all(a->sock.fd(), a->ack, sooner(dt, 1.0));
        if (!r.ok())
            fail(DISTBIND_ERR_PEER, "rank " + std::to_string(from) + " closed its connection during the set-up");
    }
    parent_.link = Link(std::move(a->sock), &open_, &peak_);
    return std::move(t.sub);
}

void TcpExchange::setup_child(const Deadline &d) {
    need_master();
    Addr root = resolve_master(d);
    std::string where = "rank 0 at " + master() + " (MASTER_ADDR:MASTER_PORT)";
    Socket lis;
    Register reg;
    // This rank's listener and its registration: with a secret, made while
    // the Hello travels to rank 0 (the registration follows the proof over
    // rank 0's challenge); without, before (it goes with the Hello).
    auto prepare = [&] {
        lis = child_listener(root, where);
        reg.listener = local_addr(lis.fd());
        reg.host = host_name();
        reg.pid = static_cast<uint32_t>(getpid());
        // Whoever connects here later proves itself over this (handshake.hh).
        if (cred_.key) announced_ = nonces_.next();
        reg.nonce = announced_;
    };
    register_with_root(root, reg, where, d, prepare);
    parent_.rank = tree_.parent(c_.rank);

    // Wait for the parent to hand over this rank's subtree, or for rank 0
    // to say the set-up failed.
    Deadline dt = Deadline::in(d.s_left() + grace_);
    std::vector<Member> sub = await_subtree(std::move(lis), dt, where, [&] {
        if (d.passed())
            fail(DISTBIND_ERR_TIMEOUT, "rank 0 at " + master() + " did not take this rank's registration in within " +
                                           seconds_text(c_.timeout_s) +
                                           ": it dropped it unanswered (overloaded), or failed");
        register_with_root(root, reg, where, d, nullptr);
    });
    connect_children(sub, dt);
}

void TcpExchange::connect_children(const std::vector<Member> &sub, const Deadline &d) {
    std::vector<Dial> ds;
    for (int ch : tree_.children(c_.rank)) {
        Dial x;
        x.rank = ch;
        Subtree t;
        t.fanout = tree_.k;
        const Member *self = nullptr;
        for (const Member &m : sub) {
            if (m.rank == ch)
                self = &m;
            else if (tree_.below(m.rank, ch))
                t.sub.push_back(m);
        }
        if (!self) spread(DISTBIND_ERR_INTERNAL, "set-up failed: no address for rank " + std::to_string(ch));
        x.addr = self->addr;
        x.announced = cred_.key ? &self->nonce : nullptr;
        x.first = frame(Msg::Tree, 0, 0, encode(t));
        ds.push_back(std::move(x));
    }
    dial(ds, cred_, d, false);
    const Dial *bad = nullptr;
    for (Dial &x : ds) {
        if (!x.done) {
            if (!bad) bad = &x;
            continue;
        }
        trips_to_children_ = std::max(trips_to_children_, x.trips);
        Peer p;
        p.rank = x.rank;
        p.link = Link(std::move(x.sock), &open_, &peak_);
        children_.push_back(std::move(p));
    }
    if (bad)
        spread(DISTBIND_ERR_PEER, "set-up failed: rank " + std::to_string(bad->rank) +
                                      " registered but cannot be reached at " + bad->addr.str() + " (" + bad->why +
                                      "): it exited or crashed (seen by rank " + std::to_string(c_.rank) + ")");
}

}  // namespace db::rt::tcp
