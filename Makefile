# dist-bind: SPANK plugin + runtime library.
#
#   make            build everything into build/
#   make check      every test (unit under ASan/UBSan, the lab, PyTorch), the
#                   lab and package tests also on Slurm 24.11 (tests/lab/release.sh)
#   make check-quick the same on this machine's Slurm only
#   make demo       the seed job on the lab, without and with --dist-bind
#   make bench      side-by-side speed figures
#   make fuzz       each libFuzzer harness for FUZZ_SECONDS (tests/fuzz)
#   make install    PREFIX=/usr DESTDIR=...
#   make deps       install missing Debian packages (as root)

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
CFLAGS_ALL  = $(OPT) $(WARN) $(HARDEN) -Ilib/core $(CPPFLAGS) $(CFLAGS)
CXXFLAGS_ALL= -std=c++17 $(OPT) $(WARN) $(HARDEN) -fvisibility=hidden -Ilib/core $(CPPFLAGS) $(CXXFLAGS)
LDHARDEN   := -Wl,-z,relro -Wl,-z,now -Wl,--as-needed
SAN        := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

CORE_SRC   := $(wildcard lib/core/*.cc)
CORE_HDR   := $(wildcard lib/core/*.h lib/core/*.hh)
SPANK_SRC  := $(wildcard spank/*.c)
CHECK_FLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS  = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)

PLUGIN     := $(B)/spank_dist_bind.so

# Components add to these from their own build.mk (included below).
BUILD_TARGETS := $(PLUGIN)
TEST_BINS     :=
# What the lab tests need beyond build-all (also built for other releases).
LAB_BINS      :=
BENCH_BINS    :=
PLUGIN_OBJS   :=
PLUGIN_LIBS   :=
PLUGIN_CFLAGS :=
INSTALL_TARGETS := install-plugin install-man

.PHONY: all check check-quick release-build demo bench install install-plugin install-man deps clean
# Keep object files make would treat as intermediate.
.SECONDARY:
all: build-all

# --- the plugin --------------------------------------------------------------
$(B)/pic/%.o: lib/core/%.cc $(CORE_HDR)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_ALL) -c $< -o $@
$(B)/pic/spank_%.o: spank/%.c spank/glue.h lib/core/db_core.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

CORE_PIC   := $(patsubst lib/core/%.cc,$(B)/pic/%.o,$(CORE_SRC))
SPANK_PIC  := $(patsubst spank/%.c,$(B)/pic/spank_%.o,$(SPANK_SRC))

$(PLUGIN): $(SPANK_PIC) $(CORE_PIC) spank/exports.map
	$(CXX) -shared -o $@ $(SPANK_PIC) $(CORE_PIC) $(PLUGIN_OBJS) $(LDHARDEN) \
	    -Wl,--version-script=spank/exports.map $(PLUGIN_LIBS) -ldl $(LDFLAGS)

# --- unit tests, under AddressSanitizer and UBSan -----------------------------
$(B)/san/%.o: lib/core/%.cc $(CORE_HDR)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g $(WARN) $(SAN) -Ilib/core -c $< -o $@
CORE_SAN   := $(patsubst lib/core/%.cc,$(B)/san/%.o,$(CORE_SRC))

$(B)/tests/unit_%: tests/unit/%.c tests/unit/*.h $(CORE_SAN)
	@mkdir -p $(@D)
	$(CXX) -x c -std=gnu11 -O1 -g $(WARN) $(SAN) -Ilib/core $(CHECK_FLAGS) -c $< -o $@.o
	$(CXX) $(SAN) -o $@ $@.o $(CORE_SAN) $(CHECK_LIBS)

TEST_BINS  += $(patsubst tests/unit/%.c,$(B)/tests/unit_%,$(wildcard tests/unit/test_*.c))

# The plugin built with ASan+UBSan, for the sanitized lab run
# (tests/lab/t_sanitized.py: slurmd/slurmstepd with the runtimes preloaded).
# -z nodelete keeps it mapped after slurmstepd's dlclose, so the leak
# report at exit can still name it as the module of a leaked allocation.
$(B)/sanpic/%.o: lib/core/%.cc $(CORE_HDR)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g $(WARN) $(SAN) -fPIC -fvisibility=hidden -Ilib/core -c $< -o $@
$(B)/sanpic/spank_%.o: spank/%.c spank/glue.h lib/core/db_core.h
	@mkdir -p $(@D)
	$(CC) -O1 -g $(WARN) $(SAN) -fPIC -Ilib/core $(PLUGIN_CFLAGS) -c $< -o $@
SAN_PLUGIN := $(B)/asan/spank_dist_bind.so
$(SAN_PLUGIN): $(patsubst spank/%.c,$(B)/sanpic/spank_%.o,$(SPANK_SRC)) $(patsubst lib/core/%.cc,$(B)/sanpic/%.o,$(CORE_SRC))
	@mkdir -p $(@D)
	$(CXX) -shared $(SAN) -o $@ $^ -Wl,--version-script=spank/exports.map -Wl,-z,nodelete $(PLUGIN_LIBS) -ldl
TEST_BINS  += $(SAN_PLUGIN)

-include $(sort $(wildcard lib/*/build.mk tools/build.mk)) tests/gpu/build.mk packaging/build.mk tests/fuzz/build.mk

.PHONY: build-all
build-all: $(BUILD_TARGETS)

# --- driver targets -------------------------------------------------------------
deps:
	@packaging/deps.sh

# make check T="lab unit" runs only those levels (or tests whose name matches).
# The lab and package tests run again on every other Slurm release
# tests/lab/release.sh knows (each in its own Debian root, made once and
# cached under build/roots/, built into build/slurm-RELEASE/);
# check-quick leaves those out.
check: deps release-build
	@$(MAKE) --no-print-directory build-all $(TEST_BINS)
	@tests/run.sh $(T)

check-quick: deps
	@$(MAKE) --no-print-directory build-all $(TEST_BINS)
	@DIST_BIND_LAB_RELEASES= tests/run.sh $(T)

release-build:
	@for r in $${DIST_BIND_LAB_RELEASES-$$(tests/lab/release.sh list)}; do tests/lab/release.sh build $$r lab-bins || exit 1; done

.PHONY: lab-bins
lab-bins: build-all $(LAB_BINS)

demo: deps
	@$(MAKE) --no-print-directory build-all
	@tests/lab/demo.sh

bench: deps
	@$(MAKE) --no-print-directory build-all $(BENCH_BINS)
	@tests/bench/run.sh

install: $(INSTALL_TARGETS)

install-plugin: $(PLUGIN)
	install -d $(DESTDIR)$(SLURM_PLUGINDIR) $(DESTDIR)$(SYSCONFDIR)/slurm/plugstack.conf.d
	install -m 0755 $(PLUGIN) $(DESTDIR)$(SLURM_PLUGINDIR)/spank_dist_bind.so
	sed 's|@PLUGINDIR@|$(SLURM_PLUGINDIR)|' packaging/plugstack.d-dist-bind.conf \
	    >$(DESTDIR)$(SYSCONFDIR)/slurm/plugstack.conf.d/dist-bind.conf
	chmod 0644 $(DESTDIR)$(SYSCONFDIR)/slurm/plugstack.conf.d/dist-bind.conf
	install -d $(DESTDIR)$(DOCDIR)/examples
	install -m 0644 packaging/cli_filter/cli_filter.lua $(DESTDIR)$(DOCDIR)/examples/cli_filter.lua

install-man:
	for s in 1 3 8; do \
	    for m in packaging/man/*.$$s; do [ -f "$$m" ] || continue; \
	        install -d $(DESTDIR)$(MANDIR)/man$$s; install -m 0644 "$$m" $(DESTDIR)$(MANDIR)/man$$s/; done; \
	done

clean:
	rm -rf $(B)

# --- benchmarks -------------------------------------------------------------------
$(B)/bench/bench_plan: tests/bench/bench_plan.c $(CORE_PIC)
	@mkdir -p $(@D)
	$(CXX) -x c -std=gnu11 $(OPT) $(WARN) -Ilib/core -c $< -o $@.o
	$(CXX) -o $@ $@.o $(CORE_PIC)
BENCH_BINS += $(B)/bench/bench_plan
