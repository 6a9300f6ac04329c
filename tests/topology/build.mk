# The topology level's program (included by the top Makefile): closest's
# choice on real machines' hwloc XML (tests/topology/xml), under ASan+UBSan,
# with the unit tests' flags and objects.

FLAGS.tests/topology := $(UNIT_FLAGS)

$(B)/tests/topology_machines: $(B)/san/tests/topology/test_machines.o $(TOPO_TEST_OBJS)
	@mkdir -p $(@D)
	$(SAN_LD) -o $@ $^ $(HWLOC_LIBS) $(CHECK_LIBS)

TEST_BINS += $(B)/tests/topology_machines
