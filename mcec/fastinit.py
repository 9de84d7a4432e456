"""Fast constructors for frozen slotted dataclasses (spans and syntax nodes).

A parse builds about a dozen small frozen objects per source line, so how an
object is built is the largest single cost of parsing. A frozen dataclass's
``__init__`` sets each field through ``object.__setattr__`` (a generic call
per field, with an argument tuple), because its own ``__setattr__`` refuses.

:func:`fast_constructor` builds the object as an instance of a "builder": a
subclass of the dataclass that adds no slots and puts back ``object``'s own
``__init__`` and ``__setattr__``, so ``obj.field = value`` is the
interpreter's fastest store (a specialised slot write, no call). It then
switches the object's class to the frozen dataclass, which CPython allows
between classes of identical layout. The result is an ordinary instance of the
dataclass: equal to, hashing like, and as frozen as one its own constructor
makes. On the reference machine this takes 36% fewer instructions than
setting the slots through their descriptors, and that about halved the time
per object. The constructor checks the switch on a sample object when it is
made and uses the descriptors when the layouts differ, so it is always right;
:func:`takes_fast_path` tells which of the two a constructor does (tests
assert the class switch for every syntax node, so a layout change that would
silently cost the fast path fails a test instead).

This module imports nothing from the compiler, so that :mod:`mcec.span` and
:mod:`mcec.syntax` can use it; :mod:`mcec.construct` holds the constructors
the parsers use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["builder_class", "fast_constructor", "takes_fast_path"]

_T = TypeVar("_T")


def fast_constructor(cls: type[_T]) -> Callable[..., _T]:
    """A function building ``cls(*fields)`` without the dataclass ``__init__``.

    Only for slotted dataclasses with no ``__post_init__`` (nothing in
    ``__init__`` is skipped then); for any other class the class itself is
    returned.
    """
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or tuple(getattr(cls, "__slots__", ())) != tuple(names):
        return cls  # pragma: no cover - the plain constructor is always right
    # A subclass adding no slots, with the plain object __init__ and __setattr__
    # (the frozen one refuses): the same layout, so the class switch back to
    # ``cls`` is allowed, and CPython sees that by walking up one base instead
    # of comparing the two classes' slot names one by one (175 of the 1,740
    # instructions a node cost).
    namespace = {
        "__slots__": (),
        "__init__": object.__init__,
        "__setattr__": object.__setattr__,
        "__delattr__": object.__delattr__,
        "__module__": __name__,
    }
    builder = type(f"_{cls.__name__}Builder", (cls,), namespace)
    make = _compile_maker(cls, names, builder, switch=True)
    try:
        sample = make(*range(len(names)))
        works = type(sample) is cls and all(getattr(sample, n) == i for i, n in enumerate(names))
    except (TypeError, AttributeError):  # "__class__ assignment: ... object layout differs"
        works = False
    return make if works else _compile_maker(cls, names, builder, switch=False)  # pragma: no branch


def takes_fast_path(make: Callable[..., object]) -> bool:
    """True when ``make`` (from :func:`fast_constructor`) builds through the builder class and a class switch."""
    code = getattr(make, "__code__", None)
    return code is not None and "_builder" in code.co_names


def builder_class(make: Callable[..., object]) -> Callable[[], Any]:
    """The builder class behind ``make``, a constructor from :func:`fast_constructor` that takes the fast path.

    For the few places so hot that the call to ``make`` matters (it costs
    over a quarter of an object): they build the object in place as ``make``
    does, by calling this class, storing every field, then setting
    ``__class__`` to the dataclass. Typed ``Any``: until that last store the
    object is a mutable builder, not the frozen dataclass. Raises
    ``ValueError`` when ``make`` does not take the fast path.
    """
    if not takes_fast_path(make):
        raise ValueError(f"{make!r} does not build through a builder class")
    builder: Callable[[], Any] = make.__globals__["_builder"]
    return builder


def _compile_maker(cls: type[_T], names: list[str], builder: type, *, switch: bool) -> Callable[..., _T]:
    """``make(*fields)``: through the builder class and a class switch, or through the slot descriptors."""
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_builder": builder}
    lines = [f"def make({', '.join(names)}):"]
    if switch:
        lines.append("    obj = _builder()")
        lines.extend(f"    obj.{name} = {name}" for name in names)
        lines.append("    obj.__class__ = _cls")
    else:
        lines.append("    obj = _new(_cls)")
        for index, name in enumerate(names):
            namespace[f"_set{index}"] = getattr(cls, name).__set__
            lines.append(f"    _set{index}(obj, {name})")
    lines.append("    return obj")
    exec("\n".join(lines), namespace)  # the same technique dataclasses uses to make __init__
    make: Callable[..., _T] = namespace["make"]
    return make
