// The one way C entry points of the C++ code stop exceptions: run `f`,
// return 0, or -1 with the message copied into the caller's buffer.
#pragma once

#include <new>

#include "text.hh"

namespace db {

template <typename F>
int guarded(char *err, size_t errlen, F &&f) noexcept {
    try {
        f();
        return 0;
    } catch (const Error &e) {
        copy_out(e.what(), err, errlen);
    } catch (const std::bad_alloc &) {
        copy_out("out of memory", err, errlen);
    } catch (const std::exception &e) {
        // No allocation here: this may be the aftermath of running out.
        static const char kPrefix[] = "internal error: ";
        copy_out(kPrefix, err, errlen);
        if (errlen > sizeof kPrefix) copy_out(e.what(), err + sizeof kPrefix - 1, errlen - (sizeof kPrefix - 1));
    } catch (...) {
        copy_out("internal error", err, errlen);
    }
    return -1;
}

}  // namespace db
