// operator new that fails on request, for test_plan_guards.c: linked into
// that test alone.  db_test_new_countdown > 0 counts allocations down and
// the one that brings it to 0 throws std::bad_alloc (once; later ones
// succeed); < 0 never fails.  db_test_new_failed says whether it did.
#include <cstdlib>
#include <new>

extern "C" {
long db_test_new_countdown = -1;
int db_test_new_failed = 0;
}

namespace {
void *allocate(std::size_t n) {
    if (db_test_new_countdown > 0 && --db_test_new_countdown == 0) {
        db_test_new_failed = 1;
        throw std::bad_alloc();
    }
    if (void *p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
}  // namespace

void *operator new(std::size_t n) { return allocate(n); }
void *operator new[](std::size_t n) { return allocate(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
