# tests/lab (included by the top Makefile): the lab's helper SPANK plugin
# (t_releases), built as the test would build it, against this release's
# spank.h: the cgroup v2 guest (tests/lab/kit/guest.sh) has no compiler, and
# `make check` builds $(B) for every release (release.sh build R lab-bins).
LAB_TRACE := $(B)/lab/spank_trace.so
$(LAB_TRACE): tests/lab/kit/helpers/spank_trace.c
	@mkdir -p $(@D)
	$(CC) -shared -fPIC -Wall -Wextra -Werror -o $@ $<
LAB_BINS += $(LAB_TRACE)
