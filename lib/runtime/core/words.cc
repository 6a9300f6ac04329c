// The words messages share: one phrasing for each thing many messages say.
#include <cstdint>
#include <cstdio>

#include "core/rt.hh"

namespace db::rt {

std::string rank_list(const std::vector<int> &ranks) {
    // Runs as "a-b"; at most this many items before "... (N in all)".
    constexpr size_t kShown = 16;
    std::string out;
    size_t items = 0;
    for (size_t i = 0; i < ranks.size();) {
        size_t j = i;
        // In 64 bits: the ranks may come from another rank's message.
        while (j + 1 < ranks.size() && int64_t{ranks[j + 1]} == int64_t{ranks[j]} + 1) j++;
        if (items == kShown) {
            out += ", ... (" + std::to_string(ranks.size()) + " ranks in all)";
            break;
        }
        if (!out.empty()) out += ", ";
        out += std::to_string(ranks[i]);
        if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
        items++;
        i = j + 1;
    }
    return out;
}

std::string ranks_text(const std::vector<int> &ranks) {
    return (ranks.size() > 1 ? "ranks " : "rank ") + rank_list(ranks);
}

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", s);
    return buf;
}

std::string size_mismatch(int a, uint64_t a_len, int b, uint64_t b_len, bool rooted, int a_root, int b_root) {
    auto root = [](int r) { return r >= 0 ? " with root " + std::to_string(r) : std::string(); };
    return "rank " + std::to_string(a) + " passed " + std::to_string(a_len) + " bytes" + root(a_root) + " but rank " +
           std::to_string(b) + " passed " + std::to_string(b_len) + " bytes" + root(b_root) +
           " (every rank must pass the same size" + (rooted ? " and root)" : ")");
}

}  // namespace db::rt
