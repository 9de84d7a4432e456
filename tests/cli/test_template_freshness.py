"""A template file (`llm n : A -> B = m file "PATH"`) is an input of the generated module like
the spec itself (docs/language.md §7, §10): its text is embedded in the module, so a changed
template makes `mcec build` recompile, makes the module warn at import, and makes `mcec run`
and the pytest plugin call the module stale. Real `mcec` and `python` subprocesses throughout;
the spec-only side is in tests/cli/test_freshness.py."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from pytest_runs import QUIET

from agentmonad.freshness import StaleModuleWarning, check_fresh

#: A spec whose one llm step reads its prompt from a file beside it (or, for the shared
#: case, from a folder next to the spec's).
SPEC = """\
model m = openai "gpt-4o-mini"
llm ask : str -> str = m file "{template}"

pipeline p : str -> str ! LLMFailed | LLMUnavailable = ask;
"""
PROMPT = "Answer briefly: {{ value }}\n"


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(project)}
    return subprocess.run([sys.executable, *args], cwd=project, capture_output=True, text=True, env=env, timeout=300)


def _mcec(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(project, "-m", "mcec", *args)


def _import(project: Path, module: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return _run(project, *flags, "-c", f"import {module}; print('imported')")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``app/spec.mce`` reading ``app/prompts/ask.j2`` (a path below the spec's folder)."""
    (tmp_path / "app" / "prompts").mkdir(parents=True)
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "spec.mce").write_text(SPEC.format(template="prompts/ask.j2"))
    (tmp_path / "app" / "prompts" / "ask.j2").write_text(PROMPT)
    return tmp_path


def _compile(project: Path, spec: str = "app/spec.mce") -> None:
    done = _mcec(project, "compile", "--no-mypy", spec)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mcec_build_compiles_again_when_a_template_file_changes(project: Path) -> None:
    done = _mcec(project, "build", "app", "--no-mypy")
    assert "1 compiled, 0 up to date" in done.stdout, done.stdout + done.stderr
    assert "1 up to date" in _mcec(project, "build", "app", "--no-mypy").stdout
    template = project / "app" / "prompts" / "ask.j2"
    template.write_text(PROMPT + "Be polite.\n")
    done = _mcec(project, "build", "app", "--no-mypy")
    assert done.returncode == 0 and "1 compiled, 0 up to date" in done.stdout, done.stdout + done.stderr
    assert "Be polite." in (project / "app" / "spec_mce.py").read_text()  # the module runs the new prompt
    assert "1 up to date" in _mcec(project, "build", "app", "--no-mypy").stdout
    template.unlink()  # a template that is gone: the spec is built again, and fails with the checker's MCE023
    done = _mcec(project, "build", "app", "--no-mypy")
    assert done.returncode == 1 and "0 compiled, 0 up to date, 1 failed" in done.stdout, done.stdout + done.stderr
    assert "MCE023" in done.stdout and "Traceback" not in done.stdout + done.stderr


def test_importing_a_module_whose_template_changed_warns(project: Path) -> None:
    _compile(project)
    done = _import(project, "app.spec_mce", "-W", "error")
    assert done.returncode == 0 and done.stdout == "imported\n", done.stderr
    template = project / "app" / "prompts" / "ask.j2"
    template.write_text(PROMPT + "Be polite.\n")
    done = _import(project, "app.spec_mce")
    assert done.returncode == 0 and done.stdout == "imported\n"  # it still imports …
    assert "StaleModuleWarning" in done.stderr  # … but says so, naming the template and the command
    assert f"spec_mce.py is stale: its template {project}/app/prompts/ask.j2 changed" in done.stderr
    assert "runs the old prompt" in done.stderr and f"run `mcec compile {project}/app/spec.mce`" in done.stderr
    done = _import(project, "app.spec_mce", "-W", "error::UserWarning")
    assert done.returncode == 1 and "StaleModuleWarning" in done.stderr and done.stdout == ""
    _compile(project)
    done = _import(project, "app.spec_mce", "-W", "error")
    assert done.returncode == 0 and done.stdout == "imported\n", done.stderr


def test_importing_a_module_whose_template_was_deleted_warns_and_does_not_crash(project: Path) -> None:
    _compile(project)
    (project / "app" / "prompts" / "ask.j2").unlink()
    done = _import(project, "app.spec_mce")
    assert done.returncode == 0 and done.stdout == "imported\n", done.stderr
    assert f"its template {project}/app/prompts/ask.j2 was deleted" in done.stderr
    assert "restore the template or change the spec, then run `mcec compile " in done.stderr
    assert "Traceback" not in done.stderr


def test_mcec_run_says_the_module_is_stale_after_a_template_edit(project: Path) -> None:
    _compile(project)
    (project / "app" / "prompts" / "ask.j2").write_text(PROMPT + "Be polite.\n")
    done = _mcec(project, "run", "app/spec.mce", "p", "--input", '"hi"', "--model", "m=test")
    assert done.returncode == 0 and '"ok": true' in done.stdout, done.stdout + done.stderr
    assert (
        "warning: `app/spec_mce.py` is stale: its template `app/prompts/ask.j2` changed after it was generated, "
        "so code that imports it runs the old prompt (this command uses the current template)"
    ) in done.stderr
    assert "run `mcec compile app/spec.mce` to regenerate it" in done.stderr
    _compile(project)
    done = _mcec(project, "run", "app/spec.mce", "p", "--input", '"hi"', "--model", "m=test")
    assert done.returncode == 0 and "stale" not in done.stderr, done.stderr


def test_a_template_shared_by_two_specs_is_an_input_of_both(tmp_path: Path) -> None:
    """``app/a/spec.mce`` and ``app/b/spec.mce`` both read ``app/shared/ask.j2``, each relative
    to its own folder (``../shared/ask.j2``), as the checker resolves it."""
    for name in ("a", "b"):
        (tmp_path / "app" / name).mkdir(parents=True)
        (tmp_path / "app" / name / "__init__.py").write_text("")
        (tmp_path / "app" / name / "spec.mce").write_text(SPEC.format(template="../shared/ask.j2"))
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "shared").mkdir()
    shared = tmp_path / "app" / "shared" / "ask.j2"
    shared.write_text(PROMPT)
    done = _mcec(tmp_path, "build", "app", "--no-mypy")
    assert "2 compiled, 0 up to date" in done.stdout, done.stdout + done.stderr
    for name in ("a", "b"):
        assert _import(tmp_path, f"app.{name}.spec_mce", "-W", "error").returncode == 0
    shared.write_text(PROMPT + "Be polite.\n")
    for name in ("a", "b"):
        done = _import(tmp_path, f"app.{name}.spec_mce")
        assert f"its template {tmp_path}/app/{name}/../shared/ask.j2 changed" in done.stderr, done.stderr
    done = _mcec(tmp_path, "build", "app", "--no-mypy")
    assert "2 compiled, 0 up to date" in done.stdout, done.stdout + done.stderr
    for name in ("a", "b"):
        assert "Be polite." in (tmp_path / "app" / name / "spec_mce.py").read_text()
        assert _import(tmp_path, f"app.{name}.spec_mce", "-W", "error").returncode == 0


def test_the_pytest_plugin_fails_a_spec_whose_module_has_an_old_template(project: Path) -> None:
    _compile(project)
    (project / "app" / "prompts" / "ask.j2").write_text(PROMPT + "Be polite.\n")
    done = _run(project, "-m", "pytest", "-p", "no:cacheprovider", *QUIET, "--mce-fast", "app/spec.mce")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the generated module beside it, spec_mce.py, is stale: the template prompts/ask.j2 changed" in done.stdout
    _compile(project)
    done = _run(project, "-m", "pytest", "-p", "no:cacheprovider", *QUIET, "--mce-fast", "app/spec.mce")
    assert done.returncode == 0, done.stdout + done.stderr


def test_only_a_module_with_template_files_passes_templates(project: Path) -> None:
    """The call stays ``check_fresh("name.mce", "<sha>")`` for inline templates; a file
    template adds ``templates={"PATH": "<sha256 of its bytes>"}``, PATH as the spec writes it."""
    _compile(project)
    code = (project / "app" / "spec_mce.py").read_text()
    digest = hashlib.sha256(PROMPT.encode()).hexdigest()
    assert f'templates={{"prompts/ask.j2": "{digest}"}}' in code.replace("\n", "").replace("    ", "")
    (project / "app" / "inline.mce").write_text(SPEC.replace('file "{template}"', '"Q: {{{{ value }}}}"').format())
    _compile(project, "app/inline.mce")
    assert "templates=" not in (project / "app" / "inline_mce.py").read_text()


def test_check_fresh_reads_templates_only_beside_their_spec(tmp_path: Path) -> None:
    module = tmp_path / "x_mce.py"
    module.write_text("")
    spec = tmp_path / "x.mce"
    spec.write_bytes(b"spec\n")
    (tmp_path / "t.j2").write_bytes(b"prompt\n")
    sha = {name: hashlib.sha256(data).hexdigest() for name, data in (("spec", b"spec\n"), ("t", b"prompt\n"))}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_fresh("x.mce", sha["spec"], str(module), templates={"t.j2": sha["t"]}) is True
        # no spec beside the module: nothing to compare, not even a template that is missing
        assert check_fresh("gone.mce", sha["spec"], str(module), templates={"missing.j2": "0" * 64}) is True
    os.mkfifo(tmp_path / "fifo.j2")  # a FIFO where a template was: reported, never waited on
    with pytest.warns(StaleModuleWarning) as caught:
        assert check_fresh("x.mce", sha["spec"], str(module), templates={"t.j2": "0" * 64, "fifo.j2": "0" * 64}) is False
    warning = caught[0].message
    assert isinstance(warning, StaleModuleWarning) and warning.spec_file == str(spec)
    assert warning.template_files == (str(tmp_path / "fifo.j2"), str(tmp_path / "t.j2"))
    assert f"its template {tmp_path}/t.j2 changed and its template {tmp_path}/fifo.j2 can no longer be read" in str(
        warning
    )


def test_compile_says_a_used_specs_module_is_stale_when_its_template_changed(project: Path) -> None:
    """`main.mce` uses `app/spec.mce`'s pipeline (§11): compiling it warns that the used module on
    disk, which the compiled one imports, runs an old prompt."""
    (project / "main.mce").write_text("from app.spec_mce import p\n\npipeline q : str -> str ! LLMFailed | LLMUnavailable = p;\n")
    _compile(project)
    done = _mcec(project, "compile", "--no-mypy", "main.mce")
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    (project / "app" / "prompts" / "ask.j2").write_text(PROMPT + "Be polite.\n")
    done = _mcec(project, "compile", "--no-mypy", "main.mce")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "warning: `app/spec_mce.py` (from `app/spec.mce`) is stale (its template `app/prompts/ask.j2` changed "
        "after it was generated)"
    ) in done.stderr


def test_a_module_that_records_no_check_fresh_call_is_judged_by_its_header(tmp_path: Path) -> None:
    """A module of an mcec before `check_fresh` (or one whose call is not literal) still has
    the header's spec hash: `stale_module_beside` compares that, with no templates."""
    from mcec.cli.output import recorded_inputs, stale_module_beside

    spec = tmp_path / "x.mce"
    spec.write_bytes(b"spec\n")
    digest = hashlib.sha256(b"spec\n").hexdigest()
    module = tmp_path / "x_mce.py"
    module.write_text(f"# Generated by mcec 0.0.1 from x.mce (sha256 {digest}).\nFRESH = check_fresh(NAME, 1)\n")
    assert recorded_inputs(module) == ("x.mce", digest, {})
    assert stale_module_beside(spec) is None
    spec.write_bytes(b"spec, edited\n")
    stale = stale_module_beside(spec)
    assert stale is not None and stale.spec_changed and stale.templates == ()
    module.write_text("print('a user file')\n")  # not mcec's: nothing recorded, nothing said
    assert recorded_inputs(module) is None and stale_module_beside(spec) is None
