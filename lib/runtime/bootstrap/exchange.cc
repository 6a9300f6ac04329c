#include "bootstrap/exchange.hh"

namespace db::rt {

void Broken::check() const {
    if (!why_.empty()) rt::fail(DISTBIND_ERR_STATE, "the exchange failed earlier: " + why_);
}

void Broken::fail(distbind_status st, const std::string &msg) {
    why_ = msg;
    rt::fail(st, msg);
}

std::string collective_name(const char *kind, uint32_t seq) { return std::string(kind) + " #" + std::to_string(seq); }

}  // namespace db::rt
