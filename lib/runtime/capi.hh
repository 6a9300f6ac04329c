// What the files of the C face share (capi.cc defines it).
#pragma once

#include <functional>

#include "distbind.h"

namespace db::rt {

// A C entry point without a handle: runs f and returns its status; a
// failure's message goes where distbind_last_error(NULL) finds it.
distbind_status unbound_call(const std::function<void()> &f) noexcept;

}  // namespace db::rt
