# dist-bind-check (included by the top Makefile): every tools/*.cc goes into
# the one binary.  tools/check_plan.cc (the --plan dry run) brings its own
# libraries through CHECK_TOOL_LIBS and flags through CHECK_TOOL_CFLAGS.

CHECK_TOOL_LIBS   ?=
CHECK_TOOL_CFLAGS ?=
TOOL_SRC  := $(wildcard tools/*.cc)
TOOL_OBJ  := $(patsubst tools/%.cc,$(B)/tool/%.o,$(TOOL_SRC))
CHECK_TOOL := $(B)/dist-bind-check

$(B)/tool/%.o: tools/%.cc $(RT_HDR) $(CORE_HDR)
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
