# The exchange level's programs (included by the top Makefile): the worker
# each rank of tests/exchange runs, linked against the real shared library,
# and the same under ASan+UBSan for the small runs.

FLAGS.tests/exchange := $(RT_INC)

RT_WORKER := $(B)/rt-tests/xchg_worker
$(RT_WORKER): tests/exchange/worker.c $(VERSION_H) $(RT_LIB)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPT) $(WARN) $(RT_INC) $(DEPFLAGS_ONE) $< -o $@ -L$(B) -ldistbind -Wl,-rpath,$(abspath $(B))
$(RT_WORKER)_san: $(B)/san/tests/exchange/worker.o $(RT_SAN) $(COMMON_SAN)
	@mkdir -p $(@D)
	$(SAN_LD) -o $@ $^ $(RT_LIBS)

BUILD_TARGETS += $(RT_WORKER)
TEST_BINS     += $(RT_WORKER)_san
