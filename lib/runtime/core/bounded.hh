// Calls that have no timeout of their own (PMI2, PMIx_Init, getaddrinfo)
// run on a helper thread that the caller waits for until a deadline.
#pragma once

#include <future>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "core/rt.hh"

namespace db::rt {

// Run `work` on a helper thread and wait for it until `d`.  Returns its
// result when it finished in time, and rethrows here what it threw (an
// exception must never end the process on the helper thread); nullopt when
// it did not finish: the thread then runs on, detached, so `work` must own
// everything it uses (capture by value or by shared_ptr).
template <typename R, typename F>
std::optional<R> run_bounded(F work, const Deadline &d) {
    std::packaged_task<R()> task(std::move(work));
    std::future<R> done = task.get_future();
    try {
        std::thread(std::move(task)).detach();
    } catch (const std::system_error &e) {
        fail(DISTBIND_ERR_SYSTEM, std::string("cannot start a helper thread: ") + e.what());
    }
    if (done.wait_until(d.at) != std::future_status::ready) return std::nullopt;
    return done.get();
}

}  // namespace db::rt
