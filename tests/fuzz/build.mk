# Fuzzing (included by the top Makefile).
#
#   make fuzz [FUZZ_SECONDS=N]   each libFuzzer harness for N seconds (default 60),
#                                from the checked-in corpus; findings in build/fuzz/findings/
#   make check                   replays the corpus and every reproducer through
#                                each harness, built with $(CXX) under ASan/UBSan
#                                (build/tests/unit_fuzz_*: no libFuzzer needed)

FUZZ_CXX     ?= $(shell command -v clang++-14 2>/dev/null || command -v clang++ 2>/dev/null)
FUZZ_SECONDS ?= 60
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.cc,%,$(wildcard tests/fuzz/fuzz_*.cc))
FUZZ_INC     := -Ilib/common -Ilib/plan -Ilib/topo -Itests/fuzz $(HWLOC_CFLAGS) -DDB_TEST_XML_DIR='"$(TOPO_TEST_XML)"'

# What the harnesses reach: the common parsers, the plan, the topology, the runtime's decoders
# (wire, auth, rank lists, PMI2's encoding).
FUZZ_RT      := bootstrap/tcp/wire bootstrap/tcp/auth core/secret core/words bootstrap/pmi2_encoding
FUZZ_SRC     := $(COMMON_SRC) $(PLAN_SRC) $(TOPO_SRC) $(patsubst %,lib/runtime/%.cc,$(FUZZ_RT))
FUZZ_OBJ     := $(patsubst %.cc,$(B)/fuzz/obj/%.o,$(FUZZ_SRC))
FUZZ_LIBS    := $(HWLOC_LIBS) -lsodium -ldl -pthread

$(B)/fuzz/obj/%.o: %.cc $(VERSION_H)
	@mkdir -p $(@D)
	$(FUZZ_CXX) -std=c++17 -O1 -g $(SAN) -fsanitize=fuzzer-no-link $(FUZZ_INC) $(RT_FLAGS) -DDB_TEST_KNOBS $(DEPFLAGS) -c $< -o $@
$(B)/fuzz/%: tests/fuzz/fuzz_%.cc tests/fuzz/fuzz.hh $(FUZZ_OBJ)
	@mkdir -p $(@D)
	$(FUZZ_CXX) -std=c++17 -O1 -g $(SAN) -fsanitize=fuzzer $(FUZZ_INC) $(RT_FLAGS) $(DEPFLAGS_ONE) $< $(FUZZ_OBJ) -o $@ $(FUZZ_LIBS)

# The replay drivers: the same harnesses, the sanitized objects make check
# already builds, and tests/fuzz/replay.cc for main() (named first: the
# harness's headers are the ones $@.d keeps).
FUZZ_REPLAY_OBJ := $(COMMON_SAN) $(PLAN_SAN) $(TOPO_SAN) $(patsubst %,$(B)/san/lib/runtime/%.o,$(FUZZ_RT))
$(B)/tests/unit_fuzz_%: tests/fuzz/fuzz_%.cc tests/fuzz/replay.cc tests/fuzz/fuzz.hh $(VERSION_H) $(FUZZ_REPLAY_OBJ)
	@mkdir -p $(@D)
	$(SAN_CXX) $(FUZZ_INC) $(RT_FLAGS) $(DEPFLAGS_ONE) \
	    -DFUZZ_DIRS='"$(abspath tests/fuzz/corpus/$*):$(abspath tests/fuzz/repro/$*)"' \
	    tests/fuzz/replay.cc tests/fuzz/fuzz_$*.cc $(FUZZ_REPLAY_OBJ) -o $@ $(FUZZ_LIBS)
TEST_BINS += $(patsubst %,$(B)/tests/unit_fuzz_%,$(FUZZ_NAMES))

.PHONY: fuzz
fuzz:
	@[ -n "$(FUZZ_CXX)" ] || { echo "fuzz: clang++ not found (make deps installs clang)"; exit 1; }
	@$(MAKE) --no-print-directory $(patsubst %,$(B)/fuzz/%,$(FUZZ_NAMES))
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_NAMES)
