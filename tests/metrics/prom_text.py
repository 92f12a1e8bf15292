"""A strict parser of the Prometheus text exposition format 0.0.4, as Prometheus' own scrape
parser enforces it: the body is UTF-8, metric and label names match their grammar, label values
use only the escapes \\\\ \\" \\n, a family's HELP and TYPE come once and before its samples, a
family's samples are contiguous, and no sample repeats a name and label set (Prometheus keeps one
of two such samples and says nothing: issue 28). Raises ValueError naming the line.

parse(body: bytes) -> (types: {family: kind}, samples: [(name, {label: value}, float)])
"""
import math
import re

METRIC = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
KINDS = {"counter", "gauge", "histogram", "summary", "untyped"}


def _labels(text, at, where):
    """Parses '{a="x",b="y"}' from text[at] == '{'; returns (labels, index after '}')."""
    labels = {}
    i = at + 1
    while True:
        if text[i:i + 1] == "}":
            return labels, i + 1
        m = LABEL.match(text, i)
        if not m:
            raise ValueError("%s: bad label name at %d" % (where, i))
        name = m.group(0)
        i = m.end()
        if text[i:i + 2] != '="':
            raise ValueError("%s: expected =\" after label %s" % (where, name))
        i += 2
        value = []
        while True:
            if i >= len(text):
                raise ValueError("%s: unterminated value of label %s" % (where, name))
            c = text[i]
            if c == "\\":
                nxt = text[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise ValueError("%s: bad escape \\%s in label %s" % (where, nxt, name))
                value.append("\n" if nxt == "n" else nxt)
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise ValueError("%s: raw newline in label %s" % (where, name))
            else:
                value.append(c)
                i += 1
        if name in labels:
            raise ValueError("%s: label %s given twice" % (where, name))
        labels[name] = "".join(value)
        if text[i:i + 1] == ",":
            i += 1
        elif text[i:i + 1] != "}":
            raise ValueError("%s: expected , or } after label %s" % (where, name))


def _family(name, types):
    """The family a sample belongs to (a histogram's _bucket/_sum/_count belong to theirs)."""
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[:-len(suffix)]) in ("histogram", "summary"):
            return name[:-len(suffix)]
    return name


def parse(body):
    text = body.decode("utf-8")  # strict: a byte that is not UTF-8 fails the whole scrape
    if text and not text.endswith("\n"):
        raise ValueError("the body does not end with a newline")
    types, helps, samples, seen, done = {}, set(), [], set(), set()
    current = None
    for number, line in enumerate(text.split("\n")[:-1], 1):
        where = "line %d %r" % (number, line)
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not METRIC.fullmatch(name):
                    raise ValueError("%s: bad metric name" % where)
                if parts[1] == "TYPE":
                    if name in types:
                        raise ValueError("%s: second TYPE for %s" % (where, name))
                    if len(parts) != 4 or parts[3] not in KINDS:
                        raise ValueError("%s: bad type" % where)
                    if name in done or name == current:
                        raise ValueError("%s: TYPE after samples of %s" % (where, name))
                    types[name] = parts[3]
                else:
                    if name in helps:
                        raise ValueError("%s: second HELP for %s" % (where, name))
                    helps.add(name)
            continue
        if not line.strip():
            continue
        m = METRIC.match(line)
        if not m:
            raise ValueError("%s: bad metric name" % where)
        name = m.group(0)
        i = m.end()
        labels = {}
        if line[i:i + 1] == "{":
            labels, i = _labels(line, i, where)
        rest = line[i:].split(" ")
        if len(rest) < 2 or rest[0] != "" or len(rest) > 3:
            raise ValueError("%s: expected ' VALUE [TIMESTAMP]'" % where)
        try:
            value = float(rest[1])
        except ValueError:
            raise ValueError("%s: bad value %r" % (where, rest[1]))
        if math.isnan(value) and rest[1] != "NaN":
            raise ValueError("%s: bad value %r" % (where, rest[1]))
        family = _family(name, types)
        if family != current:
            if family in done:
                raise ValueError("%s: samples of %s are not together" % (where, family))
            if current is not None:
                done.add(current)
            current = family
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            raise ValueError("%s: repeated label set for %s: %s" % (where, name, labels))
        seen.add(key)
        samples.append((name, labels, value))
    return types, samples
