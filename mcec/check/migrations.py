"""The checks of what a spec declares to carry runs in flight over from an earlier version
(docs/language.md §13, "Changing a spec with runs in flight"), MCE035.

A migration ``fn`` is named for what it migrates: ``migrate_state`` must give the spec's state
type, ``migrate_output_NAME`` the output type of the step, tool, ``llm`` or ``ask`` ``NAME`` of
this spec (its input is the old version's type: this spec cannot see it, mypy checks the function).
``rename OLD -> NEW`` must name an effect ``NEW`` of this spec, and an ``OLD`` it no longer
declares, renamed once. Their signatures against the Python functions are checked like every
``fn``'s (MCE026); ``mcec runs upgrade`` applies them (:mod:`mcec.durable.migrate`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcec import syntax
from mcec.check import report
from mcec.check.env import suggest
from mcec.check.typed import TRename
from mcec.diagnostics import Diagnostic

if TYPE_CHECKING:
    from mcec.check.names import Declared
    from mcec.check.types import Type

__all__ = ["STATE_MIGRATION", "OUTPUT_MIGRATION", "is_migration", "migration_diagnostics", "output_migrated",
           "renames"]

#: The name of the ``fn`` that migrates a recorded state to this version's state type.
STATE_MIGRATION = "migrate_state"
#: The prefix of the name of a ``fn`` that migrates the recorded outputs of the effect it names.
OUTPUT_MIGRATION = "migrate_output_"


def output_migrated(name: str) -> str | None:
    """The effect a ``fn`` named ``name`` migrates the outputs of (None: it is no output migration)."""
    if not name.startswith(OUTPUT_MIGRATION):
        return None
    return name.removeprefix(OUTPUT_MIGRATION) or None


def is_migration(name: str) -> bool:
    """Whether a ``fn`` named ``name`` is a migration (``mcec runs upgrade`` uses it: not unused)."""
    return name == STATE_MIGRATION or output_migrated(name) is not None


def renames(module: syntax.Module) -> tuple[TRename, ...]:
    """The ``rename OLD -> NEW`` declarations of ``module``, in source order."""
    return tuple(TRename(d.old.text, d.new.text, d.span) for d in module.decls if isinstance(d, syntax.RenameDecl))


def migration_diagnostics(module: syntax.Module, declared: Declared) -> list[Diagnostic]:
    """MCE035 for every migration ``fn`` and ``rename`` of ``module`` that does not fit."""
    effects: dict[str, Type] = {
        name: effect.sig.output
        for table in (declared.steps, declared.tools, declared.llms, declared.asks)
        for name, effect in table.items()
    }
    found: list[Diagnostic] = []
    misfit = report.migration_misfit
    renamed: set[str] = set()
    for decl in module.decls:
        if isinstance(decl, syntax.FnDecl) and decl.name.text in declared.fns:
            fn = declared.fns[decl.name.text]
            name, gives, target = fn.name, fn.sig.output, output_migrated(fn.name)
            if name == STATE_MIGRATION and gives != declared.state:
                wanted = f"`{declared.state}`" if declared.state is not None else "none: it declares no state"
                found.append(misfit(f"`{name}` gives `{gives}`, but this spec's state type is {wanted}",
                                    decl.output.span, "a state migration takes the old version's state and gives this one's"))
            elif target is not None and target not in effects:
                found.append(misfit(f"`{name}` migrates the outputs of `{target}`, which is no step, tool, llm or ask "
                                    "of this spec", decl.name.span, suggest(target, list(effects))))
            elif target is not None and gives != effects[target]:
                found.append(misfit(f"`{name}` gives `{gives}`, but `{target}` outputs `{effects[target]}`",
                                    decl.output.span,
                                    f"an output migration takes what the old `{target}` gave and gives what it gives now"))
        elif isinstance(decl, syntax.RenameDecl):
            old, new = decl.old.text, decl.new.text
            if new not in effects:
                found.append(misfit(f"`rename {old} -> {new}`: `{new}` is no step, tool, llm or ask of this spec",
                                    decl.new.span, suggest(new, list(effects))))
            elif old in declared.env.bindings:
                found.append(misfit(f"`rename {old} -> {new}`: `{old}` is still declared here", decl.old.span,
                                    "a rename names what an effect was called in the version runs started on"))
            elif old in renamed:
                found.append(misfit(f"`{old}` is renamed twice", decl.old.span))
            renamed.add(old)
    return found
