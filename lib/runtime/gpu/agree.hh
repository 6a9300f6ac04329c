// The cross-rank agreement of the GPU steps (agree.cc): every rank says
// whether it can go on, and the first failure travels with its details,
// checked, so that every rank fails with the same message.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/exchange.hh"

namespace db::rt::gpu {

// What a failing rank tells the others, fixed size so it can travel as it
// is; every string from a peer is checked for its terminator first.
struct Detail {
    char host[64];
    char bus[32];
    char uuid[48];
    char msg[400];
};
Detail make_detail(const std::string &host, const std::string &bus, const std::string &uuid, const std::string &msg);
// A peer's Detail, decoded; throws Failure(PEER) naming `rank` when a
// field has no terminator.
struct DetailText {
    std::string host, bus, uuid, msg;
};
DetailText read_detail(const Detail &d, int rank);
// A status a peer sent; throws Failure(PEER) naming `rank` when it is not
// a distbind_status.
distbind_status peer_status(int32_t s, int rank);

// After an allgather of every rank's status: when some rank failed, the
// first one's Detail is broadcast from it and every rank throws the same
// Failure ("<what> on rank R (host): msg (and N more ranks)").  `prefer`
// (may be empty) marks ranks whose failure is their own rather than a
// consequence of another's: the first of those is reported when there is
// one.  Returns when every status is OK.
void fail_with_first(Exchange &ex, const std::vector<distbind_status> &all, const Detail &mine, const std::string &what,
                     const std::vector<bool> &prefer = {});
// The same, returning the failure (status OK when there is none).
std::pair<distbind_status, std::string> first_failure(Exchange &ex, const std::vector<distbind_status> &all,
                                                      const Detail &mine, const std::string &what,
                                                      const std::vector<bool> &prefer);

}  // namespace db::rt::gpu
