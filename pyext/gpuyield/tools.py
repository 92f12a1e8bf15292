"""Where the rest of gpuyield lies beside this package, and the tools pip installs.

hook_path() is the preload library, libgpuyield.so: in the package's lib/ after `pip install .`,
in build/lib beside build/python after ./make.sh, in PREFIX/lib after make install. So
`LD_PRELOAD=$(python3 -m gpuyield hook-path)` works wherever `import gpuyield` does.

expcontroller(), run_exp() and nsight_parser() are pyproject.toml's console scripts: each execs
the program of its name that `pip install .` put in the package's bin/ (the same process: its
exit status and signals are the program's own). run_exp's workers run under the interpreter that
runs the script (GPUYIELD_PYTHON, unless set), the one the package was installed for.
"""
import errno
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _first(relative_paths):
    for relative in relative_paths:
        path = os.path.normpath(os.path.join(_HERE, relative))
        if os.path.exists(path):
            return path
    return None


def hook_path():
    """The path of the preload hook library libgpuyield.so that belongs to this package.
    Raises FileNotFoundError (one line saying what to do) where there is none."""
    # pip install (the package's own lib/), ./make.sh (build/python/gpuyield -> build/lib),
    # make install (PREFIX/lib/gpuyield/python/gpuyield -> PREFIX/lib).
    path = _first(["lib/libgpuyield.so", "../../lib/libgpuyield.so", "../../../libgpuyield.so"])
    if path is None:
        raise FileNotFoundError(
            errno.ENOENT, "gpuyield: no libgpuyield.so beside the package in %s: install the whole tool "
            "(pip install .) or build it (./make.sh) and use its build/python" % _HERE)
    return path


def _exec(tool):
    path = os.path.join(_HERE, "bin", tool)
    if not os.access(path, os.X_OK):
        sys.stderr.write("%s: %s is missing: this gpuyield package was installed without its tools; reinstall it "
                         "with pip install . from the source tree\n" % (tool, path))
        return 127
    if tool == "run_exp" and not os.environ.get("GPUYIELD_PYTHON"):
        os.environ["GPUYIELD_PYTHON"] = sys.executable
    os.execv(path, [tool] + sys.argv[1:])


def expcontroller():
    return _exec("expcontroller")


def run_exp():
    return _exec("run_exp")


def nsight_parser():
    return _exec("nsight-parser")
