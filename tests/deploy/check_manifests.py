"""Checks the example manifests in deploy/: valid YAML, and the fields gpuyield needs in each
(a shared pid namespace, the same /dev/shm, LD_PRELOAD of the hook, `expcontroller serve --metrics`).
Prints "ok NAME" or "FAIL NAME: why" per check; exit 1 when any failed.

usage: check_manifests.py DEPLOY_DIR
"""
import os
import re
import subprocess
import sys

import yaml

deploy = sys.argv[1]
failures = 0


def check(name, condition, why=""):
    global failures
    print(("ok   %s" % name) if condition else ("FAIL %s: %s" % (name, why)))
    failures += not condition


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def serves_metrics(command):
    command = [str(c) for c in command or []]
    return bool(command) and command[0].endswith("expcontroller") and command[1:2] == ["serve"] and "--metrics" in command


def env_of(container):
    return {e["name"]: str(e.get("value", "")) for e in container.get("env", [])}


def pod_specs(doc):
    if doc["kind"] == "Pod":
        return doc["spec"]
    return doc["spec"]["template"]["spec"]


# Kubernetes
for name in ("pod.yaml", "daemonset.yaml"):
    docs = load_all(os.path.join(deploy, "k8s", name))
    check("k8s_%s_parses" % name, docs and all(isinstance(d, dict) and d.get("kind") for d in docs), docs)
    for doc in docs:
        what = "%s/%s" % (name, doc["metadata"]["name"])
        spec = pod_specs(doc)
        check("%s_shares_pids" % what, spec.get("shareProcessNamespace") is True or spec.get("hostPID") is True,
              "needs shareProcessNamespace: true or hostPID: true")
        shm_volumes = {v["name"] for v in spec.get("volumes", []) if v.get("emptyDir", {}).get("medium") == "Memory"}
        for c in spec["containers"]:
            mounts = {m["name"] for m in c.get("volumeMounts", []) if m["mountPath"] == "/dev/shm"}
            check("%s_%s_shares_dev_shm" % (what, c["name"]), spec.get("hostIPC") is True or mounts & shm_volumes,
                  "needs hostIPC: true or an emptyDir (medium: Memory) mounted at /dev/shm")
        uids = {spec.get("securityContext", {}).get("runAsUser")}
        check("%s_one_uid" % what, None not in uids, "needs securityContext.runAsUser (one uid for the segment)")
        workers = [c for c in spec["containers"] if not serves_metrics(c.get("command"))]
        check("%s_workers_preload_the_hook" % what,
              all(env_of(c).get("LD_PRELOAD", "").endswith("/libgpuyield.so") and env_of(c).get("GPUYIELD_SHM")
                  for c in workers), "every worker needs LD_PRELOAD=.../libgpuyield.so and GPUYIELD_SHM")
        if doc["kind"] == "DaemonSet" or name == "pod.yaml":
            check("%s_serves_metrics" % what, any(serves_metrics(c.get("command")) for c in spec["containers"]),
                  "a container must run expcontroller serve --metrics")
    kinds = sorted(d["kind"] for d in docs)
    check("k8s_%s_kinds" % name, kinds == (["Pod"] if name == "pod.yaml" else ["DaemonSet", "Pod"]), kinds)

# docker compose
(compose,) = load_all(os.path.join(deploy, "docker-compose.yml"))
services = compose["services"]
owner = [n for n, s in services.items() if serves_metrics(s.get("command"))]
check("compose_serves_metrics", len(owner) == 1, owner)
for n, s in services.items():
    if n in owner:
        check("compose_%s_ipc_shareable" % n, s.get("ipc") in ("shareable", "host"), s.get("ipc"))
        continue
    check("compose_%s_shares_dev_shm" % n, s.get("ipc") in ("host", "service:%s" % owner[0]), s.get("ipc"))
    check("compose_%s_shares_pids" % n, s.get("pid") in ("host", "service:%s" % owner[0]), s.get("pid"))
    env = s.get("environment", {})
    check("compose_%s_preloads_the_hook" % n, str(env.get("LD_PRELOAD", "")).endswith("/libgpuyield.so")
          and env.get("GPUYIELD_SHM"), env)
check("compose_one_uid", len({s.get("user") for s in services.values()}) == 1 and None not in
      {s.get("user") for s in services.values()}, [s.get("user") for s in services.values()])

# Slurm: valid shell, serve with --metrics, the workers' environment
for name in ("gpuyield-job.sbatch", "prolog.sh", "epilog.sh"):
    path = os.path.join(deploy, "slurm", name)
    check("slurm_%s_is_valid_bash" % name, subprocess.run(["bash", "-n", path]).returncode == 0)
job = open(os.path.join(deploy, "slurm", "gpuyield-job.sbatch")).read()
prolog = open(os.path.join(deploy, "slurm", "prolog.sh")).read()
for name, text in (("job", job), ("prolog", prolog)):
    check("slurm_%s_serves_metrics" % name, re.search(r'expcontroller" serve --name "\S+" --metrics', text))
check("slurm_job_preloads_the_hook", "LD_PRELOAD=$GY/lib/libgpuyield.so" in job and "GPUYIELD_SHM=job$SLURM_JOB_ID" in job)
check("slurm_epilog_stops_serve", "kill -TERM" in open(os.path.join(deploy, "slurm", "epilog.sh")).read())
sys.exit(1 if failures else 0)
