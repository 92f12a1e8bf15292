"""The strict parser (prom_text.py) rejects what Prometheus rejects or silently mangles."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prom_text import parse  # noqa: E402

GOOD = b'# HELP a_total A.\n# TYPE a_total counter\na_total{pid="1",name="x\\"y"} 3\na_total{pid="2",name="x"} 4\n'


def test_accepts_a_good_body():
    types, samples = parse(GOOD)
    assert types == {"a_total": "counter"}
    assert samples == [("a_total", {"pid": "1", "name": 'x"y'}, 3.0), ("a_total", {"pid": "2", "name": "x"}, 4.0)]


@pytest.mark.parametrize("body", [
    GOOD + b'a_total{name="x",pid="2"} 5\n',  # the same label set, in another order
    b'# TYPE a gauge\na{x="\xff"} 1\n',  # not UTF-8
    b'# TYPE a gauge\na{x="\\t"} 1\n',  # an escape Prometheus does not know
    b'# TYPE a gauge\na{x="1"} one\n',
    b'# TYPE a gauge\na 1\n# TYPE a gauge\n',
    b'# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x="2"} 1\n',  # a family split
    b'# TYPE a gauge\na{1x="1"} 1\n',
    b'# TYPE a gauge\na 1',  # no final newline
])
def test_rejects(body):
    with pytest.raises(ValueError):
        parse(body)
