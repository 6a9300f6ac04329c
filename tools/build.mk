# dist-bind-check (included by the top Makefile): every tools/*.cc goes into
# the one binary, a client of libdistbind.so through distbind.h only (and
# hwloc's bitmaps for the kernel's CPU lists): no other include path.  The
# --plan dry run is libdistbind's distbind_plan_dry_run.

TOOL_SRC   := $(wildcard tools/*.cc)
FLAGS.tools := $(RT_INC) $(HWLOC_CFLAGS)
TOOL_OBJ   := $(call objs,pic,$(TOOL_SRC))
CHECK_TOOL := $(B)/dist-bind-check

# Linked against libdistbind.so, as admins run it.  The build tree's copy
# finds the library next to itself ($ORIGIN); the installed one (no run
# path) the system's.
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
