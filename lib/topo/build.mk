# lib/topo: hwloc topology and the closest choice (--dist-bind=closest).
# Included by the top Makefile.  Builds:
#   $(B)/libdbtopo.a        PIC topology, plan and common objects, for
#                           libdistbind.so (distbind_plan_dry_run) and the
#                           topology benchmark
#   topology objects        linked into the plugin (spank/build.mk)
# Its tests (unit_test_topo, topology_machines) are in tests/unit/build.mk.

HWLOC_CFLAGS := $(shell pkg-config --cflags hwloc 2>/dev/null)
HWLOC_LIBS   := $(shell pkg-config --libs hwloc 2>/dev/null || echo -lhwloc)

TOPO_SRC  := $(wildcard lib/topo/*.cc)
FLAGS.lib/topo := -Ilib/common -Ilib/plan -Ilib/topo $(HWLOC_CFLAGS)
# Test builds read the test knobs (DB_TEST_KNOBS, see db_topo.h); the
# shipped plugin never does.
SANFLAGS.lib/topo := -DDB_TEST_KNOBS
TOPO_PIC    := $(call objs,pic,$(TOPO_SRC))
TOPO_SAN    := $(call objs,san,$(TOPO_SRC))
TOPO_SANPIC := $(call objs,sanpic,$(TOPO_SRC))
TOPO_LIB    := $(B)/libdbtopo.a
TOPO_TEST_XML := $(abspath tests/topology/xml)

# node.cc as the lab's closest test runs it: shipped flags, but it reads the
# test knobs (spank/build.mk's test plugin).
$(B)/testpic/lib/topo/node.o: lib/topo/node.cc $(VERSION_H)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_ALL) $(FLAGS.lib/topo) -DDB_TEST_KNOBS $(DEPFLAGS) -c $< -o $@

$(TOPO_LIB): $(TOPO_PIC) $(PLAN_PIC) $(COMMON_PIC)
	@rm -f $@
	$(AR) rcs $@ $^

BUILD_TARGETS += $(TOPO_LIB)
