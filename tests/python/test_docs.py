"""The README is the front door (issue 30): at most 250 lines; the two set-up commands verbatim (CI
runs the test command, .ci/run); a quick start of at most 10 lines with one `with seg.job(1)`; a
row in the policy table for every policy the controller defines; and every relative link of the
README, docs/ and examples/README.md leads to a file (and heading) that exists."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETUP_GPU = ("./make.sh deps && ./make.sh && build/bin/run_exp -f exp_configs/input_control.json && "
             "build/bin/gpuyield-python -m gpuyield.plot jct logs/input_control/*.csv -o logs/input_control/jct.png")
SETUP_TEST = "./make.sh deps && ./make.sh test"


def read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


def section(text, heading):
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end >= 0 else len(text)]


def test_readme_is_at_most_250_lines():
    assert len(read("README.md").splitlines()) <= 250


def test_the_two_set_up_commands_are_verbatim_and_ci_runs_the_second():
    blocks = re.findall(r"```sh\n(.*?)\n```", section(read("README.md"), "## Set up"), re.S)
    assert blocks[:2] == [SETUP_GPU, SETUP_TEST]
    assert read(".ci", "run").rstrip().splitlines()[-1] == SETUP_TEST


def test_the_quick_start_is_at_most_ten_lines_with_one_job_line():
    quick = section(read("README.md"), "## Quick start")
    code = [line for block in re.findall(r"```\w*\n(.*?)\n```", quick, re.S) for line in block.splitlines()]
    assert 0 < len(code) <= 10, code
    assert sum("with seg.job(1)" in line for line in code) == 1
    assert any("LD_PRELOAD=" in line for line in code) and any("GPUYIELD_PRIORITY=" in line for line in code)
    for f in ("infer.py", "train.py", "run.sh"):
        assert os.path.exists(os.path.join(ROOT, "examples", f))
    assert "with seg.job(1)" in read("examples", "infer.py")


def test_every_policy_has_a_row_in_the_readme_and_a_section_in_policies_md():
    policies = re.findall(r'X\(\w+, "(\w+)"', read("controller", "policies.h"))
    assert policies[:3] == ["drain", "corun", "partition"]
    table = section(read("README.md"), "## Policies")
    rows = re.findall(r"^\| `(\w+)` \|", table, re.M)
    assert rows == policies, f"README policy rows {rows}, controller/policies.h {policies}"
    page = read("docs", "policies.md")
    for name in policies:
        assert f"\n## {name}\n" in page, f"docs/policies.md has no section '## {name}'"


def slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    with open(path) as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


def test_every_relative_link_resolves():
    pages = [os.path.join(ROOT, "README.md")] + [os.path.join(ROOT, "docs", f) for f in sorted(os.listdir(
        os.path.join(ROOT, "docs"))) if f.endswith(".md")] + [os.path.join(ROOT, "examples", "README.md")]
    broken = []
    for page in pages:
        with open(page) as f:
            text = f.read()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"\w+://", target) or target.startswith("mailto:"):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(full):
                broken.append(f"{os.path.relpath(page, ROOT)}: {target} (no such file)")
            elif anchor and full.endswith(".md") and anchor not in anchors(full):
                broken.append(f"{os.path.relpath(page, ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_the_slug_rule():
    assert slug("The policies, side by side (the verdict)") == "the-policies-side-by-side-the-verdict"
    assert slug("Queue modes: what each bounds") == "queue-modes-what-each-bounds"


def test_every_python_test_file_runs_in_a_suite():
    """A test file no suite names never runs (tests/python/test_learning_blocks.py did not, from
    2026-12-02 until this test): each tests/python/test_*.py is named by a tests/suites/*.sh."""
    suites = "".join(open(os.path.join(ROOT, "tests", "suites", f)).read()
                     for f in os.listdir(os.path.join(ROOT, "tests", "suites")) if f.endswith(".sh"))
    files = [f for f in os.listdir(os.path.join(ROOT, "tests", "python")) if f.startswith("test_") and f.endswith(".py")]
    assert files and not [f for f in files if f"tests/python/{f}" not in suites]


def test_every_record_folder_has_a_row_in_the_results_index():
    """bench/results/README.md is how a reader finds a record: each folder there has its row
    (`| NAME/ | device | what it shows |`), and no row names a folder that is not there."""
    results = os.path.join(ROOT, "bench", "results")
    with open(os.path.join(results, "README.md")) as f:
        rows = set(re.findall(r"^\| ([\w.-]+)/ \|", f.read(), re.M))
    folders = {n for n in os.listdir(results) if os.path.isdir(os.path.join(results, n))}
    assert not folders - rows, f"record folders with no row in bench/results/README.md: {sorted(folders - rows)}"
    assert not rows - folders, f"rows naming no folder: {sorted(rows - folders)}"
