"""What the Python names a spec uses are, read from their source without running it.

A spec names Python modules, classes and functions (``from app.models import
Turn``, ``= impl.plan``). :class:`PythonIndex` finds and reads their source
with griffe's static visitor — the files are parsed, never imported, so no
user code runs at check time — and answers what the checker asks:

- does ``module`` exist, does it have ``attr``, and what is it (a module, a
  class, a function, some other value)?
- for a class: where it is really defined (re-exports followed), every class
  it derives from (:class:`~mcec.check.types.ClassInfo`), its annotated fields;
- for a function: async or not, its positional parameters and their
  annotations, its return annotation — as spec types where they can be read.

Modules are read one file at a time, when first asked for, with their parent
packages (whose ``__init__.py`` relative imports need them), so a spec that
imports one module of a large installed package reads that module only.
Anything that cannot be read statically (a class built by a function, a
string annotation, a base class from a C extension) is left *unknown*, and
the checker leaves those questions to mypy as before.

Decision: static reading (griffe), not importing. Importing would be exact,
but it runs the user's module-level code (model clients, servers, side
effects) on every ``mcec check``, and imports everything those modules
import; reading the source of the one module a spec names takes a few
milliseconds.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import functools
import os
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias, assert_never

import griffe

from mcec.check.types import (
    ANY,
    BUILTIN_ERRORS,
    NEVER,
    NONE,
    RUNTIME_MODULE,
    Builtin,
    ClassInfo,
    ClassRef,
    ErrorSet,
    Generic,
    Lit,
    Type,
    builtin_info,
    runtime_error,
    union,
)

__all__ = [
    "ClassMembers",
    "Missing",
    "import_paths",
    "package_root",
    "PyClass",
    "PyField",
    "PyFunction",
    "PyModule",
    "PyObject",
    "PyParam",
    "PyValue",
    "PythonIndex",
    "StepReturn",
    "spec_file_on",
]


@dataclass(frozen=True, slots=True)
class Missing:
    """A module or name that is not there: ``message`` says what, ``help`` how to fix it."""

    message: str
    help: str | None = None


@dataclass(frozen=True, slots=True)
class PyModule:
    """A module: its dotted name and the names it defines or imports."""

    path: str
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PyField:
    """An annotated attribute of a class (a model's or dataclass's field); ``type`` None when unreadable."""

    name: str
    type: Type | None
    has_default: bool


@dataclass(frozen=True, slots=True)
class PyClass:
    """A class, by its canonical path (where it is defined)."""

    path: str
    info: ClassInfo
    fields: tuple[PyField, ...]
    is_pydantic: bool
    is_dataclass: bool


@dataclass(frozen=True, slots=True)
class ClassMembers:
    """What a template can read of an instance of a class (docs/language.md §10), through all its bases.

    ``record`` says whether the runtime gives a template the instance's fields as variables
    (a pydantic model or a dataclass: ``agentmonad.llm.prompt.input_variables``), else the
    one variable ``value``; ``fields`` are those variables (a pydantic model's fields and
    computed fields, a dataclass's fields); ``attributes`` are the names ``state.NAME`` can
    read (Jinja2 tries the attribute, then the item: a TypedDict's keys count)."""

    record: bool
    fields: frozenset[str]
    attributes: frozenset[str]


@dataclass(frozen=True, slots=True)
class PyParam:
    """A positional parameter: ``type`` None when unannotated or unreadable."""

    name: str
    type: Type | None
    has_default: bool


@dataclass(frozen=True, slots=True)
class StepReturn:
    """A step implementation's return annotation read as ``Outcome[S, E, B]``; each part None when unreadable."""

    state: Type | None
    errors: ErrorSet | None
    output: Type | None


@dataclass(frozen=True, slots=True)
class PyFunction:
    """A function: how it is called and what its annotations say."""

    path: str
    is_async: bool
    #: The parameters that can be passed by position, in order.
    params: tuple[PyParam, ...]
    #: True when it takes ``*args`` (any number of positional arguments).
    var_positional: bool
    #: The return annotation as a spec type (a fn), None when absent or unreadable.
    returns: Type | None
    #: The return annotation as ``Outcome[S, E, B]`` (a step), None when it is not one.
    step_returns: StepReturn | None
    #: How many of its annotations (parameters, return, each part of an ``Outcome``) are there
    #: but could not be read as spec types (a type alias, a string): what they say is mypy's.
    unread: int = 0


@dataclass(frozen=True, slots=True)
class PyValue:
    """Any other module attribute (a constant, a type alias, an instance)."""

    path: str


PyObject: TypeAlias = PyModule | PyClass | PyFunction | PyValue

#: Classes of installed packages the spec's classes commonly derive from, with what
#: they derive from: their packages cannot be read statically (pydantic exports
#: ``BaseModel`` through a module ``__getattr__``).
_KNOWN_EXTERNAL: dict[str, tuple[str, ...]] = {
    "pydantic.BaseModel": ("pydantic.BaseModel", "pydantic.main.BaseModel", "builtins.object"),
    "pydantic.main.BaseModel": ("pydantic.BaseModel", "pydantic.main.BaseModel", "builtins.object"),
}
#: Bases that make a class *open*: other classes may count as its subclasses without deriving from it.
_OPEN_BASES = frozenset({"typing.Protocol", "typing_extensions.Protocol", "abc.ABC"})
#: Bases whose classes cannot be told apart with ``isinstance`` at all (structural types).
_STRUCTURAL_BASES = frozenset({"typing.TypedDict", "typing_extensions.TypedDict", "typing.Protocol", "typing_extensions.Protocol"})

_BUILTIN_TYPES: dict[str, Type] = {
    "str": Builtin("str"),
    "int": Builtin("int"),
    "float": Builtin("float"),
    "bool": Builtin("bool"),
    "bytes": Builtin("bytes"),
    "None": NONE,
    "typing.Any": ANY,
    "typing_extensions.Any": ANY,
    "typing.Never": NEVER,
    "typing.NoReturn": NEVER,
    "typing_extensions.Never": NEVER,
}
_GENERICS: dict[str, str] = {
    "list": "list",
    "typing.List": "list",
    "dict": "dict",
    "typing.Dict": "dict",
    "set": "set",
    "typing.Set": "set",
    "tuple": "tuple",
    "typing.Tuple": "tuple",
}
#: More generic heads a record's field may be written with (:meth:`PythonIndex._field_type`).
_FIELD_GENERICS: dict[str, str] = {
    "typing.Sequence": "list",
    "collections.abc.Sequence": "list",
    "typing.Mapping": "dict",
    "collections.abc.Mapping": "dict",
    "frozenset": "set",
    "typing.FrozenSet": "set",
}
_LITERALS = frozenset({"typing.Literal", "typing_extensions.Literal"})
_OUTCOME = frozenset({"agentmonad.Outcome", "agentmonad.outcome.Outcome"})
_OK = frozenset({"agentmonad.Ok", "agentmonad.outcome.Ok"})
_ERR = frozenset({"agentmonad.Err", "agentmonad.outcome.Err"})
#: The runtime's built-in errors by every path that names one: the package's re-export and the
#: modules that define them (``agentmonad.llm.LLMUnavailable`` is an alias of
#: ``agentmonad.llm.errors.LLMUnavailable``, which is ``agentmonad.LLMUnavailable``). Re-exports are
#: followed to their definition, so each is one class however a module imports it.
_RUNTIME_ERRORS = {
    f"{RUNTIME_MODULE}.{module}{name}": name
    for module in ("", "errors.", "llm.errors.", "plans.", "human.")
    for name in BUILTIN_ERRORS
}


@functools.cache
def _stdlib_stubs() -> tuple[Path, ...]:
    """typeshed's stubs of the standard library, as mypy ships them (found, not imported): where the
    modules with no Python source (``math``, ``sys``, ``builtins``) are read from, when no search path
    has them."""
    import importlib.util

    spec = importlib.util.find_spec("mypy")
    folders = [Path(f) / "typeshed" / "stdlib" for f in (spec.submodule_search_locations or [])] if spec else []
    return tuple(f for f in folders if f.is_dir())


@functools.cache
def _installed_roots() -> tuple[str, ...]:
    """Folders of the standard library and installed packages: classes there are not the project's
    (the same for the whole process: computed once)."""
    roots = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(sorted(str(Path(root).resolve()) for root in roots))


class PythonIndex:
    """The Python side of a spec, read statically from ``search_paths`` (like ``sys.path``)."""

    def __init__(self, search_paths: Sequence[str | Path]) -> None:
        self.search_paths = [Path(p) for p in search_paths if Path(p).is_dir()]
        self._finder = griffe.ModuleFinder(search_paths=self.search_paths)
        self._modules: dict[str, griffe.Module | Missing] = {}
        #: Each module's :class:`PyModule`, made once: its names are a tuple of every member, so
        #: making it per question was quadratic (10,000 references into one module of 5,000
        #: functions: 2 s of ``check --fast``, issue 36).
        self._py_modules: dict[str, PyModule] = {}
        self._classes: dict[str, PyClass | None] = {}
        #: The griffe object of each class read (by canonical path): its members and bases.
        self._griffe_classes: dict[str, griffe.Class] = {}
        #: The source lines of each module file read (decorators griffe does not keep).
        self._lines: dict[Path, list[str]] = {}
        self._installed = _installed_roots()
        self._project_files: dict[Path, bool] = {}

    @classmethod
    def for_directory(cls, directory: str | Path | None = None, spec: str | Path | None = None) -> PythonIndex:
        """The index a run in ``directory`` (default: the working directory) would import from:
        that folder first, then the folder the spec's package starts in (:func:`package_root`),
        then ``PYTHONPATH`` and the interpreter's own paths."""
        return cls(import_paths(directory, spec))

    # ------------------------------------------------------------ modules

    def module(self, name: str) -> PyModule | Missing:
        """The module ``name``, or why it cannot be found."""
        found = self._load(name)
        if isinstance(found, Missing):
            return found
        return self._py_module(name, found)

    def _py_module(self, path: str, loaded: griffe.Module | griffe.Object) -> PyModule:
        """The :class:`PyModule` of a module read, made on its first question."""
        made = self._py_modules.get(path)
        if made is None:
            made = self._py_modules[path] = PyModule(path, tuple(loaded.members))
        return made

    def _load(self, name: str) -> griffe.Module | Missing:
        known = self._modules.get(name)
        if known is not None:
            return known
        self._modules[name] = Missing(f"module `{name}` is being read")  # a guard against import cycles
        loaded = self._read(name)
        self._modules[name] = loaded
        return loaded

    def _read(self, name: str) -> griffe.Module | Missing:
        parent_name, _, leaf = name.rpartition(".")
        parent: griffe.Module | None = None
        filepath: Path | list[Path]
        if parent_name:
            loaded_parent = self._load(parent_name)
            if isinstance(loaded_parent, Missing):
                return loaded_parent
            parent = loaded_parent
            folders = _folders(parent)
            candidates = [
                candidate
                for folder in folders
                for candidate in (folder / leaf / "__init__.py", folder / f"{leaf}.py", folder / leaf / "__init__.pyi", folder / f"{leaf}.pyi")
            ]
            found = next((c for c in candidates if c.is_file()), None)
            namespace = [folder / leaf for folder in folders if (folder / leaf).is_dir()]
            if found is None and not namespace:
                return Missing(
                    f"cannot find module `{name}`: package `{parent_name}` has no module `{leaf}`",
                    _suggest(leaf, [n for folder in folders for n in _submodule_names(folder)]),
                )
            filepath = found if found is not None else namespace
        else:
            try:
                _, package = self._finder.find_spec(name)
                filepath = package.path  # a file, or the folders of a namespace package
            except ModuleNotFoundError:
                # the standard library's C modules (`math`, `itertools`) have no source: their stubs do
                stubs = [c for f in _stdlib_stubs() for c in (f / f"{name}.pyi", f / name / "__init__.pyi") if c.is_file()]
                if not stubs:
                    return Missing(f"cannot find module `{name}`", _where_modules_come_from())
                filepath = stubs[0]
        if isinstance(filepath, list):
            return griffe.Module(leaf or name, filepath=filepath, parent=parent)
        try:
            code = filepath.read_text(encoding="utf-8")
            self._lines[filepath] = code.splitlines()
            return griffe.visit(leaf or name, filepath, code, parent=parent)
        except Exception as exc:  # unreadable or unparsable source: a fact about the module, not a crash
            return Missing(f"cannot read module `{name}` ({filepath}): {type(exc).__name__}: {exc}")

    def spec_file(self, module: str) -> Path | None:
        """The spec a generated module is made from, when there is one: ``agents.research_mce``
        is the module of ``agents/research.mce``, looked for where ``agents.research`` would be
        (the folders of package ``agents``, or the search paths for a top-level module). A
        ``_mce`` module without a spec beside it is plain Python."""
        parent_name, _, leaf = module.rpartition(".")
        if not leaf.endswith("_mce") or leaf == "_mce":
            return None
        name = f"{leaf[: -len('_mce')]}.mce"
        if parent_name:
            parent = self._load(parent_name)
            folders = [] if isinstance(parent, Missing) else _folders(parent)
        else:
            folders = self.search_paths
        return next((folder / name for folder in folders if (folder / name).is_file()), None)

    # ------------------------------------------------------------ names

    def member(self, module: str, attr: str) -> PyObject | Missing:
        """``module.attr``: what it is (re-exports followed to where it is defined), or why it is not there."""
        return self._member(module, attr, set())

    def _member(self, module: str, attr: str, seen: set[str]) -> PyObject | Missing:
        if f"{module}.{attr}" in seen:
            return PyValue(f"{module}.{attr}")  # an import cycle: something, but not statically known
        seen.add(f"{module}.{attr}")
        if module == "builtins":
            return _builtin_object(attr)
        loaded = self._load(module)
        if isinstance(loaded, Missing):
            return loaded
        obj = loaded.members.get(attr)
        if obj is None and attr in getattr(loaded, "overloads", {}):
            return PyValue(f"{module}.{attr}")  # a stub's overloaded function: its signatures are mypy's
        if obj is None:
            submodule = self._load(f"{module}.{attr}")
            if not isinstance(submodule, Missing):
                return self._py_module(f"{module}.{attr}", submodule)
            if "__getattr__" in loaded.members:
                return PyValue(f"{module}.{attr}")  # a module that makes names on demand
            return Missing(f"module `{module}` has no `{attr}`", _suggest(attr, self._py_module(module, loaded).names))
        if isinstance(obj, griffe.Alias):
            return self._path(obj.target_path, seen)
        return self._describe(obj)

    def _path(self, path: str, seen: set[str]) -> PyObject | Missing:
        """The object at a dotted path: the longest prefix that is a module, then its attributes."""
        if path in _RUNTIME_ERRORS:
            return self._runtime_error(path)
        parts = path.split(".")
        if len(parts) == 1:
            return _builtin_object(path)
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if isinstance(self._load(module), Missing):
                continue
            obj: PyObject | Missing = self._member(module, parts[cut], seen)
            for rest in parts[cut + 1 :]:
                if isinstance(obj, PyModule):
                    obj = self._member(obj.path, rest, seen)
                else:
                    return PyValue(path)  # an attribute of a class or value: not followed
            return obj
        return Missing(f"cannot find module `{parts[0]}`", _where_modules_come_from())

    def _describe(self, obj: griffe.Object) -> PyObject:
        if isinstance(obj, griffe.Module):
            return self._py_module(obj.path, obj)
        if isinstance(obj, griffe.Class):
            described = self._class(obj)
            return described if described is not None else PyValue(obj.path)
        if isinstance(obj, griffe.Function):
            return self._function(obj)
        return PyValue(obj.path)

    def _runtime_error(self, path: str) -> PyClass:
        name = _RUNTIME_ERRORS[path]
        ref = runtime_error(name)
        assert ref.info is not None
        return PyClass(ref.path, ref.info, (), is_pydantic=False, is_dataclass=False)

    # ------------------------------------------------------------ classes

    def class_at(self, path: str) -> PyClass | None:
        """The class at a canonical dotted path, if it is one the index can read."""
        found = self._path(path, set())
        return found if isinstance(found, PyClass) else None

    def _class(self, cls: griffe.Class) -> PyClass | None:
        path = cls.path
        if path in self._classes:
            return self._classes[path]
        self._classes[path] = None  # a guard against cyclic bases
        self._griffe_classes[path] = cls
        ancestors = {path}
        complete = True
        opened = False
        structural = False
        for base in cls.bases:
            base_path = _canonical(base)
            if base_path is None:
                complete = False
                continue
            opened = opened or base_path in _OPEN_BASES
            structural = structural or base_path in _STRUCTURAL_BASES
            base_info = self._base_info(base_path)
            if base_info is None:
                ancestors.add(base_path)
                complete = False
            else:
                ancestors |= base_info.ancestors
                complete = complete and base_info.complete
                opened = opened or base_info.open
                structural = structural or base_info.structural
        if not cls.bases:
            ancestors.add("builtins.object")
        filepath = _file_of(cls)
        project = filepath is not None and self._in_project(filepath)
        info = ClassInfo(frozenset(ancestors), complete, project, opened, structural)
        decorators = {_canonical(d.value) for d in cls.decorators}
        fields = tuple(
            PyField(name, self.annotation(attribute.annotation), attribute.value is not None)
            for name, attribute in cls.attributes.items()
            if attribute.annotation is not None and not name.startswith("_") and name != "model_config"
            and _canonical(getattr(attribute.annotation, "left", attribute.annotation)) != "typing.ClassVar"
        )
        described = PyClass(
            path,
            info,
            fields,
            is_pydantic=bool(info.ancestors & {"pydantic.BaseModel", "pydantic.main.BaseModel"}),
            is_dataclass="dataclasses.dataclass" in decorators,
        )
        self._classes[path] = described
        return described

    def _in_project(self, filepath: Path) -> bool:
        """Whether a module file is the project's, not the standard library's or an installed package's."""
        known = self._project_files.get(filepath)
        if known is None:
            real = str(filepath.resolve())
            known = self._project_files[filepath] = not any(real.startswith(root + os.sep) for root in self._installed)
        return known

    def _base_info(self, path: str) -> ClassInfo | None:
        """What a base class derives from: builtins and known packages by table, the rest by reading them."""
        if path.startswith("builtins."):
            return builtin_info(path.removeprefix("builtins."))
        if path in _KNOWN_EXTERNAL:
            return ClassInfo(frozenset(_KNOWN_EXTERNAL[path]), True, False, False, False)
        if path in _RUNTIME_ERRORS:
            return self._runtime_error(path).info
        found = self.class_at(path)
        return found.info if found is not None else None

    def members(self, path: str) -> ClassMembers | str:
        """What a template can read of an instance of the class at ``path``, read through every
        base class (the project's, pydantic's ``BaseModel``, ``typing.Generic``, builtins), or
        why that cannot be known (a base class that cannot be read)."""
        top = self.class_at(path)
        if top is None:
            return f"class `{path}` cannot be read"
        if top.path in _RUNTIME_ERRORS:
            return ClassMembers(False, frozenset(), frozenset(dir(Exception)))  # a built-in error: not a record
        pydantic = dataclass = False
        fields: set[str] = set()
        attributes: set[str] = set()
        seen: set[str] = set()
        stack = [top.path]
        while stack:  # every class the instance's class derives from (order does not matter: names only)
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            match _base_kind(current):
                case "object" | "generic":
                    continue
                case "pydantic":
                    pydantic = True
                    attributes |= PYDANTIC_MODEL_ATTRIBUTES
                    continue
                case "typed dict":  # a dict: its keys (annotated in the classes) and dict's own attributes
                    attributes |= set(dir(dict))
                    continue
                case "builtin":
                    attributes |= set(dir(getattr(builtins, current.removeprefix("builtins."), object)))
                    continue
                case "class":
                    pass
                case _ as never:
                    assert_never(never)
            found = self.class_at(current)
            cls = self._griffe_classes.get(found.path) if found is not None else None
            if found is None or cls is None:
                return f"{'class' if current == top.path else 'its base class'} `{current}` cannot be read"
            own = self._own_fields(cls)
            attributes |= set(cls.members) | own
            if found.info.ancestors & _PYDANTIC:
                fields |= {name for name in own if not name.startswith("_")} | self._computed_fields(cls)
            if _is_dataclass(cls):
                dataclass = True
                fields |= own
            for base in cls.bases:
                base_path = _canonical(base)
                if base_path is None:
                    return f"a base class of `{cls.path}` cannot be named statically"
                stack.append(base_path)
        return ClassMembers(pydantic or dataclass, frozenset(fields), frozenset(attributes | fields))

    def record_fields(self, path: str) -> tuple[PyField, ...] | None:
        """The fields of the pydantic model or dataclass at ``path`` as a model fills them in,
        read through its bases (a base's fields first, a redefined field where it was first
        defined, as pydantic and dataclasses order them); None when the class is no such record
        or one of its classes cannot be read (what the streaming partial types are made from)."""
        top = self.class_at(path)
        if top is None or not (top.is_pydantic or top.is_dataclass):
            return None
        lineage = self._record_lineage(top.path, set())
        if lineage is None:
            return None
        fields: dict[str, PyField] = {}
        for current in lineage:
            cls = self._griffe_classes[current.path]
            for field in current.fields:
                # a redefinition keeps the first position, with its own type
                fields[field.name] = PyField(field.name, self._field_type(cls.attributes[field.name].annotation), field.has_default)
        return tuple(fields.values())

    def _field_type(self, expr: object) -> Type | None:
        """A field's annotation as a spec type: :meth:`annotation`, and also what a record's fields
        hold that a step's signature is not read for — builtin generics (``list[Cite]``,
        ``dict[str, float]``), ``Literal[…]``, ``Sequence[…]``, a bare ``None`` in a union."""
        match expr:
            case "None":
                return NONE
            case griffe.ExprBinOp(operator="|"):
                left, right = self._field_type(expr.left), self._field_type(expr.right)
                return None if left is None or right is None else union([left, right])
            case griffe.ExprSubscript():
                head = (_canonical(expr.left) or "").removeprefix("builtins.")
                args = list(expr.slice.elements) if isinstance(expr.slice, griffe.ExprTuple) else [expr.slice]
                if head in _LITERALS:
                    values = [_literal_value(a) for a in args]
                    return None if any(v is None for v in values) else union([Lit(v) for v in values if v is not None])
                if head in ("typing.Optional", "typing.Union", "typing.Annotated", "typing_extensions.Annotated"):
                    members = [self._field_type(a) for a in (args[:1] if "Annotated" in head else args)]
                    if head == "typing.Optional":
                        members.append(NONE)
                    return None if any(m is None for m in members) else union([m for m in members if m is not None])
                generic = _FIELD_GENERICS.get(head) or _GENERICS.get(head)
                if generic is None:
                    return None
                types = [self._field_type(a) for a in args if a != "..."]
                if any(t is None for t in types) or not types:
                    return None
                return Generic(generic, tuple(t for t in types if t is not None))  # type: ignore[arg-type]
            case _:
                return self.annotation(expr)

    def _record_lineage(self, path: str, seen: set[str]) -> list[PyClass] | None:
        """The record classes ``path`` derives from, most basic first, itself last (None: one
        cannot be read). Plain bases (``BaseModel``, ``object``, ``Generic``) add no fields."""
        if path in seen:
            return []
        seen.add(path)
        match _base_kind(path):
            case "object" | "generic" | "pydantic":
                return []
            case "typed dict" | "builtin":
                return None
            case "class":
                pass
            case _ as never:
                assert_never(never)
        found = self.class_at(path)
        cls = self._griffe_classes.get(found.path) if found is not None else None
        if found is None or cls is None:
            return None
        lineage: list[PyClass] = []
        for base in reversed(cls.bases):  # the last base's fields come first (Python's MRO, reversed)
            base_path = _canonical(base)
            if base_path is None:
                return None
            above = self._record_lineage(base_path, seen)
            if above is None:
                return None
            lineage.extend(above)
        lineage.append(found)
        return lineage

    def _own_fields(self, cls: griffe.Class) -> set[str]:
        """The names a class body annotates for its instances (not a ``ClassVar``, not ``model_config``)."""
        return {
            name
            for name, attribute in cls.attributes.items()
            if attribute.annotation is not None
            and "property" not in attribute.labels
            and name != "model_config"
            and _canonical(getattr(attribute.annotation, "left", attribute.annotation)) not in _CLASS_VARS
        }

    def _computed_fields(self, cls: griffe.Class) -> set[str]:
        """A pydantic model's ``@computed_field`` properties (griffe keeps a property without its
        decorators: the lines above its ``def`` are read)."""
        computed: set[str] = set()
        for name, attribute in cls.attributes.items():
            if "property" not in attribute.labels:
                continue
            filepath = _file_of(attribute)
            lines = self._lines.get(filepath) if filepath is not None else None
            if lines is None or attribute.lineno is None:
                computed.add(name)  # its decorators cannot be read: may be one (no false report)
                continue
            above = attribute.lineno - 2
            while above >= 0 and lines[above].strip().startswith("@"):
                if "computed_field" in lines[above]:
                    computed.add(name)
                above -= 1
        return computed

    # ------------------------------------------------------------ functions and annotations

    def _function(self, fn: griffe.Function) -> PyFunction:
        params: list[PyParam] = []
        var_positional = False
        unread = 0
        for param in fn.parameters:
            kind = param.kind
            if kind is griffe.ParameterKind.var_positional:
                var_positional = True
            elif kind in (griffe.ParameterKind.positional_only, griffe.ParameterKind.positional_or_keyword):
                read = self.annotation(param.annotation)
                unread += param.annotation is not None and read is None
                params.append(PyParam(param.name, read, param.default is not None))
        returns = fn.returns if not isinstance(fn.returns, str) else None
        read_returns, step_returns = self.annotation(returns), self._step_return(returns)
        if step_returns is not None:
            unread += sum(part is None for part in (step_returns.state, step_returns.errors, step_returns.output))
        elif fn.returns is not None and read_returns is None:
            unread += 1
        return PyFunction(
            fn.path,
            is_async="async" in fn.labels,
            params=tuple(params),
            var_positional=var_positional,
            returns=read_returns,
            step_returns=step_returns,
            unread=unread,
        )

    def annotation(self, expr: object) -> Type | None:
        """A Python annotation (a griffe expression) as a spec type; None when it cannot be read."""
        match expr:
            case None:
                return None
            case griffe.ExprName():
                return self._named_type(expr, expr.name)
            case griffe.ExprAttribute():
                # a dotted annotation (``agentmonad.llm.LLMUnavailable``): the class at its path
                return self._named_type(expr, expr.last.name)
            case griffe.ExprConstant(value="None"):
                return NONE
            case griffe.ExprBinOp(operator="|"):
                left, right = self.annotation(expr.left), self.annotation(expr.right)
                return None if left is None or right is None else union([left, right])
            case griffe.ExprSubscript():
                return self._subscript(expr)
            case _:
                return None  # a string annotation, an attribute chain griffe could not name, …

    def _named_type(self, expr: griffe.ExprName | griffe.ExprAttribute, spelling: str) -> Type | None:
        """The type a name or dotted name in an annotation stands for, spelt ``spelling`` in messages."""
        path = _canonical(expr)
        if path is None:
            return None
        known = _BUILTIN_TYPES.get(path.removeprefix("builtins."))
        if known is not None:
            return known
        if path in _RUNTIME_ERRORS:
            return runtime_error(_RUNTIME_ERRORS[path])
        found = self._path(path, set())
        if isinstance(found, PyClass):
            return ClassRef(found.path, spelling, found.info)
        return None

    def _subscript(self, expr: griffe.ExprSubscript) -> Type | None:
        head = _canonical(expr.left)
        args = list(expr.slice.elements) if isinstance(expr.slice, griffe.ExprTuple) else [expr.slice]
        if head in ("typing.Optional",):
            inner = self.annotation(args[0])
            return None if inner is None else union([inner, NONE])
        if head in ("typing.Union",):
            members = [self.annotation(a) for a in args]
            return None if any(m is None for m in members) else union([m for m in members if m is not None])
        if head in ("typing.Annotated", "typing_extensions.Annotated"):
            return self.annotation(args[0])
        generic = _GENERICS.get(head or "")
        if generic is None:
            return None
        if any(isinstance(a, str) and a == "..." for a in args):
            return None  # tuple[X, ...]: no spec type for it
        types = [self.annotation(a) for a in args]
        if any(t is None for t in types):
            return None
        return Generic(generic, tuple(t for t in types if t is not None))  # type: ignore[arg-type]

    def _step_return(self, expr: object) -> StepReturn | None:
        """``Outcome[S, E, B]`` or ``Ok[S, B] | Err[S, E]`` (either order), as a :class:`StepReturn`."""
        parts = _union_parts(expr)
        state: Type | None = None
        errors: ErrorSet | None = frozenset()
        output: Type | None = NEVER
        shaped = False
        for part in parts:
            if not isinstance(part, griffe.ExprSubscript):
                return None
            head = _canonical(part.left)
            args = list(part.slice.elements) if isinstance(part.slice, griffe.ExprTuple) else [part.slice]
            if head in _OUTCOME and len(args) == 3:
                state, errors, output = self.annotation(args[0]), self._errors(args[1]), self.annotation(args[2])
                shaped = True
            elif head in _OK and len(args) == 2:
                state = state or self.annotation(args[0])
                output = self.annotation(args[1])
                shaped = True
            elif head in _ERR and len(args) == 2:
                state = state or self.annotation(args[0])
                errors = self._errors(args[1])
                shaped = True
            else:
                return None
        return StepReturn(state, errors, output) if shaped else None

    def _errors(self, expr: object) -> ErrorSet | None:
        read = self.annotation(expr)
        if read is None:
            return None
        if read == NEVER:
            return frozenset()
        return frozenset(read.members) if hasattr(read, "members") else frozenset({read})


# ---------------------------------------------------------------- helpers

_PYDANTIC = frozenset({"pydantic.BaseModel", "pydantic.main.BaseModel"})
#: Annotations in a class body that declare no field: class variables, a dataclass's init-only values.
_CLASS_VARS = frozenset({"typing.ClassVar", "typing_extensions.ClassVar", "dataclasses.InitVar"})
_GENERIC_BASES = frozenset({"typing.Generic", "typing_extensions.Generic", "typing.Protocol", "typing_extensions.Protocol", "abc.ABC"})
_TYPED_DICTS = frozenset({"typing.TypedDict", "typing_extensions.TypedDict"})
_DATACLASS_DECORATORS = frozenset({"dataclasses.dataclass", "pydantic.dataclasses.dataclass"})

BaseKind: TypeAlias = Literal["object", "generic", "pydantic", "typed dict", "builtin", "class"]


def _base_kind(path: str) -> BaseKind:
    """What a class a template's value derives from is, for :meth:`PythonIndex.members`."""
    if path == "builtins.object":
        return "object"
    if path in _GENERIC_BASES:
        return "generic"
    if path in _PYDANTIC:
        return "pydantic"
    if path in _TYPED_DICTS:
        return "typed dict"
    if path.startswith("builtins."):
        return "builtin"
    return "class"


def _is_dataclass(cls: griffe.Class) -> bool:
    """Is ``cls`` decorated ``@dataclass`` (or ``@dataclass(…)``, or pydantic's)?"""
    return any(_canonical(d.value) in _DATACLASS_DECORATORS for d in cls.decorators)


#: The public attributes every pydantic model has (``model_dump``, ``model_fields``, …), as pydantic
#: 2's ``BaseModel`` defines them: written out, so that ``mcec check --fast`` need not import pydantic
#: (~0.3 s) to check a template (tests/check/test_check_python.py holds it to the installed pydantic).
PYDANTIC_MODEL_ATTRIBUTES = frozenset(
    {
        "construct", "copy", "dict", "from_orm", "json", "model_computed_fields", "model_config",
        "model_construct", "model_copy", "model_dump", "model_dump_json", "model_extra", "model_fields",
        "model_fields_set", "model_json_schema", "model_parametrized_name", "model_post_init",
        "model_rebuild", "model_validate", "model_validate_json", "model_validate_strings", "parse_file",
        "parse_obj", "parse_raw", "schema", "schema_json", "update_forward_refs", "validate",
    }
)


def import_paths(directory: str | Path | None = None, spec: str | Path | None = None) -> list[Path]:
    """Where a run in ``directory`` (default: the working directory) imports from: that folder
    first, then the folder the spec's package starts in (:func:`package_root`), then
    ``PYTHONPATH`` and the interpreter's own paths."""
    first = Path(directory) if directory is not None else Path(os.getcwd())
    roots = [first] if spec is None else [first, package_root(spec)]
    return [*roots, *[Path(p) for p in sys.path if p]]


def spec_file_on(module: str, search_paths: Sequence[Path]) -> Path | None:
    """:meth:`PythonIndex.spec_file` without an index: the spec of generated module
    ``agents.research_mce`` is ``agents/research.mce`` under the first of ``search_paths``
    that has one. No Python is read (a check without class knowledge reads none): the
    package's folders are taken to be its path under each search path, which is where
    Python finds them unless a package's ``__init__.py`` moves its ``__path__``."""
    parent_name, _, leaf = module.rpartition(".")
    if not leaf.endswith("_mce") or leaf == "_mce":
        return None
    relative = Path(*parent_name.split("."), f"{leaf[: -len('_mce')]}.mce") if parent_name else Path(f"{leaf[: -len('_mce')]}.mce")
    return next((root / relative for root in search_paths if (root / relative).is_file()), None)


def package_root(spec: str | Path) -> Path:
    """The folder a spec's imports start from when the spec sits in a package: the first folder
    above it without an ``__init__.py`` (``proj/app/agents/x.mce`` with ``app/__init__.py`` and
    ``app/agents/__init__.py`` → ``proj``). A generated module beside the spec is imported
    from there."""
    folder = Path(spec).resolve().parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def _literal_value(expr: object) -> str | int | None:
    """A ``Literal[…]`` argument as written (griffe keeps it as source text): a string or an int."""
    if not isinstance(expr, str):
        return None
    try:
        value = ast.literal_eval(expr)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def _canonical(expr: object) -> str | None:
    """The dotted path a griffe name expression stands for (``Exception`` → ``builtins.Exception``)."""
    path = getattr(expr, "canonical_path", None)
    if not isinstance(path, str) or not path:
        return None
    if "." not in path and hasattr(builtins, path):
        return f"builtins.{path}"
    return path


def _file_of(obj: griffe.Object) -> Path | None:
    try:
        path = obj.filepath
    except Exception:  # griffe raises for objects without a file (builtin modules)
        return None
    return path if isinstance(path, Path) else None


def _union_parts(expr: object) -> list[object]:
    if isinstance(expr, griffe.ExprBinOp) and expr.operator == "|":
        return [*_union_parts(expr.left), *_union_parts(expr.right)]
    return [expr]


def _builtin_object(name: str) -> PyObject | Missing:
    value = getattr(builtins, name, None)
    if value is None:
        return Missing(f"`{name}` is not a Python builtin")
    if isinstance(value, type):
        info = builtin_info(name)
        assert info is not None
        return PyClass(f"builtins.{name}", info, (), is_pydantic=False, is_dataclass=False)
    return PyValue(f"builtins.{name}")


def _suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The "did you mean" of ``name`` among ``candidates``, memoised by both (see :func:`_close_matches`)."""
    return _close_matches(name, candidates if isinstance(candidates, tuple) else tuple(candidates))


@functools.lru_cache(maxsize=4096)
def _close_matches(name: str, candidates: tuple[str, ...]) -> str | None:
    # Kept across checks and indexes: an editor checks a spec on every pause, and difflib over a
    # module's every member for each name it lacks was most of a check (1,100 such names in the
    # 1,000-line benchmark spec). The key is all the answer depends on, so it cannot go stale.
    matches = difflib.get_close_matches(name, sorted(set(candidates)), n=3, cutoff=0.6)
    if not matches:
        return None
    if len(matches) == 1:
        return f"did you mean `{matches[0]}`?"
    return "did you mean one of " + ", ".join(f"`{m}`" for m in matches) + "?"


def _folders(package: griffe.Module) -> list[Path]:
    """The folders a package's modules are in: its own, or a namespace package's several."""
    path = package.filepath if isinstance(package.filepath, (Path, list)) else None
    if isinstance(path, list):
        return path
    if isinstance(path, Path) and path.name in ("__init__.py", "__init__.pyi"):
        return [path.parent]
    return []  # a plain module: it has no submodules


def _submodule_names(folder: Path) -> list[str]:
    try:
        return [p.stem for p in folder.iterdir() if p.suffix in (".py", ".pyi") or (p / "__init__.py").is_file()]
    except OSError:
        return []


def _where_modules_come_from() -> str:
    return (
        f"modules are looked for as Python imports them: in the working directory ({os.getcwd()}) and on "
        "PYTHONPATH; run mcec from the folder your imports start from, or add it to PYTHONPATH"
    )
