"""The build backend of `pip install .` (pyproject.toml): setuptools' own, after one check that
the interpreter can build a wheel at all. Without it pip fails deep inside setuptools, with
`invalid command 'bdist_wheel'` (a venv's setuptools older than 70.1 and no wheel: a plain venv
offline with --no-build-isolation) or a traceback (no setuptools: a Python 3.12 venv); with it,
one line says what to install. Under pip's build isolation (online) pip installs what
pyproject.toml requires and the check passes."""
import re
import sys


def _missing():
    """What this interpreter lacks to build gpuyield's wheel, or None."""
    try:
        import setuptools
    except ImportError:
        return "setuptools", "has no setuptools"
    version = tuple(int(n) for n in re.findall(r"\d+", setuptools.__version__)[:2])
    if version < (61,):
        return "setuptools>=61", "has setuptools %s, older than 61 (pyproject.toml's [project])" % setuptools.__version__
    if version < (70, 1):  # setuptools has its own bdist_wheel from 70.1 on
        try:
            import wheel  # noqa: F401
        except ImportError:
            return "wheel", "has setuptools %s without wheel (bdist_wheel)" % setuptools.__version__
    return None


_lacks = _missing()
if _lacks:
    sys.stderr.write(
        "gpuyield: cannot build: %s %s; online: pip install '%s' (or leave out --no-build-isolation); offline: "
        "use /usr/bin/python3 with Debian's python3-setuptools and python3-wheel (./make.sh deps), or a venv made "
        "by /usr/bin/python3 -m venv --system-site-packages, and pip install --no-build-isolation .\n"
        % (sys.executable, _lacks[1], _lacks[0]))
    sys.exit(1)

from setuptools.build_meta import *  # noqa: E402,F401,F403
