# CPU benchmarks (GPU benchmarks are run by bench/gpu/run_all.sh on the GPU machine).
$(O)/bin/gate-bench: $(O)/obj/bench/gate_bench.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@
ALL += $(O)/bin/gate-bench

# GPU benchmark programs: need nvcc; skipped (make.sh says so) without the CUDA toolkit, and not
# built in the sanitizer variants.
ifneq ($(CUDA_HOME),)
ifeq ($(SAN),)
NVCC := $(CUDA_HOME)/bin/nvcc
NVCCFLAGS := -O2 -std=c++17 -arch=sm_90 -Xcompiler -Wall,-Werror -Icontroller -Ibench/gpu
$(O)/bin/launch-rate: bench/gpu/launch_rate.cu bench/gpu/spin_kernels.cuh bench/gpu/check_cuda.cuh
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $< -o $@
$(O)/bin/preempt-bench: bench/gpu/preempt_bench.cu bench/gpu/spin_kernels.cuh bench/gpu/check_cuda.cuh $(O)/obj/bench/gpu/job_shim.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $< $(O)/obj/bench/gpu/job_shim.o $(CONTROLLER_LIB) -o $@
$(O)/bin/launch-cost: bench/gpu/launch_cost.cu bench/gpu/spin_kernels.cuh bench/gpu/check_cuda.cuh
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $< -ldl -o $@
ALL += $(O)/bin/launch-rate $(O)/bin/preempt-bench $(O)/bin/launch-cost
endif
endif
