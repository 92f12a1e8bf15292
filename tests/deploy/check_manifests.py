"""Checks the example manifests in deploy/: valid YAML, and the fields gpuyield needs in each
(a shared pid namespace, the same /dev/shm, LD_PRELOAD of the hook, `expcontroller serve --metrics`),
one metrics port in all of them; and deploy/Dockerfile (parsed, not built: no docker here): CUDA
base images (devel to build, runtime to run), the project's build, make install at the prefix the
manifests use, the Python package, the manifests' metrics port and uid, and a .dockerignore beside
DEPLOY_DIR that keeps a host build/ out of the context.
Prints "ok NAME" or "FAIL NAME: why" per check; exit 1 when any failed.

usage: check_manifests.py DEPLOY_DIR
"""
import json
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


# What the manifests have in common, collected as they are read: the metrics ports (of every
# `serve --metrics`, containerPort, annotation, probe and published port), the install prefixes
# (LD_PRELOAD=PREFIX/lib/libgpuyield.so) and the uids; the Dockerfile must agree with them.
metrics_ports = {}  # port -> where
prefixes = set()
uids = set()


def note_port(port, where):
    metrics_ports.setdefault(str(port), []).append(where)


def metrics_port_of(command):
    command = [str(c) for c in command or []]
    if "--metrics" in command[:-1]:
        return command[command.index("--metrics") + 1].rsplit(":", 1)[-1]
    return None


def note_preload(value):
    if value.endswith("/lib/libgpuyield.so"):
        prefixes.add(value[: -len("/lib/libgpuyield.so")])


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
        uid = spec.get("securityContext", {}).get("runAsUser")
        check("%s_one_uid" % what, uid is not None, "needs securityContext.runAsUser (one uid for the segment)")
        uids.add(str(uid))
        annotations = (doc["metadata"] if doc["kind"] == "Pod" else doc["spec"]["template"]["metadata"]).get("annotations", {})
        if "prometheus.io/port" in annotations:
            note_port(annotations["prometheus.io/port"], "%s annotation" % what)
        for c in spec["containers"]:
            if metrics_port_of(c.get("command")):
                note_port(metrics_port_of(c.get("command")), "%s serve --metrics" % what)
                for p in c.get("ports", []):
                    note_port(p["containerPort"], "%s containerPort" % what)
                probe = c.get("readinessProbe", {}).get("httpGet")
                if probe:
                    note_port(probe["port"], "%s readinessProbe" % what)
            note_preload(env_of(c).get("LD_PRELOAD", ""))
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
        note_port(metrics_port_of(s.get("command")), "compose serve --metrics")
        for published in s.get("ports", []):
            note_port(str(published).rsplit(":", 1)[-1], "compose ports")
        continue
    note_preload(str(s.get("environment", {}).get("LD_PRELOAD", "")))
    check("compose_%s_shares_dev_shm" % n, s.get("ipc") in ("host", "service:%s" % owner[0]), s.get("ipc"))
    check("compose_%s_shares_pids" % n, s.get("pid") in ("host", "service:%s" % owner[0]), s.get("pid"))
    env = s.get("environment", {})
    check("compose_%s_preloads_the_hook" % n, str(env.get("LD_PRELOAD", "")).endswith("/libgpuyield.so")
          and env.get("GPUYIELD_SHM"), env)
check("compose_one_uid", len({s.get("user") for s in services.values()}) == 1 and None not in
      {s.get("user") for s in services.values()}, [s.get("user") for s in services.values()])
uids.update(str(s.get("user")).split(":")[0] for s in services.values())

# Slurm: valid shell, serve with --metrics, the workers' environment
for name in ("gpuyield-job.sbatch", "prolog.sh", "epilog.sh"):
    path = os.path.join(deploy, "slurm", name)
    check("slurm_%s_is_valid_bash" % name, subprocess.run(["bash", "-n", path]).returncode == 0)
job = open(os.path.join(deploy, "slurm", "gpuyield-job.sbatch")).read()
prolog = open(os.path.join(deploy, "slurm", "prolog.sh")).read()
for name, text in (("job", job), ("prolog", prolog)):
    check("slurm_%s_serves_metrics" % name, re.search(r'expcontroller" serve --name "\S+" --metrics', text))
    for port in re.findall(r'--metrics "\$\{GPUYIELD_METRICS_PORT:-(\d+)\}"', text):
        note_port(port, "slurm %s default port" % name)
check("slurm_job_preloads_the_hook", "LD_PRELOAD=$GY/lib/libgpuyield.so" in job and "GPUYIELD_SHM=job$SLURM_JOB_ID" in job)
check("slurm_epilog_stops_serve", "kill -TERM" in open(os.path.join(deploy, "slurm", "epilog.sh")).read())
for m in re.finditer(r'GY=\$\{GY:-(\S+?)\}', job):
    prefixes.add(m.group(1))

check("manifests_one_metrics_port", len(metrics_ports) == 1, metrics_ports)
check("manifests_one_prefix", len(prefixes) == 1, prefixes)
check("manifests_one_uid", len(uids) == 1, uids)
(PORT,) = metrics_ports if len(metrics_ports) == 1 else ("9745",)
(PREFIX,) = prefixes if len(prefixes) == 1 else ("/opt/gpuyield",)


# Dockerfile: instructions (continuations joined, comments dropped) per stage, ARGs substituted.
def dockerfile(path):
    instructions, pending = [], ""
    for line in open(path):
        line = line.rstrip("\n")
        if line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        text = (pending + line).strip()
        pending = ""
        if text:
            word, _, rest = text.partition(" ")
            instructions.append((word.upper(), " ".join(rest.split())))
    return instructions


def substitute(text, args):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), text)


path = os.path.join(deploy, "Dockerfile")
check("dockerfile_exists", os.path.exists(path), path)
if os.path.exists(path):
    args, stages = {}, []  # stages: [image, name, [(instruction, text)...]]
    for word, text in dockerfile(path):
        if word == "ARG" and not stages:
            name, _, default = text.partition("=")
            args[name] = default
        elif word == "FROM":
            image, _, name = substitute(text, args).partition(" AS ")
            if " as " in image:
                image, _, name = image.partition(" as ")
            stages.append([image.strip(), name.strip(), []])
        elif stages:
            stages[-1][2].append((word, text))
    check("dockerfile_has_build_and_runtime_stages", len(stages) >= 2, [s[:2] for s in stages])
    cuda = re.compile(r"^(?:docker\.io/|nvcr\.io/)?nvidia/cuda:(\d+\.\d+(?:\.\d+)?)-(devel|runtime)-(\S+)$")
    build = [s for s in stages if cuda.match(s[0]) and cuda.match(s[0]).group(2) == "devel" and s[1]]
    final = stages[-1] if stages else ["", "", []]
    check("dockerfile_builds_on_cuda_devel", len(build) == 1, [s[:2] for s in stages])
    check("dockerfile_runs_on_cuda_runtime", bool(cuda.match(final[0])) and cuda.match(final[0]).group(2) == "runtime",
          final[0])
    if build and cuda.match(final[0]):
        check("dockerfile_same_cuda_and_os", cuda.match(build[0][0]).groups()[::2] == cuda.match(final[0]).groups()[::2],
              (build[0][0], final[0]))
    build_runs = " ; ".join(t for w, t in (build[0][2] if build else []) if w == "RUN")
    final_runs = " ; ".join(t for w, t in final[2] if w == "RUN")
    for package in ("build-essential", "libjansson-dev", "libsqlite3-dev", "python3-dev", "python3-setuptools",
                    "python3-wheel"):
        check("dockerfile_build_installs_%s" % package, re.search(r"apt-get install .*\b%s\b" % package, build_runs),
              "the build stage must install %s (make.sh's DEBIAN_PACKAGES)" % package)
    check("dockerfile_copies_the_sources", any(w == "COPY" and t.split()[0] == "." for w, t in (build[0][2] if build else [])),
          "the build stage must COPY . (the repository root is the context)")
    check("dockerfile_runs_the_build", re.search(r"(^|&&|;)\s*\./make\.sh\s*(&&|;|$)", build_runs),
          "the build stage must run ./make.sh (the project's build)")
    check("dockerfile_installs_at_the_manifests_prefix", re.search(r"\bmake install PREFIX=%s(\s|$)" % re.escape(PREFIX),
                                                                  build_runs), "make install PREFIX=%s" % PREFIX)
    check("dockerfile_installs_the_python_package",
          re.search(r"pip install (?=.*--no-build-isolation)(?=.*--no-index).*\s\.(\s|$)", build_runs),
          "pip install --no-build-isolation --no-index . (offline, the tree's own package)")
    copies = [t.split() for w, t in final[2] if w == "COPY" and t.startswith("--from=")]
    check("dockerfile_runtime_copies_the_install",
          any(c[0] == "--from=%s" % (build[0][1] if build else "?") and c[1].rstrip("/") == PREFIX for c in copies),
          "COPY --from=<build stage> %s" % PREFIX)
    check("dockerfile_runtime_copies_the_python_package", len(copies) >= 2, copies)
    for package in ("python3", "libjansson4", "libsqlite3-0"):
        check("dockerfile_runtime_installs_%s" % package, re.search(r"apt-get install .*\b%s(\s|$)" % package, final_runs),
              "the runtime stage needs %s (the tools link it)" % package)
    exposed = [t for w, t in final[2] if w == "EXPOSE"]
    check("dockerfile_exposes_the_metrics_port", [p.split("/")[0] for e in exposed for p in e.split()] == [PORT],
          "EXPOSE %s (the manifests' port), got %s" % (PORT, exposed))
    cmd = [t for w, t in final[2] if w == "CMD"]
    try:
        cmd = json.loads(cmd[-1]) if cmd else []
    except ValueError:
        cmd = []
    check("dockerfile_cmd_serves_metrics", serves_metrics(cmd) and metrics_port_of(cmd) == PORT
          and cmd[0] == PREFIX + "/bin/expcontroller", cmd)
    users = [t for w, t in final[2] if w == "USER"]
    check("dockerfile_user_is_the_manifests", bool(users) and users[-1].split(":")[0] in uids, (users, uids))
    ignore = os.path.join(deploy, "..", ".dockerignore")
    patterns = [l.strip() for l in open(ignore)] if os.path.exists(ignore) else []
    check("dockerignore_keeps_build_out", any(p.strip("/") == "build" for p in patterns),
          "%s must exclude build (a host build's objects would count as up to date in the image)" % ignore)
sys.exit(1 if failures else 0)
