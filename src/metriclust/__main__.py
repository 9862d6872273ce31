"""Command-line entry point: ``python -m metriclust`` / ``metriclust``."""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="metriclust", description="Clustering with learned distance metrics."
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    args = parser.parse_args(argv)
    if args.version:
        from . import __version__
        from ._kernels._openmp import openmp_enabled, openmp_max_threads

        omp = f"OpenMP, {openmp_max_threads()} threads" if openmp_enabled() else "no OpenMP"
        print(f"metriclust {__version__} ({omp})")
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
