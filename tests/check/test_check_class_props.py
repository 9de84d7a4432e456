"""Property tests of what the checker knows of user classes (issue 20).

A :class:`World` is a generated Python package of classes: value classes with
random single and multiple inheritance (plain classes, pydantic models and
dataclasses, with annotated fields) and error classes deriving from
``Exception`` or from each other. It is written to a temporary folder, and a
:class:`Plan` — a chain of steps over those classes whose declared types chain
by the subclass relation, with ``catch`` clauses that can fire, declared
errors that cover what escapes, and implementations whose signatures fit
(parameters as wide or wider, results as narrow or narrower) — is rendered as
a spec and an implementation module. The generator computes every relation
from the bases it chose, independently of the checker.

The checker (``check --fast``: the in-process checker over a
:class:`~mcec.check.pyindex.PythonIndex` of that folder) must accept every plan
without an error, and knows each class's ancestry and fields. Each mutation
must be rejected with its code: a step's input swapped for a class the previous
step's output is not (MCE010), a declared error set missing an escaping user
error (MCE013), a ``catch`` of an error no step there can fail with (MCE014),
an implementation attribute the module does not have (MCE002), an
implementation returning a class its declaration does not allow (MCE026).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcec.check import CheckResult, check
from mcec.check.pyindex import PythonIndex
from mcec.span import SourceFile
from mcec.syntax import parse

Family = Literal["plain", "pydantic", "dataclass", "error"]


@dataclass(frozen=True)
class Cls:
    """A generated class: its bases (other generated classes; none for a root) and own fields."""

    name: str
    family: Family
    bases: tuple[str, ...]
    fields: tuple[str, ...]


@dataclass(frozen=True)
class World:
    """The classes of a generated package ``world`` (``world/models.py``)."""

    values: tuple[Cls, ...]
    errors: tuple[Cls, ...]

    def cls(self, name: str) -> Cls:
        return next(c for c in (*self.values, *self.errors) if c.name == name)

    def ancestors(self, name: str) -> frozenset[str]:
        """``name`` and every generated class it derives from."""
        found = {name}
        for base in self.cls(name).bases:
            found |= self.ancestors(base)
        return frozenset(found)

    def descendants(self, name: str) -> list[str]:
        """``name`` and every generated class deriving from it."""
        return [c.name for c in (*self.values, *self.errors) if name in self.ancestors(c.name)]

    def le(self, sub: str, sup: str) -> bool:
        """``sub ≤ sup``: the relation the generator built."""
        return sup in self.ancestors(sub)

    def source(self) -> str:
        lines = [
            "from dataclasses import dataclass",
            "",
            "from pydantic import BaseModel",
            "",
            "",
            "@dataclass",
            "class St:",
            "    turns: int = 0",
        ]
        for cls in (*self.values, *self.errors):
            root = {"plain": "", "pydantic": "BaseModel", "dataclass": "", "error": "Exception"}[cls.family]
            bases = ", ".join(cls.bases) or root
            lines += ["", ""]
            if cls.family == "dataclass":
                lines.append("@dataclass")
            lines.append(f"class {cls.name}({bases}):" if bases else f"class {cls.name}:")
            lines.append(f'    """A generated {cls.family} class."""')
            lines += [f"    {field}: int = 0" for field in cls.fields]
        return "\n".join(lines) + "\n"


def _unrelated(world: World, names: Sequence[str]) -> bool:
    return all(not world.le(a, b) and not world.le(b, a) for i, a in enumerate(names) for b in names[i + 1 :])


@st.composite
def worlds(draw: st.DrawFn) -> World:
    """Classes with random inheritance: up to two bases each, of one family and unrelated (a valid MRO)."""
    world = World((), ())
    for prefix, count, is_error in (("C", draw(st.integers(3, 7)), False), ("E", draw(st.integers(2, 5)), True)):
        for index in range(count):
            earlier = world.errors if is_error else world.values
            bases: tuple[str, ...] = ()
            if earlier and draw(st.booleans()):
                first = draw(st.sampled_from(earlier))
                bases = (first.name,)
                others = [c.name for c in earlier if c.family == first.family and _unrelated(world, [first.name, c.name])]
                if others and draw(st.booleans()):
                    bases += (draw(st.sampled_from(others)),)
            family: Family = (
                "error" if is_error else world.cls(bases[0]).family if bases else draw(st.sampled_from(["plain", "pydantic", "dataclass"]))
            )
            name = f"{prefix}{index}"
            fields = tuple(f"{name.lower()}_{k}" for k in range(draw(st.integers(0, 2))))
            cls = Cls(name, family, bases, fields)
            world = replace(world, errors=(*world.errors, cls)) if is_error else replace(world, values=(*world.values, cls))
    return world


@dataclass(frozen=True)
class Step:
    """One link of the chain: declared ``name : takes -> gives ! errors``, and what its implementation says."""

    name: str
    kind: Literal["step", "async step", "fn"]
    takes: str
    gives: str
    errors: tuple[str, ...]
    impl_takes: str  # a class ``takes`` is (as wide or wider)
    impl_gives: str  # a class that is ``gives`` (as narrow or narrower)
    impl_errors: tuple[str, ...]  # each a kind of a declared error
    attr: str  # the implementation's attribute in ``world.impl``
    catch: tuple[str, str] | None = None  # (caught error, what the handler gives)


@dataclass(frozen=True)
class Plan:
    """``pipeline main : takes -> gives ! declared = s1 >>= s2 >>= …`` over a :class:`World`."""

    world: World
    takes: str
    gives: str
    steps: tuple[Step, ...]
    declared: tuple[str, ...]

    def escaping(self) -> frozenset[str]:
        """The errors the chain may fail with: each step's, less those its ``catch`` certainly matches."""
        found: set[str] = set()
        for step in self.steps:
            caught = step.catch[0] if step.catch else None
            found |= {e for e in step.errors if caught is None or not self.world.le(e, caught)}
        return frozenset(found)

    def spec(self) -> str:
        world = self.world
        names = ", ".join(["St", *(c.name for c in (*world.values, *world.errors))])
        lines = [f"from world.models import {names}", "import world.impl as impl", "", "state St"]
        lines += [f"error {c.name}" for c in world.errors]
        lines.append("")
        parts: list[str] = []
        for step in self.steps:
            bang = f" ! {' | '.join(step.errors)}" if step.errors else ""
            lines.append(f"{step.kind} {step.name} : {step.takes} -> {step.gives}{bang} = impl.{step.attr}")
            part = step.name
            if step.catch is not None:
                caught, handler_gives = step.catch
                lines.append(f"fn {step.name}_h : {caught} -> {handler_gives} = impl.{step.name}_h")
                part = f"({step.name} catch {caught} => {step.name}_h)"
            parts.append(part)
        declared = " | ".join(self.declared) or "Never"
        lines += ["", f"pipeline main : {self.takes} -> {self.gives} ! {declared} = {' >>= '.join(parts)};"]
        return "\n".join(lines) + "\n"

    def impl(self) -> str:
        world = self.world
        names = ", ".join(["St", *(c.name for c in (*world.values, *world.errors))])
        lines = ["from typing import Never", "", "from agentmonad import Outcome", "", f"from world.models import {names}"]
        for step in self.steps:
            errors = " | ".join(step.impl_errors) or "Never"
            lines += ["", ""]
            if step.kind == "fn":
                lines.append(f"def {step.name}(value: {step.impl_takes}) -> {step.impl_gives}:")
            else:
                prefix = "async def" if step.kind == "async step" else "def"
                lines.append(f"{prefix} {step.name}(state: St, value: {step.impl_takes}) -> Outcome[St, {errors}, {step.impl_gives}]:")
            lines.append("    raise NotImplementedError")
            if step.catch is not None:
                caught, handler_gives = step.catch
                lines += ["", "", f"def {step.name}_h(error: {caught}) -> {handler_gives}:", "    raise NotImplementedError"]
        return "\n".join(lines) + "\n"


@st.composite
def plans(draw: st.DrawFn, min_steps: int = 1) -> Plan:
    """A well-typed chain over a generated world (the module docstring says what that means)."""
    world = draw(worlds())
    values = [c.name for c in world.values]
    errors = [c.name for c in world.errors]
    takes = draw(st.sampled_from(values))
    current = takes
    steps: list[Step] = []
    for index in range(draw(st.integers(min_steps, 4))):
        kind = draw(st.sampled_from(["step", "async step", "fn"]))
        step_takes = draw(st.sampled_from(sorted(world.ancestors(current))))
        gives = draw(st.sampled_from(values))
        step_errors = () if kind == "fn" else tuple(draw(st.lists(st.sampled_from(errors), max_size=2, unique=True)))
        impl_errors = tuple(sorted({draw(st.sampled_from(world.descendants(e))) for e in step_errors if draw(st.booleans())}))
        catch = None
        if step_errors and draw(st.booleans()):
            related = sorted({c for e in step_errors for c in (*world.ancestors(e), *world.descendants(e))})
            catch = (draw(st.sampled_from(related)), draw(st.sampled_from(world.descendants(gives))))
        steps.append(
            Step(
                name=f"s{index + 1}",
                kind=kind,
                takes=step_takes,
                gives=gives,
                errors=step_errors,
                impl_takes=draw(st.sampled_from(sorted(world.ancestors(step_takes)))),
                impl_gives=draw(st.sampled_from(world.descendants(gives))),
                impl_errors=impl_errors,
                attr=f"s{index + 1}",
                catch=catch,
            )
        )
        current = gives
    plan = Plan(world, takes, draw(st.sampled_from(sorted(world.ancestors(current)))), tuple(steps), ())
    covering = {draw(st.sampled_from(sorted(world.ancestors(e)))) for e in sorted(plan.escaping())}
    return replace(plan, declared=tuple(sorted(covering)))


def check_plan(plan: Plan, inspect: Callable[[PythonIndex], None] | None = None) -> CheckResult:
    """``check --fast`` of the plan's spec, with its world and implementations written to a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="mce-classes-") as folder:
        package = Path(folder) / "world"
        package.mkdir()
        (package / "__init__.py").write_text("", encoding="utf-8")
        (package / "models.py").write_text(plan.world.source(), encoding="utf-8")
        (package / "impl.py").write_text(plan.impl(), encoding="utf-8")
        text = plan.spec()
        source = SourceFile("classes.mce", text)
        parsed = parse(source)
        assert parsed.module is not None and not parsed.diagnostics, (text, parsed.diagnostics)
        index = PythonIndex([folder])
        result = check(parsed.module, source, index)
        if inspect is not None:
            inspect(index)
        return result


def errors_of(result: CheckResult) -> set[str]:
    return {d.code for d in result.diagnostics if d.is_error}


def _report(plan: Plan, result: CheckResult) -> str:
    messages = "\n".join(f"{d.code} {d.span.line}: {d.message}" for d in result.diagnostics)
    return f"{plan.world.source()}\n{plan.impl()}\n{plan.spec()}\n{messages}"


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@SETTINGS
@given(plans())
def test_well_typed_specs_over_user_classes_check(plan: Plan) -> None:
    def knows_the_classes(index: PythonIndex) -> None:
        for cls in (*plan.world.values, *plan.world.errors):
            found = index.class_at(f"world.models.{cls.name}")
            assert found is not None, cls
            generated = {a.rsplit(".", 1)[1] for a in found.info.ancestors if a.startswith("world.models.")}
            assert generated == plan.world.ancestors(cls.name) and found.info.complete, (cls, found.info)
            assert tuple(f.name for f in found.fields) == cls.fields
            assert (found.is_pydantic, found.is_dataclass) == (cls.family == "pydantic", cls.family == "dataclass")

    result = check_plan(plan, knows_the_classes)
    assert not errors_of(result), _report(plan, result)
    assert result.unknown_relations == 0, _report(plan, result)  # every relation between them is definite


@SETTINGS
@given(plans(min_steps=2), st.data())
def test_a_step_taking_an_unrelated_class_is_mce010(plan: Plan, data: st.DataObject) -> None:
    index = data.draw(st.integers(1, len(plan.steps) - 1))
    previous = plan.steps[index - 1].gives
    unrelated = [c.name for c in plan.world.values if not plan.world.le(previous, c.name)]
    assume(unrelated)
    takes = data.draw(st.sampled_from(unrelated))
    step = replace(plan.steps[index], takes=takes, impl_takes=takes)
    mutated = replace(plan, steps=(*plan.steps[:index], step, *plan.steps[index + 1 :]))
    result = check_plan(mutated)
    assert errors_of(result) == {"MCE010"}, _report(mutated, result)


@SETTINGS
@given(plans(), st.data())
def test_an_undeclared_user_error_escaping_is_mce013(plan: Plan, data: st.DataObject) -> None:
    assume(plan.escaping())
    escaping = data.draw(st.sampled_from(sorted(plan.escaping())))
    declared = tuple(d for d in plan.declared if not plan.world.le(escaping, d))
    mutated = replace(plan, declared=declared)
    result = check_plan(mutated)
    assert errors_of(result) == {"MCE013"}, _report(mutated, result)
    assert any(f"`{escaping}`" in d.message for d in result.diagnostics if d.code == "MCE013")


@SETTINGS
@given(plans(), st.data())
def test_catching_an_error_that_cannot_happen_is_mce014(plan: Plan, data: st.DataObject) -> None:
    uncaught = [i for i, step in enumerate(plan.steps) if step.catch is None]  # a catch added, none replaced
    assume(uncaught)
    index = data.draw(st.sampled_from(uncaught))
    step = plan.steps[index]
    world = plan.world
    impossible = [
        c.name for c in world.errors if all(not world.le(e, c.name) and not world.le(c.name, e) for e in step.errors)
    ]
    assume(impossible)
    caught = data.draw(st.sampled_from(impossible))
    mutated_step = replace(step, catch=(caught, step.gives))
    mutated = replace(plan, steps=(*plan.steps[:index], mutated_step, *plan.steps[index + 1 :]))
    result = check_plan(mutated)
    assert errors_of(result) == {"MCE014"}, _report(mutated, result)


@SETTINGS
@given(plans(), st.data())
def test_a_missing_implementation_attribute_is_mce002(plan: Plan, data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(plan.steps) - 1))
    step = replace(plan.steps[index], attr=f"{plan.steps[index].attr}_missing")
    mutated = replace(plan, steps=(*plan.steps[:index], step, *plan.steps[index + 1 :]))
    result = check_plan(mutated)
    assert errors_of(result) == {"MCE002"}, _report(mutated, result)
    assert any(f"`{step.attr}`" in d.message for d in result.diagnostics if d.code == "MCE002")


@SETTINGS
@given(plans(), st.data())
def test_an_implementation_returning_another_class_is_mce026(plan: Plan, data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(plan.steps) - 1))
    step = plan.steps[index]
    others = [c.name for c in plan.world.values if not plan.world.le(c.name, step.gives)]
    assume(others)
    mutated_step = replace(step, impl_gives=data.draw(st.sampled_from(others)))
    mutated = replace(plan, steps=(*plan.steps[:index], mutated_step, *plan.steps[index + 1 :]))
    result = check_plan(mutated)
    assert errors_of(result) == {"MCE026"}, _report(mutated, result)
