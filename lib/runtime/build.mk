# libdistbind: the runtime library (included by the top Makefile).
#
# CUDA and NCCL headers are needed to build the GPU parts; without them the
# library builds with its CPU parts only.  The libraries themselves (and
# libpmix, Slurm's libpmi2) are loaded with dlopen at run time, so
# libdistbind.so has no hard dependency on any of them.

RT_VERSION  := 1.0.0
CUDA_HOME   ?= /usr/local/cuda
RT_SRC      := $(wildcard lib/runtime/*.cc)
RT_HDR      := $(wildcard lib/runtime/*.hh lib/runtime/*.h) lib/core/text.hh lib/topo/db_topo.h
RT_FLAGS    := -Ilib/runtime -DDB_VERSION_STRING=\"$(RT_VERSION)\"
ifneq ($(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),)
ifneq ($(wildcard $(CUDA_HOME)/include/nccl.h),)
RT_FLAGS    += -DDB_HAVE_CUDA -isystem $(CUDA_HOME)/include -DDB_CUDA_HOME=\"$(CUDA_HOME)\"
endif
endif
RT_PMIX_CFLAGS := $(shell pkg-config --cflags pmix 2>/dev/null)
ifneq ($(shell pkg-config --exists pmix 2>/dev/null && echo yes),)
RT_FLAGS    += -DDB_HAVE_PMIX $(RT_PMIX_CFLAGS)
endif
ifneq ($(wildcard /usr/include/slurm/pmi2.h),)
RT_FLAGS    += -DDB_HAVE_PMI2
endif
RT_LIBS     := -ldl -pthread -lsodium

RT_LIB      := $(B)/libdistbind.so
RT_ARCHIVE  := $(B)/libdistbind.a
RT_PIC      := $(patsubst lib/runtime/%.cc,$(B)/rt/pic/%.o,$(RT_SRC))
# plan.cc (distbind_plan_dry_run) calls lib/topo: only the shared library
# links it (with lib/topo and hwloc); the test builds below leave it out.
RT_TEST_SRC := $(filter-out lib/runtime/plan.cc,$(RT_SRC))
RT_SAN      := $(patsubst lib/runtime/%.cc,$(B)/rt/san/%.o,$(RT_TEST_SRC))
RT_WORKER   := $(B)/rt-tests/xchg_worker

$(B)/rt/pic/%.o: lib/runtime/%.cc $(RT_HDR)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_ALL) $(RT_FLAGS) -c $< -o $@

$(B)/rt/san/%.o: lib/runtime/%.cc $(RT_HDR)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g $(WARN) $(SAN) -Ilib/core $(RT_FLAGS) -c $< -o $@

# The topology and core objects (the core's strict parsers, the dry run of
# closest) are hidden inside the library too: $(B)/libdbtopo.a from
# lib/topo/build.mk, hwloc its one new run-time dependency.
$(RT_LIB): $(RT_PIC) $(B)/libdbtopo.a lib/runtime/distbind.map
	$(CXX) -shared -o $@ $(RT_PIC) $(B)/libdbtopo.a $(LDHARDEN) -Wl,-soname,libdistbind.so.1 \
	    -Wl,--version-script=lib/runtime/distbind.map $(RT_LIBS) $(HWLOC_LIBS) $(LDFLAGS)
	ln -sf libdistbind.so $(B)/libdistbind.so.1

$(RT_ARCHIVE): $(RT_PIC)
	rm -f $@
	ar rcs $@ $(RT_PIC)

# The exchange tests' worker, linked against the real shared library.
$(RT_WORKER): tests/exchange/worker.c lib/runtime/distbind.h $(RT_LIB)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPT) $(WARN) -Ilib/runtime $< -o $@ -L$(B) -ldistbind -Wl,-rpath,$(abspath $(B))
# ... and under ASan/UBSan, for the small runs.
$(RT_WORKER)_san: tests/exchange/worker.c lib/runtime/distbind.h $(RT_SAN) $(B)/san/text.o
	@mkdir -p $(@D)
	$(CXX) -x c -std=gnu11 -O1 -g $(WARN) $(SAN) -Ilib/runtime -c $< -o $@.o
	$(CXX) $(SAN) -o $@ $@.o $(RT_SAN) $(B)/san/text.o $(RT_LIBS)

# The runtime under ThreadSanitizer: handles on two threads (finding 11).
TSAN        := -fsanitize=thread -fno-omit-frame-pointer
RT_TSAN     := $(patsubst lib/runtime/%.cc,$(B)/rt/tsan/%.o,$(RT_TEST_SRC)) $(B)/rt/tsan/text.o
$(B)/rt/tsan/%.o: lib/runtime/%.cc $(RT_HDR)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g $(WARN) $(TSAN) -Ilib/core $(RT_FLAGS) -c $< -o $@
$(B)/rt/tsan/text.o: lib/core/text.cc $(CORE_HDR)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g $(WARN) $(TSAN) -Ilib/core -c $< -o $@
$(B)/tests/unit_tsan_two_handles: tests/unit/tsan_two_handles.c lib/runtime/distbind.h $(RT_TSAN)
	@mkdir -p $(@D)
	$(CXX) -x c -std=gnu11 -O1 -g $(WARN) $(TSAN) -Ilib/runtime -c $< -o $@.o
	$(CXX) $(TSAN) -o $@ $@.o $(RT_TSAN) $(RT_LIBS)
TEST_BINS += $(B)/tests/unit_tsan_two_handles

# Unit tests of the runtime (shortest-stem match wins over the core's rule).
# The internals they reach come from tests/unit/runtime_hooks.cc, which is
# linked into them only.
$(B)/tests/unit_test_runtime_%: tests/unit/test_runtime_%.c tests/unit/*.h tests/unit/runtime_hooks.cc \
                                lib/runtime/distbind.h $(RT_HDR) $(RT_SAN) $(CORE_SAN)
	@mkdir -p $(@D)
	$(CXX) -x c -std=gnu11 -O1 -g $(WARN) $(SAN) -Ilib/core -Ilib/runtime $(CHECK_FLAGS) -c $< -o $@.o
	$(CXX) -std=c++17 -O1 -g $(WARN) $(SAN) -Ilib/core $(RT_FLAGS) -Itests/unit -c tests/unit/runtime_hooks.cc -o $@.hooks.o
	$(CXX) $(SAN) -o $@ $@.o $@.hooks.o $(RT_SAN) $(CORE_SAN) $(CHECK_LIBS) $(RT_LIBS)

# GPU tests: plain programs against the shared library; exit 77 without a GPU.
$(B)/tests/gpu_%: tests/gpu/%.c lib/runtime/distbind.h $(RT_LIB)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPT) $(WARN) -Ilib/runtime $< -o $@ -L$(B) -ldistbind -Wl,-rpath,$(abspath $(B))

$(B)/rt-tests/gpu_%: tests/gpu/helpers/%.c lib/runtime/distbind.h $(RT_LIB)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPT) $(WARN) -Ilib/runtime $< -o $@ -L$(B) -ldistbind -Wl,-rpath,$(abspath $(B))

RT_GPU_TESTS := $(patsubst tests/gpu/%.c,$(B)/tests/gpu_%,$(wildcard tests/gpu/*.c)) \
                $(patsubst tests/gpu/helpers/%.c,$(B)/rt-tests/gpu_%,$(wildcard tests/gpu/helpers/*.c))

BUILD_TARGETS   += $(RT_LIB) $(RT_ARCHIVE) $(RT_WORKER)
TEST_BINS       += $(RT_WORKER)_san $(RT_GPU_TESTS)
INSTALL_TARGETS += install-runtime

.PHONY: install-runtime
install-runtime: $(RT_LIB)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 0755 $(RT_LIB) $(DESTDIR)$(LIBDIR)/libdistbind.so.$(RT_VERSION)
	ln -sf libdistbind.so.$(RT_VERSION) $(DESTDIR)$(LIBDIR)/libdistbind.so.1
	ln -sf libdistbind.so.1 $(DESTDIR)$(LIBDIR)/libdistbind.so
	install -m 0644 lib/runtime/distbind.h $(DESTDIR)$(PREFIX)/include/distbind.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(RT_VERSION)|' \
	    lib/runtime/distbind.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/distbind.pc
	chmod 0644 $(DESTDIR)$(LIBDIR)/pkgconfig/distbind.pc
