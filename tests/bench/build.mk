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

# srun's node ranks at 1,000 to 100,000 nodes (synthetic layouts).
$(B)/bench/bench_hints: $(B)/pic/tests/bench/bench_hints.o $(PLAN_PIC) $(COMMON_PIC)
	@mkdir -p $(@D)
	$(CXX) -o $@ $^

BENCH_BINS += $(B)/bench/bench_plan $(B)/bench/b_topo $(B)/bench/bench_hints

# The per-task cost's baseline, measured in the same run (b_plan.py): the
# plan of e50afc0, the release before the Apptainer twins, the PET_
# defaults and heterogeneous steps.  Its tree comes from this repository's
# history (git archive, once, kept under $(BASELINE_DIR)) and is built
# there by its own Makefile, with the flags of this make; this
# bench_plan.c drives its plan (DB_BENCH_E50AFC0: its db_node_input is
# shorter) on the same steps as ours, and its own bench_plan runs too.
# Not part of BENCH_BINS: a clone without that history still builds and
# runs the rest, and b_plan.py counts the comparison as missed.
BASELINE_REV := e50afc0
BASELINE_DIR := $(B)/baseline-$(BASELINE_REV)
BASELINE_BENCH := $(B)/bench/bench_plan_$(BASELINE_REV)

$(BASELINE_DIR)/.tree:
	@git cat-file -e '$(BASELINE_REV)^{commit}' 2>/dev/null || { \
	    echo "bench: $(BASELINE_REV) is not in this clone's history (shallow clone?): no baseline;" \
	         "git fetch --unshallow brings it" >&2; exit 1; }
	rm -rf $(BASELINE_DIR) && mkdir -p $(BASELINE_DIR)
	git archive $(BASELINE_REV) | tar -x -C $(BASELINE_DIR)
	@touch $@
$(BASELINE_DIR)/build/bench/bench_plan: $(BASELINE_DIR)/.tree
	$(MAKE) -C $(BASELINE_DIR) --no-print-directory build/bench/bench_plan
$(BASELINE_BENCH): tests/bench/bench_plan.c $(BASELINE_DIR)/build/bench/bench_plan
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -DDB_BENCH_E50AFC0 -I$(BASELINE_DIR)/lib/plan -c $< -o $@.o
	$(CXX) -o $@ $@.o $(BASELINE_DIR)/build/pic/lib/plan/*.o $(BASELINE_DIR)/build/pic/lib/common/*.o
.PHONY: bench-baseline
bench-baseline: $(BASELINE_BENCH)
