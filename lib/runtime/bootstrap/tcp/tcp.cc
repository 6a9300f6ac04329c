// The TCP bootstrap's collectives (the tree itself is described in tcp.hh).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

#include "bootstrap/tcp/tcp.hh"

namespace db::rt::tcp {

// The largest message: a whole collective's payload plus its framing
// (length, count or root: 8 bytes at most).
static_assert(DISTBIND_MAX_EXCHANGE_BYTES + 8 <= kMaxBody, "a collective at the limit must fit one message");

TcpExchange::TcpExchange(const ExchangeConfig &c) : c_(c) {
    tree_.n = c.world;
    tree_.k = c.fanout;
    Deadline d = Deadline::in(c.timeout_s);
    grace_ = 1.0 + c.timeout_s / 10;
    if (c.world == 1) return;
    if (!c_.tcp_insecure && !c_.secret.set())
        fail(DISTBIND_ERR_ENV,
             "DIST_BIND_SECRET is not set: the TCP bootstrap lets only ranks that know the step's secret join, and "
             "srun --dist-bind gives every task one; start the program with srun --dist-bind (or over Slurm's PMIx, "
             "srun --mpi=pmix), or give every rank the same DIST_BIND_SECRET (64 hex digits, e.g. from "
             "`openssl rand -hex 32`), or set DIST_BIND_TCP_INSECURE=1 on every rank to let anyone who can reach "
             "MASTER_PORT join the step");
    if (!c_.tcp_insecure) cred_.key = &key_.emplace(c_.secret);
    cred_.nonces = &nonces_;
    cred_.rank = c.rank;
    cred_.world = c.world;
    cred_.step = c.step_key;
    // A connection's handshake takes a round trip; this is for a loaded node.
    cred_.budget_s = std::min(30.0, std::max(2.0, c.timeout_s / 10));
    if (c_.tcp_insecure) {
        debugf("tcp: DIST_BIND_TCP_INSECURE=1: ranks do not authenticate each other");
        if (c.rank == 0)
            std::fprintf(stderr,
                         "dist-bind: rank 0: warning: DIST_BIND_TCP_INSECURE=1: the TCP bootstrap does not "
                         "authenticate its peers; anyone who can reach %s:%u can join or break this step\n",
                         c.master_addr.c_str(), c.master_port);
    }
    if (c.rank == 0)
        setup_root(d);
    else
        setup_child(d);
    barrier_named("the set-up check");
    // What tests/exchange/t_tcp_trips.py counts.
    debugf("tcp: set-up done: %d round trip(s) to register with rank 0, %d to link %zu child(ren)", trips_registering_,
           trips_to_children_, children_.size());
}

void TcpExchange::broadcast(void *buf, size_t len, int root) {
    Op op = begin(kBroadcast);
    if (c_.world == 1) return;
    std::string what = label(op, nullptr);
    auto t0 = Clock::now();
    std::vector<uint8_t> data;
    if (root != 0) {
        // The data first climbs from `root` to rank 0, as a gather in
        // which only root's branch carries bytes.
        bool mine = c_.rank == root;
        std::vector<uint8_t> up = gather(
            op, what, t0, mine ? buf : nullptr, mine ? len : 0, len,
            [&](int child) { return tree_.below(root, child); }, false);
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
        spread(
            DISTBIND_ERR_PEER,
            what + " failed: " + size_mismatch(0, their_len, c_.rank, len, true, static_cast<int>(their_root), root));
    if (c_.rank != root && len) std::memcpy(buf, r.bytes(len), len);
}

void TcpExchange::allgather(const void *send, size_t len, void *recv) {
    Op op = begin(kAllgather);
    if (c_.world == 1) {
        if (len) std::memmove(recv, send, len);
        return;
    }
    std::string what = label(op, nullptr);
    auto t0 = Clock::now();
    std::vector<uint8_t> pre = gather(
        op, what, t0, send, len, len, [](int) { return true; }, true);
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
        spread(DISTBIND_ERR_PEER, what + " failed: " + size_mismatch(0, their_len, c_.rank, len));
    if (len) std::memcpy(recv, r.bytes(r.left()), static_cast<size_t>(c_.world) * len);
}

TcpExchange::Op TcpExchange::begin(uint16_t kind) {
    broken_.check();
    Op op{kind, ++seq_};
    // A neighbour that failed while this rank was away left word (or
    // hung up): report that, not whatever this collective would trip on.
    std::string what = label(op, nullptr);
    check_pending(parent_, what);
    for (Peer &ch : children_) check_pending(ch, what);
    return op;
}

void TcpExchange::check_pending(Peer &p, const std::string &what) {
    if (!p.link) return;
    int t = peek_type(p.link.fd());
    if (t == static_cast<int>(Msg::Abort)) {
        Message m;
        if (recv_msg(p.link.fd(), m, Deadline::in(1.0)).ok()) on_abort(m, p.rank);
    }
    if (t < 0) lost(what, p.rank, {Io::Eof, 0});
}

std::string TcpExchange::label(Op op, const char *name) const {
    if (name) return name;
    return collective_name(op_name(op.first), op.second);
}

void TcpExchange::barrier_named(const char *name) {
    Op op = begin(kBarrier);
    if (c_.world == 1) return;
    std::string what = label(op, name);
    auto t0 = Clock::now();
    gather(
        op, what, t0, nullptr, 0, 0, [](int) { return false; }, false);
    down(op, what, t0, {});
}

double TcpExchange::margin() const {
    int height = tree_.depth(c_.world - 1);
    return std::min(0.5, c_.timeout_s / (4.0 * (height + 1)));
}

// ---- failing ----------------------------------------------------------

void TcpExchange::spread(distbind_status st, const std::string &msg, int except) {
    std::vector<uint8_t> body = encode(Verdict{st, msg});
    Deadline d = Deadline::in(1.0);
    auto tell = [&](Peer &p) {
        if (p.link && p.rank != except) send_msg(p.link.fd(), Msg::Abort, 0, seq_, body.data(), body.size(), d);
    };
    tell(parent_);
    for (Peer &ch : children_) tell(ch);
    broken_.fail(st, msg);
}

void TcpExchange::on_abort(const Message &m, int from) {
    Verdict v;
    if (!decode(m.body, v))
        v = Verdict{DISTBIND_ERR_PEER, "rank " + std::to_string(from) + " failed and sent an unreadable message"};
    spread(v.status, v.text, from);
}

void TcpExchange::lost(const std::string &what, int who, const IoResult &r) {
    Peer *p = who == parent_.rank ? &parent_ : nullptr;
    for (Peer &ch : children_)
        if (ch.rank == who) p = &ch;
    if (p && p->link && peek_type(p->link.fd()) == static_cast<int>(Msg::Abort)) {
        Message m;
        if (recv_msg(p->link.fd(), m, Deadline::in(1.0)).ok()) on_abort(m, who);
    }
    std::string how = r.kind == Io::Garbage ? "sent something that is not a dist-bind message"
                      : r.kind == Io::Timeout
                          ? "stopped in the middle of a message"
                          : "closed its connection (" + r.str() + "): it exited, crashed or called distbind_destroy";
    spread(
        DISTBIND_ERR_PEER,
        what + " failed: rank " + std::to_string(who) + " " + how + " (seen by rank " + std::to_string(c_.rank) + ")",
        who);
}

void TcpExchange::unsent(const std::string &what, int who, const IoResult &r) {
    bool peer = r.kind != Io::Error || r.err == ETIMEDOUT || r.err == EHOSTUNREACH || r.err == ENETUNREACH ||
                r.err == ENOTCONN || r.err == ECONNABORTED || r.err == ENETDOWN;
    if (peer) lost(what, who, r);
    spread(DISTBIND_ERR_SYSTEM, what + " failed: rank " + std::to_string(c_.rank) + " could not send to rank " +
                                    std::to_string(who) + ": " + r.str());
}

void TcpExchange::mismatch(const std::string &what, int who, const Message &m) {
    std::string theirs = m.type == Msg::Up || m.type == Msg::Down
                             ? collective_name(op_name(m.op), m.seq)
                             : "message type " + std::to_string(static_cast<int>(m.type));
    spread(DISTBIND_ERR_PEER,
           what + " failed: rank " + std::to_string(who) + " sent " + theirs + " instead (seen by rank " +
               std::to_string(c_.rank) + "): the ranks called different collectives",
           who);
}

// ---- collectives ------------------------------------------------------

std::vector<uint8_t> TcpExchange::gather(Op op, const std::string &what, Clock::time_point t0, const void *mine,
                                         size_t n_mine, size_t len, const std::function<bool(int)> &carries,
                                         bool per_rank) {
    size_t nch = children_.size();
    std::vector<std::vector<uint8_t>> got(nch);
    std::vector<bool> done(nch, false);
    std::vector<int> missing, unreachable;
    size_t pending = nch;
    int depth = tree_.depth(c_.rank);
    auto wait_end = t0 + to_duration(c_.timeout_s - depth * margin());
    Deadline dch{wait_end};
    // A message that begins to arrive before dch has until dmsg to finish:
    // the collective's own bound, not a fresh timeout per message.
    Deadline dmsg = message_deadline(t0);
    while (pending) {
        std::vector<int> fds, who;
        if (parent_.link) fds.push_back(parent_.link.fd()), who.push_back(-1);
        for (size_t i = 0; i < nch; i++)
            if (!done[i]) fds.push_back(children_[i].link.fd()), who.push_back(static_cast<int>(i));
        int at = wait_readable(fds, dch);
        if (at < 0) break;
        Message m;
        if (who[at] < 0) {
            IoResult r = recv_msg(parent_.link.fd(), m, dmsg);
            if (!r.ok()) lost(what, parent_.rank, r);
            if (m.type == Msg::Abort) on_abort(m, parent_.rank);
            mismatch(what, parent_.rank, m);
        }
        size_t i = static_cast<size_t>(who[at]);
        int ch = children_[i].rank;
        IoResult r = recv_msg(children_[i].link.fd(), m, dmsg);
        if (!r.ok()) lost(what, ch, r);
        if (m.type == Msg::Abort) on_abort(m, ch);
        if (m.type == Msg::Missing) {
            take_missing(what, ch, m, missing, unreachable);
        } else if (m.type == Msg::Up && m.op == op.first && m.seq == op.second) {
            // What that branch must carry, so rank 0 never reads past it.
            uint64_t expected = !carries(ch) ? 0 : per_rank ? uint64_t{len} * tree_.size(ch) : len;
            got[i] = take_up(what, ch, m, len, expected);
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
    std::vector<uint8_t> up = encode_up(static_cast<uint32_t>(len), body);
    IoResult r = send_msg(parent_.link.fd(), Msg::Up, op.first, op.second, up.data(), up.size(), dmsg);
    if (!r.ok()) unsent(what, parent_.rank, r);
    return {};
}

void TcpExchange::take_missing(const std::string &what, int ch, const Message &m, std::vector<int> &missing,
                               std::vector<int> &unreachable) {
    // Only ranks below that child can be missing there.
    Missing ms;
    bool ok = decode(m.body, c_.world, ms);
    for (auto *list : {&ms.missing, &ms.unreachable})
        for (size_t k = 0; ok && k < list->size(); k++) ok = (*list)[k] != ch && tree_.below((*list)[k], ch);
    if (!ok) lost(what, ch, {Io::Garbage, 0});
    missing.insert(missing.end(), ms.missing.begin(), ms.missing.end());
    unreachable.insert(unreachable.end(), ms.unreachable.begin(), ms.unreachable.end());
}

std::vector<uint8_t> TcpExchange::take_up(const std::string &what, int ch, const Message &m, size_t len,
                                          uint64_t expected) {
    Up u;
    if (!decode(m.body, u)) lost(what, ch, {Io::Garbage, 0});
    if (u.len != len) spread(DISTBIND_ERR_PEER, what + " failed: " + size_mismatch(ch, u.len, c_.rank, len));
    std::string bad = check_up(u, expected);
    if (!bad.empty())
        spread(DISTBIND_ERR_PEER, what + " failed: rank " + std::to_string(ch) + " " + bad + " (seen by rank " +
                                      std::to_string(c_.rank) + ")");
    if (!u.n) return {};
    return std::vector<uint8_t>(u.data, u.data + u.n);
}

void TcpExchange::report_missing(const std::string &what, std::vector<int> missing, std::vector<int> unreachable) {
    std::sort(missing.begin(), missing.end());
    std::sort(unreachable.begin(), unreachable.end());
    std::string msg = what + " failed: " + ranks_text(missing) + " did not arrive within " + seconds_text(c_.timeout_s);
    if (!unreachable.empty()) msg += " (" + ranks_text(unreachable) + ", below them in the tree, could not report)";
    if (c_.rank == 0) spread(DISTBIND_ERR_TIMEOUT, msg + " (seen by rank 0)");
    // Tell the parent who is missing, then wait for rank 0's verdict so
    // every rank fails with the same message.
    std::vector<uint8_t> body = encode(Missing{missing, unreachable});
    Deadline d = Deadline::in(grace_ + margin());
    send_msg(parent_.link.fd(), Msg::Missing, 0, seq_, body.data(), body.size(), d);
    if (wait_readable({parent_.link.fd()}, d) == 0) {
        Message m;
        if (recv_msg(parent_.link.fd(), m, d).ok() && m.type == Msg::Abort) on_abort(m, parent_.rank);
    }
    spread(DISTBIND_ERR_TIMEOUT, msg + " (seen by rank " + std::to_string(c_.rank) + ")");
}

std::vector<uint8_t> TcpExchange::down(Op op, const std::string &what, Clock::time_point t0,
                                       const std::vector<uint8_t> &at_root) {
    std::vector<uint8_t> body;
    Deadline dmsg = message_deadline(t0);
    if (c_.rank == 0) {
        body = at_root;
    } else {
        for (;;) {
            std::vector<int> fds{parent_.link.fd()};
            for (Peer &ch : children_) fds.push_back(ch.link.fd());
            int at = wait_readable(fds, dmsg);
            if (at < 0)
                spread(DISTBIND_ERR_TIMEOUT, what + " failed: no answer from rank 0 (through rank " +
                                                 std::to_string(parent_.rank) + ") within " +
                                                 seconds_text(c_.timeout_s) +
                                                 ": rank 0, or a rank between, did not arrive (seen by rank " +
                                                 std::to_string(c_.rank) + ")");
            Peer &from = at == 0 ? parent_ : children_[static_cast<size_t>(at - 1)];
            Message m;
            IoResult r = recv_msg(from.link.fd(), m, dmsg);
            if (!r.ok()) lost(what, from.rank, r);
            if (m.type == Msg::Abort) on_abort(m, from.rank);
            if (at != 0 || m.type != Msg::Down || m.op != op.first || m.seq != op.second) mismatch(what, from.rank, m);
            body = std::move(m.body);
            break;
        }
    }
    for (Peer &ch : children_) {
        IoResult r = send_msg(ch.link.fd(), Msg::Down, op.first, op.second, body.data(), body.size(), dmsg);
        if (!r.ok()) unsent(what, ch.rank, r);
    }
    return body;
}

}  // namespace db::rt::tcp

namespace db::rt {

std::unique_ptr<Exchange> make_tcp(const ExchangeConfig &c) { return std::make_unique<tcp::TcpExchange>(c); }

}  // namespace db::rt
