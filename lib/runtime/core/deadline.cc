#include <chrono>

#include "core/rt.hh"

namespace db::rt {

int Deadline::ms_left() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - Clock::now()).count();
    if (left <= 0) return 0;
    return left > 1000000000 ? 1000000000 : static_cast<int>(left) + 1;
}

double Deadline::s_left() const {
    double s = std::chrono::duration<double>(at - Clock::now()).count();
    return s > 0 ? s : 0;
}

}  // namespace db::rt
