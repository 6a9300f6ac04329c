# tests/gpu (included by the top Makefile): the fake CUDA/NCCL driver the
# GPU paths are tested against without a GPU, and `make coverage-gpu`.
#
#   $(B)/fake/            libfakegpu.so (the "driver"), libcudart.so.13,
#                         libnccl.so.2, nvidia-smi
#   $(B)/fake-cuda12/     libcudart.so.12 (with cudaGetDeviceProperties_v2)
#                         and libnccl.so.2: a node with CUDA 12 only
#   $(B)/fake-oldnccl/    libnccl.so.2 without ncclCommInitRankScalable
#
# They are loaded the way the real ones are: LD_LIBRARY_PATH names the
# folder, libdistbind's dlopen finds them (tests/gpu/lib.sh, use_fake).
# Test code only: never installed.  Needs CUDA's and NCCL's headers for
# their exact types (CUDA_HOME, as the library's GPU parts).

# GPU tests: plain programs against the shared library; exit 77 without a GPU.
$(B)/tests/gpu_%: tests/gpu/%.c $(VERSION_H) $(RT_LIB)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPT) $(WARN) $(RT_INC) $(DEPFLAGS_ONE) $< -o $@ -L$(B) -ldistbind -Wl,-rpath,$(abspath $(B))
$(B)/rt-tests/gpu_%: tests/gpu/helpers/%.c $(VERSION_H) $(RT_LIB)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPT) $(WARN) $(RT_INC) $(DEPFLAGS_ONE) $< -o $@ -L$(B) -ldistbind -Wl,-rpath,$(abspath $(B))
RT_GPU_TESTS := $(patsubst tests/gpu/%.c,$(B)/tests/gpu_%,$(wildcard tests/gpu/*.c)) \
                $(patsubst tests/gpu/helpers/%.c,$(B)/rt-tests/gpu_%,$(wildcard tests/gpu/helpers/*.c))
TEST_BINS += $(RT_GPU_TESTS)

FAKE_SRC := tests/gpu/fake
ifneq ($(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),)
ifneq ($(wildcard $(CUDA_HOME)/include/nccl.h),)
FAKE_CFLAGS := -std=gnu11 -O1 -g $(WARN) -fPIC -pthread -isystem $(CUDA_HOME)/include -I$(FAKE_SRC)
# Each fake finds the driver next to itself, or in $(B)/fake.
FAKE_RPATH  := -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../fake'

$(B)/fake/libfakegpu.so: $(FAKE_SRC)/driver.c $(FAKE_SRC)/fakegpu.h
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -shared -Wl,-soname,libfakegpu.so -o $@ $<
$(B)/fake/libcudart.so.13: $(FAKE_SRC)/cudart.c $(FAKE_SRC)/fakegpu.h $(B)/fake/libfakegpu.so
	$(CC) $(FAKE_CFLAGS) -shared -Wl,-soname,libcudart.so.13 -o $@ $< -L$(B)/fake -lfakegpu $(FAKE_RPATH)
$(B)/fake/libnccl.so.2: $(FAKE_SRC)/nccl.c $(FAKE_SRC)/fakegpu.h $(B)/fake/libfakegpu.so
	$(CC) $(FAKE_CFLAGS) -shared -Wl,-soname,libnccl.so.2 -o $@ $< -L$(B)/fake -lfakegpu $(FAKE_RPATH)
$(B)/fake/nvidia-smi: $(FAKE_SRC)/nvidia-smi.c $(FAKE_SRC)/fakegpu.h $(B)/fake/libfakegpu.so
	$(CC) $(FAKE_CFLAGS) -o $@ $< -L$(B)/fake -lfakegpu $(FAKE_RPATH)
$(B)/fake-cuda12/libcudart.so.12: $(FAKE_SRC)/cudart.c $(FAKE_SRC)/fakegpu.h $(B)/fake/libfakegpu.so
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -DFAKE_CUDART_MAJOR=12 -shared -Wl,-soname,libcudart.so.12 -o $@ $< -L$(B)/fake -lfakegpu $(FAKE_RPATH)
$(B)/fake-cuda12/libnccl.so.2: $(B)/fake/libnccl.so.2
	@mkdir -p $(@D)
	cp $< $@
$(B)/fake-oldnccl/libnccl.so.2: $(FAKE_SRC)/nccl.c $(FAKE_SRC)/fakegpu.h $(B)/fake/libfakegpu.so
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -DFAKE_NO_SCALABLE -shared -Wl,-soname,libnccl.so.2 -o $@ $< -L$(B)/fake -lfakegpu $(FAKE_RPATH)

FAKE_GPU := $(B)/fake/libfakegpu.so $(B)/fake/libcudart.so.13 $(B)/fake/libnccl.so.2 $(B)/fake/nvidia-smi \
            $(B)/fake-cuda12/libcudart.so.12 $(B)/fake-cuda12/libnccl.so.2 $(B)/fake-oldnccl/libnccl.so.2
TEST_BINS += $(FAKE_GPU)
LAB_BINS  += $(FAKE_GPU)
endif
endif

.PHONY: fake-gpu coverage-gpu
fake-gpu: $(FAKE_GPU)

# Every CUDA/NCCL call site of lib/runtime against the fake: libdistbind,
# dist-bind-check and the GPU tests built with gcov counters into
# $(B)/cov, the GPU tests and the runtime's unit tests run, then a report
# of lib/runtime's GPU files that lists each call site with its count and
# fails when one was never reached.
COV_FLAGS := -O0 -g --coverage
coverage-gpu:
	rm -rf $(B)/cov && mkdir -p $(B)/cov
	$(MAKE) --no-print-directory B=$(B)/cov OPT='$(COV_FLAGS)' LDFLAGS=--coverage \
	    $(B)/cov/libdistbind.so $(B)/cov/dist-bind-check \
	    $(patsubst $(B)/%,$(B)/cov/%,$(RT_GPU_TESTS) $(FAKE_GPU))
	DIST_BIND_BUILD=$(abspath $(B)/cov) tests/gpu/coverage.sh $(B)/cov
