"""bench/gpu/run_all.sh (the one GPU runner) against bench/gpu/README.md (its stage table): the same
stages, the same recheck, every script the table names exists, and every file of bench/gpu is named
in the README, so that the two cannot drift apart and no script is left outside the runner."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU = os.path.join(ROOT, "bench", "gpu")


def runner():
    return open(os.path.join(GPU, "run_all.sh")).read()


def readme():
    return open(os.path.join(GPU, "README.md")).read()


def runner_stages():
    body = runner()
    body = body[body.index("case $stage in"):body.index("esac")]
    labels = re.findall(r"^    ([a-z][a-z0-9|-]*)\)", body, re.M)
    return [s for label in labels for s in label.split("|")]


def table_rows():
    """(stage, script cell) of every row of the README's stage table."""
    text = readme()
    section = text[text.index("## Stages"):text.index("## Shared by the stages")]
    rows = []
    for line in section.splitlines():
        m = re.match(r"\| `([a-z][a-z0-9-]*)` \|[^|]*\| ([^|]*) \|", line)
        if m:
            rows.append((m.group(1), m.group(2)))
    return rows


def test_the_readme_lists_exactly_the_runners_stages_in_its_order():
    stages = runner_stages()
    assert len(stages) == len(set(stages)), stages
    assert [s for s, _ in table_rows()] == stages


def test_the_recheck_is_the_same_in_both():
    expansion = re.search(r'stages\+=\(([a-z -]+)\); else', runner()).group(1).split()
    said = re.search(r"`recheck` = `([a-z -]+)`", readme()).group(1).split()
    assert said == expansion and all(s in runner_stages() for s in expansion)


def test_every_script_the_table_names_exists():
    for stage, cell in table_rows():
        names = re.findall(r"`([^`]+\.(?:sh|py|cu))`", cell)
        assert names, f"stage {stage}: no script named"
        for name in names:
            path = os.path.join(ROOT, name) if "/" in name else os.path.join(GPU, name)
            assert os.path.exists(path), f"stage {stage}: {name} does not exist"


def test_the_runner_calls_each_stages_script():
    body = runner()
    for stage, cell in table_rows():
        script = re.search(r"`([^`]+\.(?:sh|py))`", cell).group(1)
        call = script if "/" in script else "bench/gpu/" + script
        if call.endswith(".py"):
            call = call[:-3].replace("/", ".")
        arm = re.search(r"^    (?:[a-z|-]+\|)?" + re.escape(stage) + r"(?:\|[a-z|-]+)?\)(.*?);;", body, re.M | re.S)
        assert arm and call in arm.group(1), f"stage {stage} does not run {call}"


def test_every_file_of_bench_gpu_is_named_in_the_readme():
    text = readme()
    files = [f for f in os.listdir(GPU) if os.path.isfile(os.path.join(GPU, f))]
    left_out = [f for f in files if f not in ("__init__.py", "README.md") and not f.endswith(".pyc")
                and not re.search(r"`" + re.escape(f) + r"`|`" + re.escape(os.path.splitext(f)[0]) + r"\.", text)]
    assert not left_out, f"not in bench/gpu/README.md: {left_out}"


def test_the_runner_is_valid_bash():
    assert subprocess.run(["bash", "-n", os.path.join(GPU, "run_all.sh")]).returncode == 0
