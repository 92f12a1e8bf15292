"""The published verdict quotes the record it names, checked apart from the generator that writes it
(bench/perf_page.py; tests/python/test_perf_page.py checks that the files are its output): every
HP p50, HP p99 and LP throughput figure (value and interval) of the verdict table in
docs/performance.md is that record's value rounded to two places, and every figure of the README's
performance summary is the span or count it claims over the matrix record (matrix.json). A figure edited by hand, a record replaced without the pages, or a generator
that rounds or places a figure wrongly, fails here."""
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAIR_OF_ROW = {"FasterRCNN": "reference", "resnet50": "resnet", "encoder": "bert_train"}
NUMBER = r"(\d+\.\d+)"
CELL = re.compile(rf"{NUMBER} \[{NUMBER}, {NUMBER}\]")


def read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


def verdict_section():
    text = read("docs", "performance.md")
    start = text.index("## The policies, side by side (the verdict)")
    end = text.index("\n\n", text.index("| pair (HP / LP)", start))
    return text[start:end + 2] + text[end + 2:].split("\n", 1)[0]  # the table and its "Record:" line


def quoted_rows(section):
    """(pair, setup, [(value, lo, hi) for HP p50, HP p99, LP]) per table row."""
    pair = None
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith("| pair") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0]:
            pair = next(p for word, p in PAIR_OF_ROW.items() if cells[0].startswith(word))
        figures = [CELL.fullmatch(c) for c in cells[2:5]]
        assert all(figures), f"a verdict cell is not 'value [lo, hi]': {line}"
        yield pair, cells[1], [tuple(float(x) for x in m.groups()) for m in figures]


def close(quoted, exact):
    return abs(quoted - exact) <= 0.005 + 1e-9  # rounded to two places, either way at a half


def record_of(text):
    return json.load(open(os.path.join(ROOT, "bench", "results", re.search(r"`(?:bench/results/)?(2026-[^`]*/verdict\.json)`", text).group(1))))


def test_every_figure_of_the_published_verdict_matches_its_record():
    section = verdict_section()
    verdict = record_of(section)
    rows = list(quoted_rows(section))
    assert len(rows) == 12  # 3 pairs x nocontrol, mps, corun, partition
    for pair, setup, figures in rows:
        measured = verdict["pairs"][pair][setup]
        for key, (value, lo, hi) in zip(("hp_p50_ratio", "hp_p99_ratio", "lp_throughput_ratio"), figures):
            exact = measured[key]
            assert close(value, exact["value"]) and close(lo, exact["ci"][0]) and close(hi, exact["ci"][1]), \
                f"performance.md {pair} {setup} {key}: {value} [{lo}, {hi}], record {exact}"


MATRIX_SETUP = {"no control": "nocontrol", "MPS alone": "mps", "corun (MPS)": "corun", "partition (MPS)": "partition",
                "guarded (MPS)": "guarded"}
MATRIX_HP = ("gemm", "small", "frcnn720", "bert")  # the README's columns, in order


def test_every_figure_of_the_readme_summary_matches_its_record():
    """The README's matrix summary, read back cell by cell against matrix.json (not through the
    generator): per setup and HP kind the span of the p50 and LP ratios over the 25 % cells, and the
    count of cells meeting the HP target."""
    readme = read("README.md")
    block = readme[readme.index("<!-- perf-summary"):readme.index("<!-- /perf-summary -->")]
    path = re.search(r"`bench/results/(2026-[^`]*/matrix\.json)`", block).group(1)
    matrix = json.load(open(os.path.join(ROOT, "bench", "results", path)))
    rows = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| setup")]
    assert len(rows) == len(MATRIX_SETUP)
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        setup = MATRIX_SETUP[cells[0]]
        for hp, text in zip(MATRIX_HP, cells[1:5]):
            m = re.fullmatch(r"([0-9.]+)(?:-([0-9.]+))? · LP ([0-9.]+)(?:-([0-9.]+))?", text)
            assert m, f"README cell '{text}' is not 'p50 span · LP span'"
            rs = [c["setups"][setup] for c in matrix["cells"] if c["hp"] == hp and c["load"] == "poisson-25"]
            for key, lo, hi in (("hp_p50_ratio", m.group(1), m.group(2)), ("lp_throughput_ratio", m.group(3), m.group(4))):
                values = [r[key]["value"] for r in rs]
                assert close(float(lo), min(values)) and close(float(hi or lo), max(values)), \
                    f"README {setup} {hp} {key}: {text}, record {sorted(values)}"
        every = [c["setups"][setup] for c in matrix["cells"] if setup in c["setups"]]
        assert cells[5] == f"{sum(r['meets_hp_target'] for r in every)} of {len(every)}"


def test_the_check_catches_a_changed_figure():
    section = verdict_section().replace("| 1.01 [0.97, 1.04] |", "| 1.00 [0.97, 1.04] |")
    rows = {(p, s): f for p, s, f in quoted_rows(section)}
    assert rows[("bert_train", "partition")][0][0] == 1.00
    assert not close(1.00, 1.0056)
