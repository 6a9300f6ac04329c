# dist-bind-check (included by the top Makefile): every tools/*.cc goes into
# the one binary, a client of libdistbind.so through distbind.h only (and
# hwloc's bitmaps for the kernel's CPU lists): no other include path.

TOOL_SRC  := $(wildcard tools/*.cc)
TOOL_OBJ  := $(patsubst tools/%.cc,$(B)/tool/%.o,$(TOOL_SRC))
CHECK_TOOL := $(B)/dist-bind-check

$(B)/tool/%.o: tools/%.cc tools/check.hh lib/runtime/distbind.h
	@mkdir -p $(@D)
	$(CXX) -std=c++17 $(OPT) $(WARN) $(HARDEN) -Ilib/runtime $(HWLOC_CFLAGS) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

# Linked against libdistbind.so, as admins run it (--plan too:
# distbind_plan_dry_run).  The build tree's copy finds the library next to
# itself ($ORIGIN); the installed one (no run path) the system's.
TOOL_LINK = $(TOOL_OBJ) -L$(B) -ldistbind $(LDHARDEN) $(HWLOC_LIBS) $(LDFLAGS)
$(CHECK_TOOL): $(TOOL_OBJ) $(RT_LIB)
	$(CXX) -o $@ $(TOOL_LINK) -Wl,-rpath,'$$ORIGIN'
$(B)/install/dist-bind-check: $(TOOL_OBJ) $(RT_LIB)
	@mkdir -p $(@D)
	$(CXX) -o $@ $(TOOL_LINK)

BUILD_TARGETS   += $(CHECK_TOOL) $(B)/install/dist-bind-check
INSTALL_TARGETS += install-check-tool

.PHONY: install-check-tool
install-check-tool: $(B)/install/dist-bind-check
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(B)/install/dist-bind-check $(DESTDIR)$(PREFIX)/bin/dist-bind-check

# The unit test of the rows and the verdict (tests/unit/test_check_rows.c):
# those parts of the tool, the runtime and the core, under ASan/UBSan.
TOOL_ROW_SAN := $(B)/tool-san/check_row.o $(B)/tool-san/check_judge.o
$(TOOL_ROW_SAN): $(B)/tool-san/%.o: tools/%.cc tools/check.hh lib/runtime/distbind.h
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g $(WARN) $(SAN) -Ilib/runtime -c $< -o $@
$(B)/tests/unit_test_check_rows: tests/unit/test_check_rows.c tests/unit/check_hooks.cc tests/unit/*.h tools/check.hh \
                                 lib/runtime/distbind.h $(TOOL_ROW_SAN) $(RT_SAN) $(CORE_SAN)
	@mkdir -p $(@D)
	$(CXX) -x c -std=gnu11 -O1 -g $(WARN) $(SAN) $(CHECK_FLAGS) -c $< -o $@.o
	$(CXX) -std=c++17 -O1 -g $(WARN) $(SAN) -Ilib/runtime -Itools -c tests/unit/check_hooks.cc -o $@.hooks.o
	$(CXX) $(SAN) -o $@ $@.o $@.hooks.o $(TOOL_ROW_SAN) $(RT_SAN) $(CORE_SAN) $(CHECK_LIBS) $(RT_LIBS) $(HWLOC_LIBS)
