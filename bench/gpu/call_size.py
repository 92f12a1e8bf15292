"""What a device call carries and whether it fits: the device copies the working tree's tracked
files, its untracked files that git does not ignore, and the carried paths, at most 64 MiB in all
(a call over it is refused before a machine starts; on 2026-11-25 the records' raw files had
grown the tree to 61 MB). Run it here before a call:
    python3 -m bench.gpu.call_size [--carry PATH ...] [--limit-mib N]
It prints the three parts, their sum and the room left; exit 1 when over the limit, 2 on bad input."""
import argparse
import os
import subprocess
import sys

LIMIT_MIB = 64


def git_files(root, *args):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def size_of(path):
    """Bytes of a file, or of every file below a folder (links not followed, as the copy does not)."""
    if os.path.islink(path) or not os.path.exists(path):
        return 0
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for folder, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in files
                     if not os.path.islink(os.path.join(folder, f)))
    return total


def parts(root, carry):
    tracked = sum(size_of(os.path.join(root, p)) for p in git_files(root))
    untracked = sum(size_of(os.path.join(root, p)) for p in git_files(root, "--others", "--exclude-standard"))
    carried = sum(size_of(os.path.join(root, p)) for p in carry)
    return tracked, untracked, carried


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m bench.gpu.call_size", description=__doc__.split("\n")[0])
    p.add_argument("--carry", nargs="*", default=[".gpu-build"], help="the paths the call carries (default .gpu-build)")
    p.add_argument("--limit-mib", type=float, default=LIMIT_MIB)
    p.add_argument("--root", default=os.getcwd(), help="the checkout (default: here)")
    args = p.parse_args(argv)
    try:
        tracked, untracked, carried = parts(args.root, args.carry)
    except (subprocess.CalledProcessError, FileNotFoundError) as e:
        print(f"call_size: {args.root} is not a git checkout ({e}): run it in the repository root", file=sys.stderr)
        return 2
    limit = args.limit_mib * 1024 * 1024
    total = tracked + untracked + carried
    mb = lambda b: f"{b / 1e6:.1f} MB"
    print(f"tracked {mb(tracked)} + untracked, not ignored {mb(untracked)} + carried ({' '.join(args.carry) or 'none'}) "
          f"{mb(carried)} = {mb(total)} of {args.limit_mib:g} MiB ({mb(limit)}): "
          + (f"{mb(limit - total)} left" if total <= limit else f"OVER by {mb(total - limit)}: the call would be refused"))
    return 0 if total <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
