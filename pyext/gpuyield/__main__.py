"""python3 -m gpuyield hook-path: the path of the preload library that belongs to this package,
for LD_PRELOAD=$(python3 -m gpuyield hook-path). --version: the project's version."""
import sys

from . import __version__
from .tools import hook_path

USAGE = "usage: python3 -m gpuyield hook-path | --version"


def main(argv):
    if argv == ["hook-path"]:
        try:
            print(hook_path())
        except FileNotFoundError as e:
            sys.stderr.write("%s\n" % e.strerror)
            return 1
        return 0
    if argv == ["--version"]:
        print(__version__)
        return 0
    if argv in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    sys.stderr.write("%s\n" % USAGE)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
