"""The `mcec` command line."""

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `mcec` console script."""
    print("mcec: no commands yet", file=sys.stderr)
    return 2
