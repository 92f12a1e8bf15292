"""bench/gpu/make_twin.sh: a commit's tree built into a folder for the matrix's @twin setups, with the
sources of its Python extension and its commit; the extension then builds from those sources (as
run_all.sh does on the GPU machine) and imports; an unknown commit is refused, nothing built."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "gpu", "make_twin.sh")


def git_head():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def test_a_commit_is_built_with_its_extension_sources_and_its_name(tmp_path):
    head = git_head()
    if not head:
        pytest.skip("not a git checkout")
    out = tmp_path / "twin"
    env = dict(os.environ, CUDA_HOME="")  # the build without the GPU parts, as on a machine without CUDA
    r = subprocess.run(["bash", SCRIPT, "HEAD", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (out / "COMMIT").read_text().strip() == head
    assert (out / "lib" / "libgpuyield.so").exists() and (out / "lib" / "libgycontrol.a").exists()
    assert all((out / "src" / d).is_dir() for d in ("pyext", "controller", "service"))
    assert not (out / "obj").exists() and f"{head} built into {out}" in r.stdout
    # the extension from the twin's own sources, for this interpreter, as run_all.sh builds it
    made = subprocess.run(["bash", "pyext/build_ext.sh", str(out)], cwd=out / "src", capture_output=True, text=True,
                          env=dict(os.environ, PYTHON_BIN=sys.executable), timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    imported = subprocess.run([sys.executable, "-c", "import gpuyield, sys; print(gpuyield.__file__)"],
                              capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(out / "python")))
    assert imported.returncode == 0 and imported.stdout.startswith(str(out / "python")), imported.stderr


def test_an_unknown_commit_is_refused_and_nothing_is_built(tmp_path):
    if not git_head():
        pytest.skip("not a git checkout")
    out = tmp_path / "twin"
    r = subprocess.run(["bash", SCRIPT, "no-such-commit-xyz", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "make_twin: no commit 'no-such-commit-xyz'" in r.stderr
    assert not out.exists()
