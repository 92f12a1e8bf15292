# CPU benchmarks (GPU benchmarks are run by bench/gpu/run_all.sh on the GPU machine).
$(O)/bin/gate-bench: $(O)/obj/bench/gate_bench.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@
ALL += $(O)/bin/gate-bench
