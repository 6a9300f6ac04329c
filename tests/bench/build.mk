# The benchmarks' programs (included by the top Makefile; `make bench`
# builds them and runs tests/bench/run.sh).

FLAGS.tests/bench := -Ilib/common -Ilib/plan -Ilib/topo $(HWLOC_CFLAGS) -DDB_TEST_XML_DIR='"$(TOPO_TEST_XML)"'

# The plan's speed, from C as the plugin calls it.
$(B)/bench/bench_plan: $(B)/pic/tests/bench/bench_plan.o $(PLAN_PIC) $(COMMON_PIC)
	@mkdir -p $(@D)
	$(CXX) -o $@ $^
# The topology's: load, model, choose, on the machines' XML from the tree.
$(B)/bench/b_topo: $(B)/pic/tests/bench/b_topo.o $(TOPO_LIB)
	@mkdir -p $(@D)
	$(CXX) -o $@ $^ $(HWLOC_LIBS) $(LDFLAGS)

BENCH_BINS += $(B)/bench/bench_plan $(B)/bench/b_topo
