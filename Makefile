# dist-bind: SPANK plugin + runtime library.
#
#   make            build everything into build/
#   make check      every test (unit under ASan/UBSan, the lab, PyTorch), the
#                   lab and package tests also on Slurm 24.11 and 26.05
#                   (tests/lab/kit/release.sh)
#   make check-quick the same on this machine's Slurm only
#   make demo       the seed job on the lab, without and with --dist-bind
#   make bench      side-by-side speed figures
#   make fuzz       each libFuzzer harness for FUZZ_SECONDS (tests/fuzz)
#   make format-check  clang-format over the sources (also a test of make check);
#                   make format rewrites them
#   make install    PREFIX=/usr DESTDIR=...
#   make deps       install missing Debian packages (as root); make check and
#                   make demo run it first, nothing else does
#
# Each component has its build.mk (included below, an explicit list); this
# file holds the shared variables, the object rules and the driver targets.
#
# Versions: VERSION holds the one release number (0.2.0).  From it come the
# .deb and .rpm versions (debian/changelog's top entry must equal it:
# tests/repo/t_version.sh), distbind.pc, distbind_version(),
# DISTBIND_VERSION_MAJOR/MINOR/PATCH (the generated, installed
# distbind_version.h) and the line the plugin logs when slurmd loads it.
# DB_ABI below is libdistbind's binary interface: soname libdistbind.so.$(DB_ABI),
# Debian package libdistbind$(DB_ABI), symbol version DISTBIND_$(DB_ABI).0
# (lib/runtime/distbind.map; t_version.sh checks all three).  It moves only
# when a change breaks programs linked against the previous library.

DB_VERSION := $(shell cat VERSION)
DB_ABI     := 1
DB_VERSION_PARTS := $(subst ., ,$(DB_VERSION))

PREFIX     ?= /usr/local
DESTDIR    ?=
MULTIARCH  ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null)
LIBDIR     ?= $(PREFIX)/lib/$(MULTIARCH)
SLURM_PLUGINDIR ?= $(LIBDIR)/slurm-wlm
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/dist-bind
B          := build

CC         ?= gcc
CXX        ?= g++
HARDEN     := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIC
WARN       := -Wall -Wextra
OPT        ?= -O2 -g
# The glue keeps default visibility: the version script picks its exports.
CFLAGS_ALL  = $(OPT) $(WARN) $(HARDEN) $(CPPFLAGS) $(CFLAGS)
CXXFLAGS_ALL= -std=c++17 $(OPT) $(WARN) $(HARDEN) -fvisibility=hidden $(CPPFLAGS) $(CXXFLAGS)
LDHARDEN   := -Wl,-z,relro -Wl,-z,now -Wl,--as-needed

# The one set of sanitizer commands (ASan+UBSan) every test build uses.
SAN        := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SAN_CXX     = $(CXX) -std=c++17 -O1 -g $(WARN) $(SAN)
SAN_CC      = $(CC) -std=gnu11 -O1 -g $(WARN) $(SAN)
SAN_LD      = $(CXX) $(SAN)
TSAN       := -fsanitize=thread -fno-omit-frame-pointer
TSAN_CXX    = $(CXX) -std=c++17 -O1 -g $(WARN) $(TSAN)
TSAN_CC     = $(CC) -std=gnu11 -O1 -g $(WARN) $(TSAN)

CHECK_FLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS  = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)

# `make` alone builds everything: the first goal make sees is the default,
# and the version header's rule below would otherwise be it.
.DEFAULT_GOAL := all

# --- objects -----------------------------------------------------------------
# Every object mirrors its source's path under a folder for its kind:
#   $(B)/pic/     shipped (plugin, libdistbind, dist-bind-check)
#   $(B)/san/     ASan+UBSan, for the unit tests
#   $(B)/sanpic/  ASan+UBSan, PIC: the sanitized plugin of the lab
#   $(B)/tsan/    ThreadSanitizer
#   $(B)/sancov/  ASan+UBSan, each basic block counted (tests/unit/build.mk)
# A component sets FLAGS.<its folder> (include paths, defines) and may add
# SANFLAGS.<folder> for the test kinds only.  Every object depends on the
# headers its source includes, as the compiler found them: DEPFLAGS writes
# a .d file beside each object (-MMD; -MP: a header that is gone stops
# nothing), and the last lines of this file read them.  A program compiled
# and linked in one command writes $@.d (DEPFLAGS_ONE; one source only:
# with several, the file holds the last one's).  The version header is
# generated, so every object also waits for it.
DIRFLAGS    = $(FLAGS.$(<D))
SANDIRFLAGS = $(FLAGS.$(<D)) $(SANFLAGS.$(<D))
VERSION_H  := $(B)/include/distbind_version.h
DEPFLAGS    = -MMD -MP
DEPFLAGS_ONE = -MMD -MP -MF $@.d

$(B)/pic/%.o: %.cc $(VERSION_H)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_ALL) $(DIRFLAGS) $(DEPFLAGS) -c $< -o $@
$(B)/pic/%.o: %.c $(VERSION_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DIRFLAGS) $(DEPFLAGS) -c $< -o $@
$(B)/san/%.o: %.cc $(VERSION_H)
	@mkdir -p $(@D)
	$(SAN_CXX) $(SANDIRFLAGS) $(DEPFLAGS) -c $< -o $@
$(B)/san/%.o: %.c $(VERSION_H)
	@mkdir -p $(@D)
	$(SAN_CC) $(SANDIRFLAGS) $(DEPFLAGS) -c $< -o $@
$(B)/sanpic/%.o: %.cc $(VERSION_H)
	@mkdir -p $(@D)
	$(SAN_CXX) -fPIC -fvisibility=hidden $(SANDIRFLAGS) $(DEPFLAGS) -c $< -o $@
$(B)/sanpic/%.o: %.c $(VERSION_H)
	@mkdir -p $(@D)
	$(SAN_CC) -fPIC $(SANDIRFLAGS) $(DEPFLAGS) -c $< -o $@
$(B)/tsan/%.o: %.cc $(VERSION_H)
	@mkdir -p $(@D)
	$(TSAN_CXX) $(SANDIRFLAGS) $(DEPFLAGS) -c $< -o $@
$(B)/tsan/%.o: %.c $(VERSION_H)
	@mkdir -p $(@D)
	$(TSAN_CC) $(SANDIRFLAGS) $(DEPFLAGS) -c $< -o $@

# objs KIND, SOURCES: the objects of those sources in that kind's folder.
objs = $(patsubst %.c,$(B)/$(1)/%.o,$(patsubst %.cc,$(B)/$(1)/%.o,$(2)))

# The version macros, generated from VERSION (installed beside distbind.h).
$(VERSION_H): VERSION
	@mkdir -p $(@D)
	printf '%s\n' '/* Generated from VERSION by the Makefile: the version of this distbind.h. */' \
	    '#ifndef DISTBIND_VERSION_H' '#define DISTBIND_VERSION_H' \
	    '#define DISTBIND_VERSION_MAJOR $(word 1,$(DB_VERSION_PARTS))' \
	    '#define DISTBIND_VERSION_MINOR $(word 2,$(DB_VERSION_PARTS))' \
	    '#define DISTBIND_VERSION_PATCH $(word 3,$(DB_VERSION_PARTS))' \
	    '#define DISTBIND_VERSION_STRING "$(DB_VERSION)"' '#endif' >$@

# Components add to these from their own build.mk.
BUILD_TARGETS :=
TEST_BINS     :=
# What the lab tests need beyond build-all (also built for other releases).
LAB_BINS      :=
BENCH_BINS    :=
INSTALL_TARGETS :=

.PHONY: all check check-quick release-build demo bench install deps format-check format clean build-all
# Keep object files make would treat as intermediate.
.SECONDARY:
all: build-all

include lib/common/build.mk lib/plan/build.mk lib/topo/build.mk lib/runtime/build.mk \
        spank/build.mk tools/build.mk packaging/build.mk \
        tests/unit/build.mk tests/topology/build.mk tests/exchange/build.mk tests/gpu/build.mk tests/lab/build.mk tests/fuzz/build.mk tests/bench/build.mk

build-all: $(BUILD_TARGETS)

# --- driver targets -------------------------------------------------------------
deps:
	@packaging/deps.sh

# make check T="lab unit" runs only those levels (or tests whose name matches).
# The lab and package tests run again on every other Slurm release
# tests/lab/kit/release.sh knows (each in its own Debian root, made once and
# cached under build/roots/, built into build/slurm-RELEASE/);
# The cgroup v2 tests run in a guest per release (tests/lab/kit/guest.sh, 22.05,
# 24.11 and 26.05: DIST_BIND_GUEST_RELEASES); its files are made while the
# releases build.  check-quick leaves the other releases and the guests out;
# check-cgroup2 runs only the guests' tests.  make check boots the guests
# in the background from the start of the tests (one vCPU each, one after
# the other), beside the other tests: after them they would add about 25
# minutes (DIST_BIND_GUEST_BACKGROUND= for that).
check: deps release-build
	@$(MAKE) --no-print-directory build-all $(TEST_BINS) $(LAB_BINS)
	@DIST_BIND_GUEST_BACKGROUND=$${DIST_BIND_GUEST_BACKGROUND-1} tests/run.sh $(T)

check-quick: deps
	@$(MAKE) --no-print-directory build-all $(TEST_BINS) $(LAB_BINS)
	@DIST_BIND_LAB_RELEASES= DIST_BIND_GUEST_RELEASES= tests/run.sh $(T)

check-cgroup2: deps release-build
	@$(MAKE) --no-print-directory build-all $(TEST_BINS) $(LAB_BINS)
	@DIST_BIND_LAB_CONFIGS=cgroup2 tests/run.sh lab

# The guests' files (a Debian root each: minutes, cached under build/guest/)
# in the background while the releases build; where no guest can run, the
# tests say why.
release-build:
	@mkdir -p build; \
	(for r in $${DIST_BIND_GUEST_RELEASES-22.05 24.11 26.05}; do tests/lab/kit/guest.sh image $$r || true; done) \
	    >build/guest-images.log 2>&1 & gpid=$$!; \
	rc=0; \
	for r in $${DIST_BIND_LAB_RELEASES-$$(tests/lab/kit/release.sh list)}; do \
	    tests/lab/kit/release.sh build $$r lab-bins || { rc=1; break; }; \
	done; \
	wait $$gpid; grep -h '^guest: ' build/guest-images.log || true; exit $$rc

.PHONY: lab-bins check-cgroup2
lab-bins: build-all $(LAB_BINS)

demo: deps
	@$(MAKE) --no-print-directory build-all
	@tests/lab/kit/demo.sh

bench:
	@$(MAKE) --no-print-directory build-all $(BENCH_BINS)
	@tests/bench/run.sh

format-check:
	@tests/repo/t_format.sh
format:
	@tests/repo/t_format.sh --fix

install: $(INSTALL_TARGETS)

clean:
	rm -rf $(B)

# The headers each object was built from (DEPFLAGS above); none before the
# first build.
DEP_FILES := $(shell find $(addprefix $(B)/,pic san sanpic tsan sancov testpic fuzz tests rt-tests) -name '*.d' 2>/dev/null)
-include $(DEP_FILES)
