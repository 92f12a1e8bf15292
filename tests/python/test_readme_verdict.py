"""The README's verdict table quotes the record it names: every HP p50, HP p99 and LP throughput
figure (value and interval) is that record's value rounded to two places. A figure edited by hand,
or a record replaced without the README, fails here."""
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAIR_OF_ROW = {"FasterRCNN": "reference", "resnet50": "resnet", "encoder": "bert_train"}
NUMBER = r"(\d+\.\d+)"
CELL = re.compile(rf"{NUMBER} \[{NUMBER}, {NUMBER}\]")


def verdict_section():
    text = open(os.path.join(ROOT, "README.md")).read()
    start = text.index("**Verdict of the policies**")
    end = text.index("\n\n", text.index("| pair (HP / LP)", start))
    return text[start:end]


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


def test_every_figure_of_the_readme_verdict_matches_its_record():
    section = verdict_section()
    record = re.search(r"`(2026-[^`]*/verdict\.json)`", section).group(1)
    verdict = json.load(open(os.path.join(ROOT, "bench", "results", record)))
    rows = list(quoted_rows(section))
    assert len(rows) == 9
    for pair, setup, figures in rows:
        measured = verdict["pairs"][pair][setup]
        for key, (value, lo, hi) in zip(("hp_p50_ratio", "hp_p99_ratio", "lp_throughput_ratio"), figures):
            exact = measured[key]
            assert close(value, exact["value"]) and close(lo, exact["ci"][0]) and close(hi, exact["ci"][1]), \
                f"README {pair} {setup} {key}: {value} [{lo}, {hi}], record {exact}"


def test_the_check_catches_a_changed_figure():
    section = verdict_section().replace("| 1.01 [0.97, 1.04] |", "| 1.00 [0.97, 1.04] |")
    rows = {(p, s): f for p, s, f in quoted_rows(section)}
    assert rows[("bert_train", "partition")][0][0] == 1.00
    assert not close(1.00, 1.0056)
