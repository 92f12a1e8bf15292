"""What `pip install .` builds, which pyproject.toml cannot describe by itself: the whole tool,
inside the package. build_ext runs the project's own build, `./make.sh package DIR` (build.mk's
`installed` target and pyext/build_ext.sh, where the compile flags live), for the interpreter that
runs pip, then copies its outputs into the package:

    gpuyield/_gpuyield*.so   the extension (import gpuyield)
    gpuyield/bin/            expcontroller, run_exp, nsight-parser, gpuyield-standin
    gpuyield/lib/            libgpuyield.so (the hook: gpuyield.hook_path()), libgeek.so, libcuinterpose*.so
    gpuyield/fakecuda/       libcuda.so.1, the fake driver of run_exp --simulate

This is the layout of a build directory, so run_exp finds its parts relative to itself as it does
in build/. The console scripts of pyproject.toml (gpuyield/tools.py) exec gpuyield/bin/*. The
version comes from the top-level VERSION file (pyproject.toml reads it too)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
TOOLS = ("expcontroller", "run_exp", "nsight-parser", "gpuyield-standin")
LIBS = ("libgpuyield.so", "libgeek.so", "libcuinterpose.so", "libcuinterpose_sync.so", "libcuinterpose_event.so")
# make.sh's output, beside setuptools' own under build/setuptools (not the build/ of ./make.sh, which
# may have been built with other settings).
MAKE_OUT = HERE / "build" / "setuptools" / "make"


# The package's files besides the extension and the .py modules, as make.sh's output has them.
PARTS = [f"bin/{tool}" for tool in TOOLS] + [f"lib/{lib}" for lib in LIBS] + ["fakecuda/libcuda.so.1"]


def copy(source, dest):
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, dest)  # keeps the mode: the tools stay executable in the wheel


class build_with_make_sh(build_ext):
    def build_extension(self, ext):
        env = dict(os.environ, PYTHON=sys.executable)
        if subprocess.run(["bash", str(HERE / "make.sh"), "package", str(MAKE_OUT)], env=env).returncode:
            sys.exit(1)  # make.sh said why, in one line or with the compiler's errors above it
        target = Path(self.get_ext_fullpath(ext.name))
        copy(MAKE_OUT / "python" / "gpuyield" / target.name, target)
        for part in PARTS:
            copy(MAKE_OUT / part, target.parent / part)

    def copy_extensions_to_source(self):
        # pip install -e: the extension goes back into pyext/gpuyield, and the rest with it.
        super().copy_extensions_to_source()
        built = Path(self.build_lib, self.get_ext_filename(self.get_ext_fullname("gpuyield._gpuyield"))).parent
        source = Path(self.get_finalized_command("build_py").get_package_dir("gpuyield"))
        for part in PARTS:
            copy(built / part, source / part)


extension = Extension(
    "gpuyield._gpuyield",
    # For the sdist and setuptools' bookkeeping; make.sh compiles them (pyext/build_ext.sh).
    sources=sorted(f"pyext/{p.name}" for p in (HERE / "pyext").glob("*.c")),
)

# Intermediate files under build/setuptools, beside make.sh's outputs, not at the top of the tree.
setup(
    ext_modules=[extension],
    cmdclass={"build_ext": build_with_make_sh},
    options={"build": {"build_base": "build/setuptools"}},
)
