// What every rank of a GPU step agrees on: a status per rank, and only when
// one failed, that rank's details, so every rank throws the same Failure.
#include "gpu/agree.hh"

#include <cstring>

#include "text.hh"

namespace db::rt::gpu {

Detail make_detail(const std::string &host, const std::string &bus, const std::string &uuid, const std::string &msg) {
    Detail d{};
    db::copy_out(host, d.host, sizeof d.host);
    db::copy_out(bus, d.bus, sizeof d.bus);
    db::copy_out(uuid, d.uuid, sizeof d.uuid);
    db::copy_out(msg, d.msg, sizeof d.msg);
    return d;
}

namespace {

std::string field(const char *p, size_t n, const char *name, int rank) {
    const void *end = std::memchr(p, '\0', n);
    if (!end)
        fail(DISTBIND_ERR_PEER, "rank " + std::to_string(rank) + " sent a malformed message (its " + name +
                                    " has no end within " + std::to_string(n) +
                                    " bytes): the ranks run different libdistbind builds, or its memory is corrupt");
    return std::string(p, static_cast<const char *>(end));
}

}  // namespace

DetailText read_detail(const Detail &d, int rank) {
    return {field(d.host, sizeof d.host, "host name", rank), field(d.bus, sizeof d.bus, "bus id", rank),
            field(d.uuid, sizeof d.uuid, "GPU UUID", rank), field(d.msg, sizeof d.msg, "message", rank)};
}

distbind_status peer_status(int32_t s, int rank) {
    if (s < DISTBIND_OK || s > DISTBIND_ERR_INTERNAL)
        fail(DISTBIND_ERR_PEER, "rank " + std::to_string(rank) + " sent status " + std::to_string(s) +
                                    ", which is not a distbind_status: the ranks run different libdistbind builds, "
                                    "or its memory is corrupt");
    return static_cast<distbind_status>(s);
}

std::pair<distbind_status, std::string> first_failure(Exchange &ex, const std::vector<distbind_status> &all,
                                                      const Detail &mine, const std::string &what,
                                                      const std::vector<bool> &prefer) {
    size_t bad = 0, first = all.size();
    auto preferred = [&](size_t r) { return r < prefer.size() && prefer[r]; };
    for (size_t r = 0; r < all.size(); r++)
        if (all[r] != DISTBIND_OK) {
            bad++;
            if (first == all.size() || (preferred(r) && !preferred(first))) first = r;
        }
    if (!bad) return {DISTBIND_OK, ""};
    Detail d = mine;
    ex.broadcast(&d, sizeof d, static_cast<int>(first));
    DetailText t = read_detail(d, static_cast<int>(first));
    std::string more = bad > 1 ? " (and " + std::to_string(bad - 1) + " more rank" + (bad > 2 ? "s" : "") + ")" : "";
    return {all[first], what + "rank " + std::to_string(first) + " on " + t.host + ": " + t.msg + more};
}

void fail_with_first(Exchange &ex, const std::vector<distbind_status> &all, const Detail &mine, const std::string &what,
                     const std::vector<bool> &prefer) {
    auto [st, msg] = first_failure(ex, all, mine, what, prefer);
    if (st != DISTBIND_OK) fail(st, msg);
}

}  // namespace db::rt::gpu
