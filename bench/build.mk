# Benchmark programs, built into $(O)/bench (not bin/: they are not tools a user installs).
# CPU benchmarks (GPU benchmarks are run by bench/gpu/run_all.sh on the GPU machine).
$(O)/bench/gate-bench: $(O)/obj/bench/gate_bench.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@
ALL += $(O)/bench/gate-bench
# The guarded rule replayed on job times measured on the GPU (bench/guard_replay.py runs it).
$(O)/bench/guard-replay: $(O)/obj/bench/guard_replay.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@
ALL += $(O)/bench/guard-replay

# GPU benchmark programs: need nvcc; skipped (make.sh says so) without the CUDA toolkit, and not
# built in the sanitizer variants.
ifneq ($(CUDA_HOME),)
ifeq ($(SAN),)
NVCC := $(CUDA_HOME)/bin/nvcc
NVCCFLAGS := -O2 -std=c++17 -arch=sm_90 -Xcompiler -Wall,-Werror -Icontroller -Ibench/gpu
$(O)/bench/launch-rate: bench/gpu/launch_rate.cu bench/gpu/spin_kernels.cuh bench/gpu/check_cuda.cuh
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $< -o $@
$(O)/bench/preempt-bench: bench/gpu/preempt_bench.cu bench/gpu/spin_kernels.cuh bench/gpu/check_cuda.cuh $(O)/obj/bench/gpu/job_shim.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $< $(O)/obj/bench/gpu/job_shim.o $(CONTROLLER_LIB) -o $@
$(O)/bench/launch-cost: bench/gpu/launch_cost.cu bench/gpu/spin_kernels.cuh bench/gpu/check_cuda.cuh
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $< -ldl -o $@
# The partition policy's proof: green-context facts (driver API: libcuda) and the LP/HP sides.
$(O)/bench/green-probe: bench/gpu/green_probe.cu bench/gpu/smid_kernels.cuh bench/gpu/check_cuda.cuh bench/gpu/spin_kernels.cuh
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $< -lcuda -o $@
$(O)/bench/partition-bench: bench/gpu/partition_bench.cu bench/gpu/smid_kernels.cuh bench/gpu/check_cuda.cuh $(O)/obj/bench/gpu/job_shim.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $< $(O)/obj/bench/gpu/job_shim.o $(CONTROLLER_LIB) -o $@
# The partition's cross-process proof: `part` and `rest` of one split, made in two processes, are disjoint.
$(O)/bench/disjoint-probe: bench/gpu/disjoint_probe.cu bench/gpu/smid_kernels.cuh bench/gpu/check_cuda.cuh
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $< -lcuda -o $@
ALL += $(O)/bench/launch-rate $(O)/bench/preempt-bench $(O)/bench/launch-cost $(O)/bench/green-probe $(O)/bench/partition-bench \
	$(O)/bench/disjoint-probe
endif
endif
