"""docs/performance.md and the README's performance summary are generated from the records
(bench/perf_page.py): regenerating them gives the committed files, and every figure the README
quotes comes from a record. A record, the template or the script changed without regenerating,
or a figure edited by hand, fails here."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import perf_page  # noqa: E402

FIGURE = re.compile(r"(?<![\w.:/])\d+\.\d+(?![\w.])|\b\d[\d ]*(?= ?(?:ns|µs|ms|%)\b)")


def read(path):
    with open(path) as f:
        return f.read()


def test_the_performance_page_is_the_generated_one():
    assert read(perf_page.PAGE) == perf_page.render_page(), \
        "docs/performance.md differs from what bench/perf_page.py makes: run python3 bench/perf_page.py"


def test_the_readme_summary_is_the_generated_one():
    readme = read(perf_page.README)
    assert readme == perf_page.render_readme(readme), \
        "README.md's perf-summary block differs from the records: run python3 bench/perf_page.py"


def outside_generated_and_code(text):
    text = text[:text.index(perf_page.BEGIN)] + text[text.index(perf_page.END):]
    return re.sub(r"```.*?```", "", text, flags=re.S)


def test_every_figure_the_readme_quotes_comes_from_a_record():
    """Outside the generated block (and code), a measured figure in the README must be one the
    block shows: a decimal or a quantity with a unit of time or a percentage."""
    readme = read(perf_page.README)
    block = perf_page.readme_summary()
    shown = set(re.findall(r"\d+\.\d+", block)) | set(re.findall(r"(\d+) ns", block))
    prose = outside_generated_and_code(readme)
    prose = re.sub(r"\b(?:driver|CUDA|PyTorch|Python) \d[\d.]*(?: and \d[\d.]*)?", "", prose)  # versions
    quoted = [m.group(0).strip() for m in FIGURE.finditer(prose)]
    # Not measurements: versions and configuration named in the prose.
    allowed = {"2.0"}  # Apache-2.0
    stray = [q for q in quoted if q not in shown and q not in allowed]
    assert not stray, f"README figures not from the generated summary: {stray}"


def test_the_check_catches_a_changed_record_figure(monkeypatch):
    real = perf_page.load

    def edited(record):
        data = real(record)
        if record == perf_page.VERDICT:
            data["pairs"]["reference"]["corun"]["hp_p50_ratio"]["value"] = 1.2345
        if record == perf_page.MATRIX:
            data["cells"][0]["setups"]["corun"]["hp_p50_ratio"]["value"] = 0.5
        return data
    monkeypatch.setattr(perf_page, "load", edited)
    assert read(perf_page.PAGE) != perf_page.render_page()
    readme = read(perf_page.README)
    assert readme != perf_page.render_readme(readme)


def test_a_stray_figure_in_the_readme_is_caught():
    prose = "corun keeps 0.47 of the LP's throughput and adds 90 ns"
    assert [m.group(0).strip() for m in FIGURE.finditer(prose)] == ["0.47", "90"]
