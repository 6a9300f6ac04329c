// DIST_BIND_DEBUG's lines, on stderr, for the handle the calling thread is
// in (rt.hh: DebugScope).
#include <cstdarg>
#include <cstdio>

#include "core/rt.hh"

namespace db::rt {

namespace {
thread_local const DebugCtx *t_debug = nullptr;
}  // namespace

DebugScope::DebugScope(const DebugCtx &c) noexcept : prev_(t_debug) { t_debug = &c; }
DebugScope::~DebugScope() { t_debug = prev_; }

void debugf(const char *fmt, ...) {
    const DebugCtx *c = t_debug;
    if (!c || !c->on) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (c->rank >= 0)
        std::fprintf(stderr, "dist-bind: rank %d: %s\n", c->rank, buf);
    else
        std::fprintf(stderr, "dist-bind: %s\n", buf);
}

}  // namespace db::rt
