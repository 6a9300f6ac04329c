# lib/topo: hwloc topology and the closest choice (--dist-bind=closest).
# Included by the top Makefile.  Builds:
#   $(B)/libdbtopo.a        PIC topology + core objects, for libdistbind.so
#                           (distbind_plan_dry_run) and the topology bench
#   topology objects        linked into the plugin (PLUGIN_OBJS/PLUGIN_LIBS)
#   tests: unit_test_topo, topology_machines (ASan/UBSan); bench: $(B)/bench/b_topo

HWLOC_CFLAGS := $(shell pkg-config --cflags hwloc 2>/dev/null)
HWLOC_LIBS   := $(shell pkg-config --libs hwloc 2>/dev/null || echo -lhwloc)

TOPO_SRC  := $(wildcard lib/topo/*.cc)
TOPO_HDR  := $(wildcard lib/topo/*.h lib/topo/*.hh)
TOPO_PIC  := $(patsubst lib/topo/%.cc,$(B)/topo/pic/%.o,$(TOPO_SRC))
TOPO_SAN  := $(patsubst lib/topo/%.cc,$(B)/topo/san/%.o,$(TOPO_SRC))
TOPO_LIB  := $(B)/libdbtopo.a
TOPO_TEST_XML := $(abspath tests/topology/xml)

# The glue and the tools include db_topo.h / topo.hh.
CFLAGS_ALL   += -Ilib/topo
CXXFLAGS_ALL += -Ilib/topo $(HWLOC_CFLAGS)

$(B)/topo/pic/%.o: lib/topo/%.cc $(TOPO_HDR) $(CORE_HDR)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_ALL) -c $< -o $@
# Test builds read the test knobs (DB_TEST_KNOBS, see db_topo.h); the
# shipped plugin never does.
$(B)/topo/san/%.o: lib/topo/%.cc $(TOPO_HDR) $(CORE_HDR)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g $(WARN) $(SAN) -DDB_TEST_KNOBS -Ilib/core -Ilib/topo $(HWLOC_CFLAGS) -c $< -o $@

# The plugin loads the topology in slurmstepd.
PLUGIN_OBJS   += $(TOPO_PIC)
PLUGIN_LIBS   += $(HWLOC_LIBS)
PLUGIN_CFLAGS += -Ilib/topo
$(PLUGIN): $(TOPO_PIC)
$(SPANK_PIC): lib/topo/db_topo.h

# ... and so does the sanitized plugin of the lab's sanitized run.
TOPO_SANPIC := $(patsubst lib/topo/%.cc,$(B)/topo/sanpic/%.o,$(TOPO_SRC))
$(B)/topo/sanpic/%.o: lib/topo/%.cc $(TOPO_HDR) $(CORE_HDR)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g $(WARN) $(SAN) -DDB_TEST_KNOBS -fPIC -fvisibility=hidden -Ilib/core -Ilib/topo $(HWLOC_CFLAGS) -c $< -o $@
ifneq ($(SAN_PLUGIN),)
$(SAN_PLUGIN): $(TOPO_SANPIC)
$(patsubst spank/%.c,$(B)/sanpic/spank_%.o,$(SPANK_SRC)): lib/topo/db_topo.h
endif

# The plugin as the lab's closest test runs it: the shipped objects, but
# node.cc reads the test knobs.  Never installed.
TEST_PLUGIN := $(B)/test/spank_dist_bind.so
$(B)/topo/testpic/node.o: lib/topo/node.cc $(TOPO_HDR) $(CORE_HDR)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_ALL) -DDB_TEST_KNOBS -c $< -o $@
TEST_PLUGIN_OBJS := $(SPANK_PIC) $(CORE_PIC) $(filter-out $(B)/topo/pic/node.o,$(TOPO_PIC)) $(B)/topo/testpic/node.o
$(TEST_PLUGIN): $(TEST_PLUGIN_OBJS) spank/exports.map
	@mkdir -p $(@D)
	$(CXX) -shared -o $@ $(TEST_PLUGIN_OBJS) $(LDHARDEN) -Wl,--version-script=spank/exports.map $(PLUGIN_LIBS) -ldl $(LDFLAGS)
TEST_BINS += $(TEST_PLUGIN)

# libdistbind.so (lib/runtime/build.mk) links the dry run from here.
$(TOPO_LIB): $(TOPO_PIC) $(CORE_PIC)
	@rm -f $@
	$(AR) rcs $@ $^

# Tests: the real topology code under the sanitizers, XML from the tree.
TOPO_TEST_CFLAGS = -x c -std=gnu11 -O1 -g $(WARN) $(SAN) -Ilib/core -Ilib/topo $(CHECK_FLAGS) \
    -DDB_TEST_XML_DIR='"$(TOPO_TEST_XML)"'
$(B)/tests/unit_test_topo: tests/unit/test_topo.c tests/unit/*.h $(TOPO_SAN) $(CORE_SAN)
	@mkdir -p $(@D)
	$(CXX) $(TOPO_TEST_CFLAGS) -c $< -o $@.o
	$(CXX) $(SAN) -o $@ $@.o $(TOPO_SAN) $(CORE_SAN) $(HWLOC_LIBS) $(CHECK_LIBS)
$(B)/tests/topology_machines: tests/topology/test_machines.c tests/unit/*.h $(TOPO_SAN) $(CORE_SAN)
	@mkdir -p $(@D)
	$(CXX) $(TOPO_TEST_CFLAGS) -Itests/unit -c $< -o $@.o
	$(CXX) $(SAN) -o $@ $@.o $(TOPO_SAN) $(CORE_SAN) $(HWLOC_LIBS) $(CHECK_LIBS)

$(B)/bench/b_topo: tests/bench/b_topo.cc $(TOPO_LIB)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_ALL) -DDB_TEST_XML_DIR='"$(TOPO_TEST_XML)"' -o $@ $< $(TOPO_LIB) $(HWLOC_LIBS) $(LDFLAGS)

BUILD_TARGETS += $(TOPO_LIB)
BENCH_BINS    += $(B)/bench/b_topo
TEST_BINS     += $(B)/tests/unit_test_topo $(B)/tests/topology_machines
