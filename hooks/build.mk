# hooks/: the preloadable library libgpuyield.so; tests/fakecuda/: the fake libcuda.so.1 that
# the CPU tests run it against; tests/hooks/: the test programs of tests/suites/30-hooks.sh.
HOOKS_SRC := $(filter-out hooks/cuda_abi_check.c,$(wildcard hooks/*.c))
HOOKS_LIB := $(O)/lib/libgpuyield.so

# Only the hooks are exported (exports.map.in); our own calls bind inside the library.
$(O)/obj/hooks/%.o: CFLAGS += -fvisibility=hidden -fno-semantic-interposition
ifneq ($(CUDA_HOME),)
ifneq ($(wildcard $(CUDA_HOME)/include/nvtx3/nvToolsExt.h),)
$(O)/obj/hooks/trace_ranges.o: CFLAGS += -DGY_NVTX -isystem $(CUDA_HOME)/include
endif
# Compiling this object is the check that cuda_abi.h agrees with the real cuda.h.
$(O)/obj/hooks/cuda_abi_check.o: CFLAGS += -isystem $(CUDA_HOME)/include
ALL += $(O)/obj/hooks/cuda_abi_check.o
endif

# The version script, expanded from the table of hooked functions (hooked_functions.h).
HOOKS_EXPORTS := $(O)/gen/hooks/exports.map
$(HOOKS_EXPORTS): hooks/exports.map.in hooks/hooked_functions.h
	@mkdir -p $(dir $@)
	$(CC) -E -P -x c -Ihooks $< -o $@

$(HOOKS_LIB): $(HOOKS_SRC:%.c=$(O)/obj/%.o) $(CONTROLLER_LIB) $(HOOKS_EXPORTS)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,--version-script=$(HOOKS_EXPORTS) -Wl,-Bsymbolic -Wl,-z,defs \
		$(filter %.o %.a,$^) -ldl -o $@

# The fake driver: exports only the CUDA names (FK_EXPORT); -Bsymbolic so that, like the real
# driver, the pointers its resolver hands out are its own functions, never an interposer's.
FAKECUDA_SRC := $(wildcard tests/fakecuda/*.c)
FAKECUDA_LIB := $(O)/fakecuda/libcuda.so.1
$(O)/obj/tests/fakecuda/%.o: CFLAGS += -fvisibility=hidden -Itests/fakecuda
$(FAKECUDA_LIB): $(FAKECUDA_SRC:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,defs $^ -o $@

# The same fake as an older driver (no cuEventElapsedTime_v2): the hook must fall back.
FAKECUDA_OLD_LIB := $(O)/fakecuda-old/libcuda.so.1
$(O)/obj-old/tests/fakecuda/%.o: tests/fakecuda/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fvisibility=hidden -Itests/fakecuda -DFK_OLD_DRIVER -MMD -MP -c $< -o $@
$(FAKECUDA_OLD_LIB): $(FAKECUDA_SRC:%.c=$(O)/obj-old/%.o)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,defs $^ -o $@

# Test programs: a worker that runs under the hook against the fake driver, and the test driver
# that starts workers in fresh processes and checks the fake driver's log and the counters.
$(O)/obj/tests/hooks/%.o: CFLAGS += -Itests/fakecuda -Itests/lib
# Two libraries loaded after the hook, in this order, for the RTLD_NEXT case.
$(O)/tests/hooks/libgy_next_%.so: $(O)/obj/tests/hooks/next_%.o
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libgy_next_$*.so $^ -ldl -o $@
HOOKS_NEXT_LIBS := $(O)/tests/hooks/libgy_next_first.so $(O)/tests/hooks/libgy_next_second.so
$(O)/tests/hooks/cuda_worker: $(O)/obj/tests/hooks/cuda_worker.o $(O)/obj/tests/hooks/partition_scenarios.o \
		$(O)/obj/tests/hooks/guarded_scenarios.o $(O)/obj/tests/hooks/worker_check.o \
		$(O)/obj/tests/hooks/fake_log.o $(FAKECUDA_LIB) \
		$(HOOKS_NEXT_LIBS) $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(filter %.o %.a,$^) -Wl,--no-as-needed $(FAKECUDA_LIB) $(HOOKS_NEXT_LIBS) \
		-Wl,--as-needed -Wl,-rpath,'$$ORIGIN' -ldl -o $@
# The table's hooked names, one a line: what 30-hooks.sh expects `nm -D` and exports.map to list.
$(O)/obj/tests/hooks/hooked_names.o: CFLAGS += -Ihooks
$(O)/tests/hooks/hooked_names: $(O)/obj/tests/hooks/hooked_names.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@
$(O)/tests/hooks/test_hooks: $(O)/obj/tests/hooks/test_hooks.o $(O)/obj/tests/hooks/fake_log.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@

ALL += $(HOOKS_LIB) $(FAKECUDA_LIB) $(FAKECUDA_OLD_LIB) $(O)/tests/hooks/cuda_worker $(O)/tests/hooks/test_hooks \
	$(O)/tests/hooks/hooked_names

# An NVTX injection library that logs process ranges (the auto jobs' ranges test); with the hook's
# ranges, only where the toolkit's NVTX headers are (test_hooks skips the test without it).
ifneq ($(CUDA_HOME),)
ifneq ($(wildcard $(CUDA_HOME)/include/nvtx3/nvToolsExt.h),)
$(O)/obj/tests/hooks/nvtx_log.o: CFLAGS += -fvisibility=hidden -isystem $(CUDA_HOME)/include
$(O)/tests/hooks/libnvtx_log.so: $(O)/obj/tests/hooks/nvtx_log.o
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) $^ -o $@
ALL += $(O)/tests/hooks/libnvtx_log.so
endif
endif
