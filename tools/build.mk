# dist-bind-check (included by the top Makefile): every tools/*.cc goes into
# the one binary.  tools/check_plan.cc (the --plan dry run) brings its own
# libraries through CHECK_TOOL_LIBS and flags through CHECK_TOOL_CFLAGS.

CHECK_TOOL_LIBS   ?=
CHECK_TOOL_CFLAGS ?=
TOOL_SRC  := $(wildcard tools/*.cc)
TOOL_OBJ  := $(patsubst tools/%.cc,$(B)/tool/%.o,$(TOOL_SRC))
CHECK_TOOL := $(B)/dist-bind-check

$(B)/tool/%.o: tools/%.cc tools/check.hh $(RT_HDR) $(CORE_HDR)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_ALL) $(RT_FLAGS) $(CHECK_TOOL_CFLAGS) -c $< -o $@

# The runtime goes in statically (the tool also uses its CUDA loader); the
# core objects are there for the --plan dry run.
$(CHECK_TOOL): $(TOOL_OBJ) $(RT_ARCHIVE) $(CORE_PIC)
	$(CXX) -o $@ $(TOOL_OBJ) $(RT_ARCHIVE) $(CORE_PIC) $(LDHARDEN) $(RT_LIBS) $(CHECK_TOOL_LIBS) $(LDFLAGS)

BUILD_TARGETS   += $(CHECK_TOOL)
INSTALL_TARGETS += install-check-tool

.PHONY: install-check-tool
install-check-tool: $(CHECK_TOOL)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(CHECK_TOOL) $(DESTDIR)$(PREFIX)/bin/dist-bind-check

# The unit test of the rows and the verdict (tests/unit/test_check_rows.c):
# those parts of the tool, the runtime and the core, under ASan/UBSan.
TOOL_ROW_SAN := $(B)/tool-san/check_row.o $(B)/tool-san/check_judge.o
$(TOOL_ROW_SAN): $(B)/tool-san/%.o: tools/%.cc tools/check.hh $(RT_HDR) $(CORE_HDR)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g $(WARN) $(SAN) -Ilib/core $(RT_FLAGS) -c $< -o $@
$(B)/tests/unit_test_check_rows: tests/unit/test_check_rows.c tests/unit/check_hooks.cc tests/unit/*.h tools/check.hh \
                                 lib/runtime/distbind.h $(TOOL_ROW_SAN) $(RT_SAN) $(CORE_SAN)
	@mkdir -p $(@D)
	$(CXX) -x c -std=gnu11 -O1 -g $(WARN) $(SAN) $(CHECK_FLAGS) -c $< -o $@.o
	$(CXX) -std=c++17 -O1 -g $(WARN) $(SAN) -Ilib/core $(RT_FLAGS) -Itools -c tests/unit/check_hooks.cc -o $@.hooks.o
	$(CXX) $(SAN) -o $@ $@.o $@.hooks.o $(TOOL_ROW_SAN) $(RT_SAN) $(CORE_SAN) $(CHECK_LIBS) $(RT_LIBS)
