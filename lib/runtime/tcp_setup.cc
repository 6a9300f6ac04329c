// The TCP bootstrap's set-up: registration with rank 0, then the tree
// built top-down (see tcp.hh).
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <thread>

#include "bounded.hh"
#include "tcp.hh"

namespace db::rt::tcp {

void TcpExchange::abort_registered(const std::vector<Addr> &addr, const std::vector<bool> &have, distbind_status st,
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

void TcpExchange::turn_away(const Socket &lis, std::vector<bool> told, const Deadline &d, const std::string &why) {
    size_t left = static_cast<size_t>(std::count(told.begin(), told.end(), false));
    Writer w;
    w.u16(DISTBIND_ERR_PEER).str(why);
    while (left > 0 && wait_readable({lis.fd()}, d) == 0) {
        int err;
        Socket s = accept_from(lis, err);
        Message m;
        if (!s || !recv_msg(s.fd(), m, sooner(d, kHelloWait), kMaxHello).ok() || m.type != Msg::Hello) continue;
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

void TcpExchange::setup_root(const Deadline &d) {
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
        // Anyone can connect to MASTER_PORT: a registration is read only
        // up to the size a real one has, so a stray header cannot make
        // rank 0 allocate what it claims.
        if (!recv_msg(l.fd(), m, sooner(d, kHelloWait), kMaxHello).ok() || m.type != Msg::Hello) continue;
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
        // The last rank may have registered just before d: connecting to
        // the children (who wait d's length plus the grace for it) gets
        // the grace of its own.
        connect_children(all, Deadline::in(grace_));
    } catch (const Failure &f) {
        abort_registered(addr, have, f.status, f.what());
        throw;
    }
}

std::string TcpExchange::host_name() {
    char buf[256] = "?";
    gethostname(buf, sizeof buf - 1);
    return buf;
}

void TcpExchange::setup_child(const Deadline &d) {
    if (c_.master_addr.empty())
        fail(DISTBIND_ERR_ENV, "MASTER_ADDR is not set (the TCP bootstrap connects to rank 0 at MASTER_ADDR:MASTER_PORT; "
                               "srun --dist-bind sets both)");
    if (!c_.master_port)
        fail(DISTBIND_ERR_ENV, "MASTER_PORT is not set (the TCP bootstrap connects to rank 0 at MASTER_ADDR:MASTER_PORT; "
                               "srun --dist-bind sets both)");
    Addr root;
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
                                           secs(c_.timeout_s) + ": the name service does not answer");
        if (got->rc == 0) {
            root = got->a;
            break;
        }
        if (got->rc != EAI_AGAIN || d.passed())
            fail(DISTBIND_ERR_ENV, "MASTER_ADDR=\"" + c_.master_addr + "\" does not resolve to an IPv4 address: " +
                                       gai_strerror(got->rc));
        std::this_thread::sleep_for(std::min(std::chrono::milliseconds(100), std::chrono::milliseconds(d.ms_left())));
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
    IoResult r = recv_msg(reg.fd(), m, d, kMaxReply);
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
        // A tree lists at most every other rank (10 bytes each); until its
        // session id is checked, the sender is anyone.
        size_t most = std::max(kMaxReply, 16 + 10 * static_cast<size_t>(c_.world));
        if (!recv_msg(in.fd(), t, sooner(dt, kHelloWait), most).ok()) continue;
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

void TcpExchange::connect_children(const std::vector<std::pair<int, Addr>> &sub, const Deadline &d) {
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
        if (!r.ok()) unsent("set-up", ch, r);
    }
}

}  // namespace db::rt::tcp
