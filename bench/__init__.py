"""The benchmarks, as a package: run the scripts from the repository root as `python3 -m bench.gpu.X`."""
