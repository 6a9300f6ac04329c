# libdistbind: the runtime library (included by the top Makefile).
#
# CUDA and NCCL headers are needed to build the GPU parts; without them the
# library builds with its CPU parts only.  The libraries themselves (and
# libpmix, Slurm's libpmi2) are loaded with dlopen at run time, so
# libdistbind.so has no hard dependency on any of them.
#
# The public header is lib/runtime/include/distbind.h; it includes the
# generated $(VERSION_H).  RT_INC is what a client of the build tree needs.

CUDA_HOME   ?= /usr/local/cuda
# The rooms: the C face at the top, core/ under everything, the bootstraps
# (bootstrap/, bootstrap/tcp/) and gpu/ beside each other.  Files include
# each other by their path from here ("core/rt.hh").
RT_DIRS     := lib/runtime lib/runtime/core lib/runtime/bootstrap lib/runtime/bootstrap/tcp lib/runtime/gpu
RT_SRC      := $(wildcard $(addsuffix /*.cc,$(RT_DIRS)))
RT_INC      := -Ilib/runtime/include -I$(B)/include
# plan_dry_run.cc (distbind_plan_dry_run) calls the plan and the topology.
RT_FLAGS    := -Ilib/common -Ilib/plan -Ilib/topo -Ilib/runtime $(RT_INC) $(HWLOC_CFLAGS) \
               -DDB_VERSION_STRING=\"$(DB_VERSION)\"
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
$(foreach d,$(RT_DIRS),$(eval FLAGS.$(d) := $$(RT_FLAGS)))
# The test builds of the TCP bootstrap read DIST_BIND_TEST_TCP_RELEASE
# (wire.cc: speak as another release would); the shipped library never does.
SANFLAGS.lib/runtime/bootstrap/tcp := -DDB_TEST_KNOBS
RT_LIBS     := -ldl -pthread -lsodium
# The shipped library carries libsodium inside it (hidden by the version
# script): mapped as a library of its own, its relocations and first
# pages in every rank were most of what the step's secret cost the TCP
# set-up at 256 ranks (1.112 against 1.045 linked in, docs/testing.md).
# The test builds link it as usual.
RT_SHIP_LIBS := $(filter-out -lsodium,$(RT_LIBS)) -Wl,-Bstatic -lsodium -Wl,-Bdynamic

RT_LIB      := $(B)/libdistbind.so
RT_SONAME   := libdistbind.so.$(DB_ABI)
RT_PIC      := $(call objs,pic,$(RT_SRC))
# plan_dry_run.cc (distbind_plan_dry_run) calls lib/topo: only the shared
# library links it (with lib/topo and hwloc); the test builds leave it out.
RT_TEST_SRC := $(filter-out lib/runtime/plan_dry_run.cc,$(RT_SRC))
RT_SAN      := $(call objs,san,$(RT_TEST_SRC))
RT_TSAN     := $(call objs,tsan,$(RT_TEST_SRC))

# The plan, topology and common objects ($(TOPO_LIB): lib/common's strict
# parsers, the dry run of closest) go inside the library too, hidden; hwloc
# is its one new run-time dependency.
$(RT_LIB): $(RT_PIC) $(TOPO_LIB) lib/runtime/distbind.map
	$(CXX) -shared -o $@ $(RT_PIC) $(TOPO_LIB) $(LDHARDEN) -Wl,-soname,$(RT_SONAME) \
	    -Wl,--version-script=lib/runtime/distbind.map $(RT_SHIP_LIBS) $(HWLOC_LIBS) $(LDFLAGS)
	ln -sf libdistbind.so $(B)/$(RT_SONAME)

BUILD_TARGETS   += $(RT_LIB)
INSTALL_TARGETS += install-runtime

# The real file is named by its soname: libdistbind.so.$(DB_ABI).
.PHONY: install-runtime
install-runtime: $(RT_LIB) $(VERSION_H)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 0755 $(RT_LIB) $(DESTDIR)$(LIBDIR)/$(RT_SONAME)
	ln -sf $(RT_SONAME) $(DESTDIR)$(LIBDIR)/libdistbind.so
	install -m 0644 lib/runtime/include/distbind.h $(VERSION_H) $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(DB_VERSION)|' \
	    lib/runtime/distbind.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/distbind.pc
	chmod 0644 $(DESTDIR)$(LIBDIR)/pkgconfig/distbind.pc
