"""Checked plans (docs/language.md §12): `.mce` expression text an LLM writes at run time, checked
by the compiler against a toolbox before it runs.

Two modules, one package:

- :mod:`mcec.plans.check` — a plan checked against a toolbox's scope (the checker's side: parse,
  confine to the toolbox, type, bound the work); imports nothing of the runtime;
- :mod:`mcec.plans.engine` — the plan engine ``agentmonad.plans`` finds through its entry point:
  it checks a toolbox's spec once, each plan against it, and runs the accepted ones on the
  reference interpreter (imports ``agentmonad``).

Neither is imported here, so that a reader of plans (``mcec graph --plan``) pays for the runtime
only when it runs one.
"""
