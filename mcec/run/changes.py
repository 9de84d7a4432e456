"""What changed between two partials of a streamed answer, as ``mcec run --stream`` prints it
(docs/language.md §14): one JSON object a change, each saying where (``path``: the keys and list
indices from the answer down) and what — ``{"path": [...], "append": "text"}`` when a string
there grew by ``text``, ``{"path": [...], "set": value}`` otherwise (a new field, a list's next
element, a number, a string that did not just grow). The first partial of a call is one ``set``
at the root (``"path": []``). Applying the changes in order to nothing gives every partial, and
the printed text grows with the answer, not with the answer times the number of pieces (issue 47).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

__all__ = ["Change", "changes", "apply"]

#: A key of a JSON object or an index of a JSON array.
Step = str | int


class Change(TypedDict, total=False):
    """One change: ``path`` and either ``set`` or ``append``."""

    path: list[Step]
    set: object
    append: str


def changes(old: object, new: object, path: tuple[Step, ...] = ()) -> Iterator[Change]:
    """The changes that make the JSON value ``old`` into ``new`` (both as ``json.dumps`` takes them)."""
    if isinstance(old, dict) and isinstance(new, dict):
        if not old.keys() <= new.keys():  # a field went away (a partial of another attempt): anew
            yield {"path": list(path), "set": new}
            return
        for key, value in new.items():
            if key in old:
                yield from changes(old[key], value, (*path, key))
            else:
                yield {"path": [*path, key], "set": value}
    elif isinstance(old, list) and isinstance(new, list):
        if len(new) < len(old):
            yield {"path": list(path), "set": new}
            return
        for index, value in enumerate(new):
            if index < len(old):
                yield from changes(old[index], value, (*path, index))
            else:
                yield {"path": [*path, index], "set": value}
    elif isinstance(old, str) and isinstance(new, str) and new.startswith(old):
        if len(new) > len(old):
            yield {"path": list(path), "append": new[len(old) :]}
    elif type(old) is not type(new) or old != new:
        yield {"path": list(path), "set": new}


def apply(value: object, change: Change) -> object:
    """``value`` with ``change`` made to it (in place where it can): what a reader of the lines does."""
    if not change["path"]:
        return change["set"] if "set" in change else str(value) + change["append"]
    *above, last = change["path"]
    parent = value
    for step in above:
        parent = parent[step]  # type: ignore[index]
    if "set" in change:
        if isinstance(parent, list) and last == len(parent):
            parent.append(change["set"])
        else:
            parent[last] = change["set"]  # type: ignore[index]
    else:
        parent[last] += change["append"]  # type: ignore[index]
    return value
