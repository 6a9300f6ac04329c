# spank/: the SPANK plugin (included by the top Makefile).  The C glue, the
# plan, the topology and the common parsers in one .so; the version script
# leaves only what Slurm looks up exported.
#
#   $(B)/spank_dist_bind.so        the plugin (installed)
#   $(B)/asan/spank_dist_bind.so   the same under ASan+UBSan, for the lab's
#                                  sanitized run (tests/lab/t_sanitized.py)
#   $(B)/test/spank_dist_bind.so   the shipped objects, but node.cc reads the
#                                  test knobs (the lab's closest test); never installed

SPANK_SRC := $(wildcard spank/*.c)
FLAGS.spank := -Ilib/plan -Ilib/topo -DDB_VERSION=\"$(DB_VERSION)\"
PLUGIN      := $(B)/spank_dist_bind.so
PLUGIN_LIBS := $(HWLOC_LIBS) -ldl
# libstdc++ and libgcc linked in, hidden by the version script: slurmstepd
# and srun load no C++ runtime of their own, and loading libstdc++.so was
# four fifths of the plugin's dlopen: 565 us with libstdc++.so, 115 us with
# it linked in (medians of 41 dlopens after libslurmfull.so, 2-core VM).
# Each node's slurmstepd and each srun loads the plugin once per step.  The
# sanitized plugin keeps the shared one: ASan must see its operator new.
PLUGIN_STATIC := -static-libstdc++ -static-libgcc
PLUGIN_OBJS := $(call objs,pic,$(SPANK_SRC)) $(PLAN_PIC) $(COMMON_PIC) $(TOPO_PIC)

$(PLUGIN): $(PLUGIN_OBJS) spank/exports.map
	$(CXX) -shared -o $@ $(PLUGIN_OBJS) $(LDHARDEN) $(PLUGIN_STATIC) \
	    -Wl,--version-script=spank/exports.map $(PLUGIN_LIBS) $(LDFLAGS)

# -z nodelete keeps the sanitized plugin mapped after slurmstepd's dlclose,
# so the leak report at exit can still name it as the module of a leaked
# allocation.
SAN_PLUGIN      := $(B)/asan/spank_dist_bind.so
SAN_PLUGIN_OBJS := $(call objs,sanpic,$(SPANK_SRC)) $(PLAN_SANPIC) $(COMMON_SANPIC) $(TOPO_SANPIC)
$(SAN_PLUGIN): $(SAN_PLUGIN_OBJS) spank/exports.map
	@mkdir -p $(@D)
	$(SAN_LD) -shared -o $@ $(SAN_PLUGIN_OBJS) -Wl,--version-script=spank/exports.map -Wl,-z,nodelete $(PLUGIN_LIBS)

TEST_PLUGIN      := $(B)/test/spank_dist_bind.so
TEST_PLUGIN_OBJS := $(filter-out $(B)/pic/lib/topo/node.o,$(PLUGIN_OBJS)) $(B)/testpic/lib/topo/node.o
$(TEST_PLUGIN): $(TEST_PLUGIN_OBJS) spank/exports.map
	@mkdir -p $(@D)
	$(CXX) -shared -o $@ $(TEST_PLUGIN_OBJS) $(LDHARDEN) $(PLUGIN_STATIC) -Wl,--version-script=spank/exports.map $(PLUGIN_LIBS) $(LDFLAGS)

BUILD_TARGETS   += $(PLUGIN)
TEST_BINS       += $(SAN_PLUGIN) $(TEST_PLUGIN)
LAB_BINS        += $(TEST_PLUGIN)
INSTALL_TARGETS += install-plugin

.PHONY: install-plugin
install-plugin: $(PLUGIN)
	install -d $(DESTDIR)$(SLURM_PLUGINDIR) $(DESTDIR)$(SYSCONFDIR)/slurm/plugstack.conf.d
	install -m 0755 $(PLUGIN) $(DESTDIR)$(SLURM_PLUGINDIR)/spank_dist_bind.so
	sed 's|@PLUGINDIR@|$(SLURM_PLUGINDIR)|' packaging/plugstack.d-dist-bind.conf \
	    >$(DESTDIR)$(SYSCONFDIR)/slurm/plugstack.conf.d/zz-dist-bind.conf
	chmod 0644 $(DESTDIR)$(SYSCONFDIR)/slurm/plugstack.conf.d/zz-dist-bind.conf
	install -d $(DESTDIR)$(DOCDIR)/examples
	install -m 0644 packaging/cli_filter/cli_filter.lua $(DESTDIR)$(DOCDIR)/examples/cli_filter.lua
