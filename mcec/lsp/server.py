"""The language server: pygls wiring over :mod:`mcec.lsp.analysis` and :mod:`mcec.lsp.features`.

Documents: the client sends each open spec's text; the server keeps, per open
spec, its latest :class:`~mcec.lsp.analysis.Analysis` and the latest tree that
parsed (completion uses it while the text being typed does not parse).

When diagnostics are published:

- on open, and :data:`DEBOUNCE` seconds after the last change (a burst of
  keystrokes is checked once): parse (incrementally) and check, as
  ``mcec check --fast``;
- on save: the full check, as ``mcec check`` (code generated in memory, mypy
  --strict on it, cached in ``.mcec/``), in a worker thread so the server keeps
  answering, one at a time per spec (:mod:`mcec.lsp.saves`: a newer save kills the
  running mypy and its text is checked next); its MCE100 findings are kept with the
  text they were found in and shown again as long as the text is that text;
- a spec reads the specs it uses (§11) as the editor holds them when they are
  open, unsaved edits included (:meth:`McecLanguageServer.unsaved`), else from
  disk; after an edit to an open spec, the open specs that use it are checked again;
- after a spec is saved, or a file changes on disk (``workspace/didChangeWatchedFiles``),
  every other open spec is checked again, and the Python index is read afresh
  when a ``.py`` file changed.

A request that fails inside the server (a bug) is logged to the client and
answered with nothing, so one bad question never takes the server down.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from mcec.version import __version__
from mcec.codegen.mypy_check import Cancel
from mcec.check.pyindex import PythonIndex, package_root
from mcec.check.uses import Specs
from mcec.diagnostics import Diagnostic
from mcec.gcpause import without_cycle_collection
from mcec.lsp import features
from mcec.lsp.analysis import Analysis, analyse
from mcec.lsp.positions import offset_of, range_of
from mcec.lsp.saves import Findings, SaveChecks
from mcec.span import SourceFile
from mcec.syntax import tree as s

__all__ = ["DEBOUNCE", "McecLanguageServer", "build_server"]

#: Seconds of quiet after a change before the spec is checked again.
DEBOUNCE = 0.15

_T = TypeVar("_T")
_log = logging.getLogger(__name__)


@dataclass
class OpenSpec:
    """What the server holds for one open spec."""

    uri: str
    path: str
    analysis: Analysis | None = None
    #: The latest tree that parsed (reparse starts from it; completion reads it while typing).
    tree: s.Module | None = None
    #: The text mypy's findings (MCE100) were found in, and those findings.
    full_check: tuple[str, tuple[Diagnostic, ...]] | None = None
    #: The pending debounced check, cancelled by the next change.
    pending: asyncio.Task[None] | None = field(default=None, repr=False)
    #: The full checks its saves start (made at the first save).
    saves: SaveChecks | None = field(default=None, repr=False)
    #: The diagnostics last published, as the protocol's, by diagnostic (its identity) and where
    #: it was shown: a re-check keeps the diagnostics of the declarations an edit did not touch as
    #: the same objects, and one shown at the same place is not converted again.
    shown: dict[int, tuple[Diagnostic, tuple[object, ...], lsp.Diagnostic]] = field(default_factory=dict, repr=False)


def path_of(uri: str) -> str:
    """The file system path of a ``file:`` URI (other schemes: the URI's path part)."""
    return unquote(urlparse(uri).path)


class McecLanguageServer(LanguageServer):
    """The mcec server: open specs, their analyses, and one Python index per package root."""

    def __init__(self) -> None:
        super().__init__("mcec", __version__)
        self.specs: dict[str, OpenSpec] = {}
        #: Open files that are not specs (an llm's template file): no diagnostics, completion only.
        self.others: set[str] = set()
        self._indexes: dict[Path, PythonIndex] = {}
        #: mypy's findings by (path, text hash): a spec saved twice unchanged is not checked again.
        self._mypy_cache: dict[tuple[str, str], tuple[Diagnostic, ...]] = {}

    # ------------------------------------------------------------ analysis

    def index_for(self, path: str) -> PythonIndex:
        """The Python index of a spec's package root (made once, until a Python file changes)."""
        root = package_root(path)
        index = self._indexes.get(root)
        if index is None:
            index = self._indexes[root] = PythonIndex.for_directory(spec=path)
        return index

    def forget_python(self) -> None:
        """Read the Python modules afresh at the next check (one of them changed)."""
        self._indexes.clear()

    def refresh(self, spec: OpenSpec) -> None:
        """Parse and check the spec's current text and publish its diagnostics."""
        # The cycle collector stays off while the diagnostics are made and sent too, not only
        # while the spec is checked (mcec.gcpause): the trees and analyses the server keeps alive
        # are large, hold no cycles, and each full collection walked them all again.
        with without_cycle_collection():
            self._refresh(spec)

    def _refresh(self, spec: OpenSpec) -> None:
        document = self.workspace.get_text_document(spec.uri)
        source = SourceFile(spec.path, document.source)
        analysis = analyse(source, spec.tree, self.index_for(spec.path), last=spec.analysis, overlay=self.unsaved())
        spec.analysis = analysis
        if analysis.module is not None:
            spec.tree = analysis.module
        self.publish(spec, document.version)

    def publish(self, spec: OpenSpec, version: int | None) -> None:
        """Send the spec's diagnostics: the fast check's, and mypy's when the text is the one it checked."""
        analysis = spec.analysis
        if analysis is None:
            return
        shown = list(analysis.diagnostics)
        if spec.full_check is not None and spec.full_check[0] == analysis.source.text:
            shown.extend(d for d in spec.full_check[1] if d not in analysis.diagnostics)
        own = Path(spec.path).resolve()
        mine = [d for d in shown if _same_file(d.span.path, own)]
        converted: dict[int, tuple[Diagnostic, tuple[object, ...], lsp.Diagnostic]] = {}
        for diagnostic in mine:
            place = _place(diagnostic)
            before = spec.shown.get(id(diagnostic))
            if before is not None and before[0] is diagnostic and place and before[1] == place:
                converted[id(diagnostic)] = before
            else:
                converted[id(diagnostic)] = (diagnostic, place, features.to_lsp_diagnostic(diagnostic))
        spec.shown = converted
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=spec.uri, version=version, diagnostics=[converted[id(d)][2] for d in mine]
            )
        )

    def unsaved(self) -> dict[str, str]:
        """The text of every open spec as the editor holds it, by real path: the checker reads a
        spec it uses from here before the disk, so unsaved edits reach the specs using it."""
        texts: dict[str, str] = {}
        for spec in self.specs.values():
            document = self.workspace.get_text_document(spec.uri)
            texts[os.path.realpath(spec.path)] = document.source
        return texts

    def refresh_users(self, changed: OpenSpec) -> None:
        """Check again the other open specs that use ``changed`` (directly or through other specs),
        as its text in the editor now is."""
        overlay = self.unsaved()
        for uri, spec in list(self.specs.items()):
            if uri != changed.uri and self.guarded(functools.partial(self._uses, spec, changed, overlay), False):
                self.guarded(functools.partial(self.refresh, spec), None)

    def _uses(self, spec: OpenSpec, changed: OpenSpec, overlay: dict[str, str]) -> bool:
        """Whether ``spec`` imports ``changed``, directly or through other specs. Its own imports
        are read from the tree it has (a spec using no other spec costs nothing more per edit);
        the specs it uses are read through ``overlay``."""
        if spec.tree is None:
            return False
        index = self.index_for(spec.path)
        used = [index.spec_file(d.module.dotted) for d in spec.tree.decls if isinstance(d, s.FromImport)]
        goal = os.path.realpath(changed.path)
        reach = Specs(index, overlay)
        return any(
            found is not None and (os.path.realpath(found) == goal or reach.path_back(str(found), changed.path) is not None)
            for found in used
        )

    def refresh_others(self, changed: str | None) -> None:
        """Check again every open spec but ``changed`` (a spec or Python file they may read changed)."""
        for uri, spec in list(self.specs.items()):
            if uri != changed:
                self.guarded(functools.partial(self.refresh, spec), None)

    def check_saved(self, spec: OpenSpec) -> None:
        """``mcec check`` of the spec as saved (mypy included), in a worker thread; then publish.
        A check of an earlier save still running is cancelled (:mod:`mcec.lsp.saves`)."""
        if spec.saves is None:
            spec.saves = SaveChecks(
                functools.partial(self._full_findings, spec.path), functools.partial(self._checked, spec), self.report
            )
        spec.saves.request(self.workspace.get_text_document(spec.uri).source)

    def _full_findings(self, path: str, text: str, cancel: Cancel) -> Findings:
        """mypy's findings on ``text`` (in a worker thread): kept by text, so a spec saved twice
        unchanged is not checked again."""
        key = (path, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
        found = self._mypy_cache.get(key)
        if found is None:
            found = self._mypy_cache[key] = _mypy_findings(path, text, cancel)
        return found

    def _checked(self, spec: OpenSpec, text: str, found: Findings) -> None:
        """Keep the full check's findings on ``text``; show them if the spec's text is still that."""
        spec.full_check = (text, found)
        if self.specs.get(spec.uri) is not spec:
            return  # closed meanwhile
        current = self.workspace.get_text_document(spec.uri)
        if current.source == text:
            self.publish(spec, current.version)

    # ------------------------------------------------------------ safety

    def guarded(self, run: Callable[[], _T], fallback: _T) -> _T:
        """``run()``, or ``fallback`` when it raises: the error is logged to the client, never fatal."""
        try:
            return run()
        except Exception as exc:  # a bug in the server: it must keep answering
            self.report(exc)
            return fallback

    def report(self, exc: Exception) -> None:
        """Log an internal error to the client (and stderr)."""
        message = f"mcec lsp: internal error: {type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        _log.error(message)
        try:
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Error, message=message))
        except Exception:  # the client is gone: nothing to tell
            pass

    def spec_at(self, uri: str, program: bool = False) -> OpenSpec | None:
        """The open spec at ``uri``, checked (when it was never checked, it is checked now); with
        ``program``, its checked program built too when the last check reused earlier results."""
        spec = self.specs.get(uri)
        if spec is not None and spec.analysis is None:
            self.refresh(spec)
        if program and spec is not None and spec.analysis is not None and spec.analysis.partial:
            last = spec.analysis
            if not any(d.is_error for d in last.diagnostics):
                spec.analysis = analyse(last.source, last.module, self.index_for(spec.path), overlay=self.unsaved())
        return spec


def _place(diagnostic: Diagnostic) -> tuple[object, ...]:
    """Where a diagnostic is shown: the path, start and end (line, column) of each of its spans;
    empty when a span's text is not all ASCII (a column in code points is then not always the
    protocol's UTF-16 column, so the place does not say it all)."""
    place: list[object] = []
    for span in (diagnostic.span, *(label.span for label in diagnostic.labels)):
        source = span.source
        if not source.ascii:
            return ()
        place += (source.path, source.position(span.start), source.position(span.end))
    return tuple(place)


def _same_file(path: str, own: Path) -> bool:
    resolved = _resolved(path)
    return resolved is not None and resolved == own


@functools.lru_cache(maxsize=1024)
def _resolved(path: str) -> Path | None:
    """``path`` resolved (None: it cannot be); cached, since every diagnostic asks for its file's
    on every publish, and resolving asks the file system (a thousand diagnostics: 20 ms)."""
    try:
        return Path(path).resolve()
    except (OSError, ValueError):
        return None


def _mypy_findings(path: str, text: str, cancel: Cancel) -> Findings:
    """What ``mcec check`` adds to ``--fast`` for this text: mypy's findings on the generated module
    (empty when the spec has errors: then no code is generated, as in ``mcec check``);
    :class:`~mcec.codegen.mypy_check.Cancelled` when ``cancel`` stopped it."""
    from mcec.codegen.mypy_check import CACHE_DIR, check_in_memory, used_modules
    from mcec.compiler import compile_source

    index = PythonIndex.for_directory(spec=path)  # its own: this runs beside the event loop's checks
    result = compile_source(SourceFile(path, text), index=index)
    if not result.ok or result.generated is None or result.program is None:
        return ()
    used = {u.module: u for u in used_modules(result.program)}
    modules = [(path, result.generated.code, result.generated.source_map)]
    return check_in_memory(modules, CACHE_DIR, [package_root(path)], [used[name] for name in sorted(used)], cancel=cancel)


def build_server() -> McecLanguageServer:
    """The server with every feature registered."""
    server = McecLanguageServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: McecLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        if not path_of(uri).endswith(".mce") and params.text_document.language_id != "mce":
            ls.others.add(uri)  # a template file: its variables are completed, nothing is checked
            return
        spec = ls.specs[uri] = OpenSpec(uri, path_of(uri))
        ls.guarded(lambda: ls.refresh(spec), None)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: McecLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        spec = ls.specs.get(params.text_document.uri)
        if spec is None:
            return
        if spec.pending is not None:
            spec.pending.cancel()
        spec.pending = asyncio.ensure_future(_debounced(ls, spec))

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: McecLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        # not async: each save is handled, its full check asked for, before the next message is read
        spec = ls.specs.get(params.text_document.uri)
        if spec is None:
            return
        if spec.pending is not None:
            spec.pending.cancel()
        ls.guarded(lambda: ls.refresh(spec), None)
        ls.refresh_others(spec.uri)
        ls.guarded(lambda: ls.check_saved(spec), None)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: McecLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.others.discard(params.text_document.uri)
        spec = ls.specs.pop(params.text_document.uri, None)
        if spec is not None and spec.pending is not None:
            spec.pending.cancel()
        if spec is not None and spec.saves is not None:
            spec.saves.stop()  # its mypy is killed: nothing will show what it finds
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: McecLanguageServer, params: None) -> None:
        for spec in ls.specs.values():
            if spec.saves is not None:
                spec.saves.stop()  # the editor is leaving: no mypy of ours outlives it, none holds the exit up

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_files(ls: McecLanguageServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        if any(not change.uri.endswith(".mce") for change in params.changes):
            ls.forget_python()
        ls.refresh_others(None)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: McecLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
        def run() -> lsp.Hover | None:
            spec = ls.spec_at(params.text_document.uri, program=True)
            if spec is None or spec.analysis is None:
                return None
            analysis = spec.analysis
            text = features.hover(analysis, offset_of(analysis.source, params.position), ls.index_for(spec.path))
            if text is None:
                return None
            return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text))

        return ls.guarded(run, None)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: McecLanguageServer, params: lsp.DefinitionParams) -> list[lsp.Location]:
        def run() -> list[lsp.Location]:
            spec = ls.spec_at(params.text_document.uri)
            if spec is None or spec.analysis is None:
                return []
            analysis = spec.analysis
            return features.definition(analysis, offset_of(analysis.source, params.position), ls.index_for(spec.path))

        return ls.guarded(run, [])

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def references(ls: McecLanguageServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
        def run() -> list[lsp.Location]:
            spec = ls.spec_at(params.text_document.uri)
            if spec is None or spec.analysis is None:
                return []
            analysis = spec.analysis
            offset = offset_of(analysis.source, params.position)
            include = params.context.include_declaration
            others = [o.analysis for o in ls.specs.values() if o is not spec and o.analysis is not None]
            here = features.references(analysis, offset, include)
            elsewhere = features.references_elsewhere(analysis, offset, others, ls.index_for(spec.path), include)
            return here + [location for location in elsewhere if location not in here]

        return ls.guarded(run, [])

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[" ", ">", "{", "("]))
    def completion(ls: McecLanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        def run() -> lsp.CompletionList:
            uri = params.text_document.uri
            if uri in ls.others:
                return lsp.CompletionList(is_incomplete=False, items=_in_template(ls, uri, params.position))
            spec = ls.specs.get(uri)
            if spec is None:
                return lsp.CompletionList(is_incomplete=False, items=[])
            # the text as it is now (the debounced check may not have run yet)
            document = ls.workspace.get_text_document(spec.uri)
            source = SourceFile(spec.path, document.source)
            current = spec.analysis
            if current is None or current.source.text != source.text:
                current = Analysis(source, None, (), None)
            offset = offset_of(source, params.position)
            items = features.completions(current, offset, ls.index_for(spec.path), spec.tree)
            return lsp.CompletionList(is_incomplete=False, items=items)

        return ls.guarded(run, lsp.CompletionList(is_incomplete=False, items=[]))

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix])
    )
    def code_action(ls: McecLanguageServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        def run() -> list[lsp.CodeAction]:
            spec = ls.spec_at(params.text_document.uri)
            if spec is None or spec.analysis is None:
                return []
            analysis = spec.analysis
            start = offset_of(analysis.source, params.range.start)
            end = offset_of(analysis.source, params.range.end)
            return features.code_actions(analysis, start, end, spec.uri)

        return ls.guarded(run, [])

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: McecLanguageServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        def run() -> list[lsp.TextEdit]:
            from mcec.tools.fmt import format_source

            spec = ls.specs.get(params.text_document.uri)
            if spec is None:
                return []
            source = SourceFile(spec.path, ls.workspace.get_text_document(spec.uri).source)
            result = format_source(source)
            if result.text is None or not result.changed:
                return []  # a spec that does not parse is left as it is (its diagnostics say why)
            whole = source.span(0, len(source.text))
            return [lsp.TextEdit(range=range_of(whole), new_text=result.text)]

        return ls.guarded(run, [])

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def symbols(ls: McecLanguageServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        def run() -> list[lsp.DocumentSymbol]:
            spec = ls.spec_at(params.text_document.uri)
            return [] if spec is None or spec.analysis is None else features.document_symbols(spec.analysis)

        return ls.guarded(run, [])

    @server.feature(
        lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
        lsp.SemanticTokensLegend(token_types=features.SEMANTIC_TOKEN_TYPES, token_modifiers=[]),
    )
    def tokens(ls: McecLanguageServer, params: lsp.SemanticTokensParams) -> lsp.SemanticTokens:
        def run() -> lsp.SemanticTokens:
            spec = ls.spec_at(params.text_document.uri)
            data = [] if spec is None or spec.analysis is None else features.semantic_tokens(spec.analysis)
            return lsp.SemanticTokens(data=data)

        return ls.guarded(run, lsp.SemanticTokens(data=[]))

    return server


def _in_template(ls: McecLanguageServer, uri: str, at: lsp.Position) -> list[lsp.CompletionItem]:
    """Completion in an open template file: the variables of the llm step it is the template of."""
    path = path_of(uri)
    source = SourceFile(path, ls.workspace.get_text_document(uri).source)
    trees = [spec.tree for spec in ls.specs.values() if spec.tree is not None]
    return features.template_completions(source.text, offset_of(source, at), Path(path), trees, ls.index_for(path))


async def _debounced(ls: McecLanguageServer, spec: OpenSpec) -> None:
    """Check the spec once the changes have paused for :data:`DEBOUNCE` seconds."""
    try:
        await asyncio.sleep(DEBOUNCE)
    except asyncio.CancelledError:
        return  # a newer change: its own check follows
    ls.guarded(lambda: ls.refresh(spec), None)
    ls.refresh_users(spec)  # its unsaved text is what they use now

