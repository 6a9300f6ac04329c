# dist-bind-check (included by the top Makefile): every tools/*.cc goes into
# the one binary, a client of libdistbind.so through distbind.h.
# tools/check_plan.cc (the --plan dry run) links the plan and the topology
# ($(TOPO_LIB), with hwloc).

TOOL_SRC   := $(wildcard tools/*.cc)
FLAGS.tools := -Ilib/common -Ilib/plan -Ilib/topo -Ilib/runtime $(RT_INC) $(HWLOC_CFLAGS)
TOOL_OBJ   := $(call objs,pic,$(TOOL_SRC))
CHECK_TOOL := $(B)/dist-bind-check

# Linked against libdistbind.so, as admins run it.  The build tree's copy
# finds the library next to itself ($ORIGIN); the installed one (no run
# path) the system's.
TOOL_LINK = $(TOOL_OBJ) $(TOPO_LIB) -L$(B) -ldistbind $(LDHARDEN) $(HWLOC_LIBS) $(LDFLAGS)
$(CHECK_TOOL): $(TOOL_OBJ) $(RT_LIB) $(TOPO_LIB)
	$(CXX) -o $@ $(TOOL_LINK) -Wl,-rpath,'$$ORIGIN'
$(B)/install/dist-bind-check: $(TOOL_OBJ) $(RT_LIB) $(TOPO_LIB)
	@mkdir -p $(@D)
	$(CXX) -o $@ $(TOOL_LINK)

BUILD_TARGETS   += $(CHECK_TOOL) $(B)/install/dist-bind-check
INSTALL_TARGETS += install-check-tool

.PHONY: install-check-tool
install-check-tool: $(B)/install/dist-bind-check
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(B)/install/dist-bind-check $(DESTDIR)$(PREFIX)/bin/dist-bind-check
