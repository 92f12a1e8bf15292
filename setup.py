"""The C extension gpuyield._gpuyield, which pyproject.toml cannot describe by itself: pyext/*.c,
the controller library's sources and the service room's status view (one row per process, clean
UTF-8 names), compiled for the interpreter that runs pip. The version
comes from the top-level VERSION file (pyproject.toml reads it too)."""
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
VERSION = (HERE / "VERSION").read_text().strip()


def sources(folder, leave_out=()):
    return sorted(f"{folder}/{p.name}" for p in (HERE / folder).glob("*.c") if p.name not in leave_out)


extension = Extension(
    "gpuyield._gpuyield",
    sources=sources("pyext") + sources("controller") + ["service/status_merge.c", "service/utf8_clean.c"],
    include_dirs=["controller", "service"],
    define_macros=[("_GNU_SOURCE", None), ("GY_VERSION", f'"{VERSION}"')],
    extra_compile_args=["-std=c11", "-pthread", "-Wall", "-Wextra"],
    # Only the module init is exported (pyext/exports.map), as in make.sh's build.
    extra_link_args=["-pthread", f"-Wl,--version-script={HERE}/pyext/exports.map"],
    depends=["pyext/exports.map"],
)

# Intermediate files under build/setuptools, beside make.sh's outputs, not at the top of the tree.
setup(ext_modules=[extension], options={"build": {"build_base": "build/setuptools"}})
