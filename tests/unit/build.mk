# The test programs of the unit level (included by the top Makefile; the
# topology and exchange levels' are in their own folders' build.mk).  Unit tests run under ASan+UBSan (tests/run.sh runs
# every $(B)/tests/<level>_* it finds), linked with the sanitized objects of
# the parts they test; what they reach inside the runtime and the tool comes
# from tests/unit/runtime_hooks.cc and check_hooks.cc, linked into them only.

UNIT_FLAGS := -Itests/unit -Itools -Ilib/plan -Ilib/topo $(RT_FLAGS) $(HWLOC_CFLAGS) $(CHECK_FLAGS) \
              -DDB_TEST_XML_DIR='"$(TOPO_TEST_XML)"'
FLAGS.tests/unit     := $(UNIT_FLAGS)

# The plan's tests: the plan and common objects.
$(B)/tests/unit_%: $(B)/san/tests/unit/%.o $(PLAN_SAN) $(COMMON_SAN)
	@mkdir -p $(@D)
	$(SAN_LD) -o $@ $^ $(CHECK_LIBS)
# The plan's C entry points with operator new failing on request.
$(B)/tests/unit_test_plan_guards: $(B)/san/tests/unit/test_plan_guards.o $(B)/san/tests/unit/failing_new.o \
                                  $(PLAN_SAN) $(COMMON_SAN)
	@mkdir -p $(@D)
	$(SAN_LD) -o $@ $^ $(CHECK_LIBS)
# The runtime's (shortest-stem match wins over the rule above).
$(B)/tests/unit_test_runtime_%: $(B)/san/tests/unit/test_runtime_%.o $(B)/san/tests/unit/runtime_hooks.o \
                                $(RT_SAN) $(COMMON_SAN)
	@mkdir -p $(@D)
	$(SAN_LD) -o $@ $^ $(CHECK_LIBS) $(RT_LIBS) $(HWLOC_LIBS)
# The topology's, with the machines' XML from the tree.
TOPO_TEST_OBJS := $(TOPO_SAN) $(PLAN_SAN) $(COMMON_SAN)
$(B)/tests/unit_test_topo: $(B)/san/tests/unit/test_topo.o $(TOPO_TEST_OBJS)
	@mkdir -p $(@D)
	$(SAN_LD) -o $@ $^ $(HWLOC_LIBS) $(CHECK_LIBS)
# dist-bind-check's rows and verdict, with the runtime under them.
$(B)/tests/unit_test_check_rows: $(B)/san/tests/unit/test_check_rows.o $(B)/san/tests/unit/check_hooks.o \
                                 $(B)/san/tools/check_row.o $(B)/san/tools/check_judge.o $(RT_SAN) $(COMMON_SAN)
	@mkdir -p $(@D)
	$(SAN_LD) -o $@ $^ $(CHECK_LIBS) $(RT_LIBS) $(HWLOC_LIBS)
# dist-bind-check's table and verdict at scale: the tool's objects once more
# with every basic block counted (-fsanitize-coverage=trace-pc; the counter
# is in check_scale_hooks.cc), the test's measure of work.
$(B)/sancov/%.o: %.cc $(VERSION_H)
	@mkdir -p $(@D)
	$(SAN_CXX) -fsanitize-coverage=trace-pc $(SANDIRFLAGS) $(DEPFLAGS) -c $< -o $@
CHECK_SANCOV := $(call objs,sancov,tools/check_row.cc tools/check_judge.cc tools/check_table.cc)
$(B)/tests/unit_test_check_scale: $(B)/san/tests/unit/test_check_scale.o $(B)/san/tests/unit/check_scale_hooks.o \
                                  $(CHECK_SANCOV) $(RT_SAN) $(COMMON_SAN)
	@mkdir -p $(@D)
	$(SAN_LD) -o $@ $^ $(CHECK_LIBS) $(RT_LIBS) $(HWLOC_LIBS)
# The runtime under ThreadSanitizer: handles on two threads.
$(B)/tests/unit_tsan_two_handles: $(B)/tsan/tests/unit/tsan_two_handles.o $(RT_TSAN) $(COMMON_TSAN)
	@mkdir -p $(@D)
	$(CXX) $(TSAN) -o $@ $^ $(RT_LIBS)

TEST_BINS += $(patsubst tests/unit/%.c,$(B)/tests/unit_%,$(wildcard tests/unit/test_*.c)) \
             $(B)/tests/unit_tsan_two_handles
