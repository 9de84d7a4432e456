"""A class whose base cannot be read: its module is not there (issue 29, item 9, W004)."""

from __future__ import annotations

from not_installed_anywhere import Opaque  # type: ignore[import-not-found]


class Mystery(Opaque):  # type: ignore[misc]
    customer: str
