"""What the runtime's commands share: exit statuses and how a report is printed."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["EXIT_ERRORS", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "Subparsers", "dumps"]

#: 0: done (a run: Ok, or waiting for people); 1: the run ended with an error or a defect;
#: 2: bad input (a message says why); 3: a fault of the runtime itself.
EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

Subparsers = argparse._SubParsersAction  # noqa: SLF001 (argparse's own type for add_subparsers())


def dumps(payload: Any) -> str:
    """A report as pretty JSON."""
    return json.dumps(payload, indent=2, ensure_ascii=False)
