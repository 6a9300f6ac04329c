// The words messages share: one phrasing for each thing many messages say.
#include <cstdint>

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

}  // namespace db::rt
