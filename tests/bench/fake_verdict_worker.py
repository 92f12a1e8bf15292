"""A stand-in for gpuyield.worker in partition_verdict's dry run: the same arguments, pipes and job
loop (gpuyield.worker.run_jobs), with jobs that sleep instead of running a model (no torch, no
GPU). HP jobs 2 ms, LP jobs 5 ms; a kernel profile writes a small Chrome trace."""
import json
import sys
import time

from gpuyield import worker


def main():
    args = worker.parse_args(sys.argv[1:])
    link = worker.Link.from_env()
    seconds = 0.002 if args.priority > 0 else 0.005

    def run_job(kind="job"):
        time.sleep(seconds)
        return 0, 0

    def probe():
        return time.monotonic_ns()

    def profiler():
        with open(args.kernel_profile, "w") as f:
            json.dump({"traceEvents": [{"cat": "kernel", "name": "fake_kernel_%d" % i, "dur": 100.0 * i}
                                       for i in range(1, 11)]}, f)

    csv = worker.JobCsv(args.csv)
    latency = worker.LatencyCsv(args.latency_csv) if args.latency_csv else None
    try:
        worker.run_jobs(link, csv, run_job, args.priority, worker.job_marker(args.priority), args.sleep_time,
                        probe=probe, latency=latency, profiler=profiler if args.kernel_profile else None)
    finally:
        csv.close()
        if latency:
            latency.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
