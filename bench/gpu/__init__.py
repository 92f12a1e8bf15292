"""The benchmarks that run on the GPU machine (bench/gpu/run_all.sh); statistics in bench.gpu.stats."""
