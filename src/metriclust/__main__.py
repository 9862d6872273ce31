"""``python -m metriclust`` and the ``metriclust`` console script."""

import sys


def main(argv=None):
    from ._cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
