"""The LALR parser: the only module that knows Lark exists.

:func:`mcec.parser.parse` uses it (through :func:`mcec.parser.parse_lalr`)
for every file the fast recursive-descent path (:mod:`mcec.descent`) gives up
on, i.e. every file with something to explain. The grammar lives in
``grammar/mce.lark``; Lark analyses it once and builds the LALR parse table,
and this module runs that table itself:

- a tokenizer made of one regular expression (built from the grammar's
  terminals) read with ``findall``, which tracks only offsets (spans need nothing else);
- a tight shift/reduce loop over the table (Lark's own loop and lexer cost
  ~20 µs per token through Token objects, callbacks and child filters, which
  capped the front end at a few thousand lines per second);
- one builder method per grammar rule, called at each reduction with the
  rule's children, which makes the :mod:`mcec.syntax` node (with the fast
  constructors of :mod:`mcec.construct`).

The loop keeps explicit stacks, so 10,000-deep parentheses cannot overflow
anything. Its reductions are Lark's (same table, same lookahead rule, no
default reductions), so a syntax error is detected at the same token with the
same parser state; at an error the state is handed to Lark's interactive
parser to learn which terminals it accepts.

Syntax errors (MCE001, or MCE016 for a reserved word where a name belongs) are
described in words by :mod:`mcec.syntax_errors`, which receives plain data, not
Lark objects. After an error the parser re-synchronises at the next line that
starts with a declaration keyword and parses on, so one run reports several
syntax errors (at most :data:`MAX_SYNTAX_ERRORS`).
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Final

import lark
from lark import Token
from lark.lexer import PatternStr
from lark.parsers.lalr_analysis import Shift
from lark.parsers.lalr_interactive_parser import InteractiveParser
from lark.parsers.lalr_parser_state import ParseConf, ParserState

from mcec import construct as make
from mcec import syntax as s
from mcec.diagnostics import Diagnostic, error
from mcec.parser import MAX_SYNTAX_ERRORS, ParseResult, load_grammar
from mcec.span import SourceFile, Span
from mcec.syntax_errors import KEYWORDS, PYTHON_KEYWORDS, ErrorSite, StackItem, describe_bad_character, describe_unexpected

__all__ = ["GrammarMismatch", "parse"]

#: A line starting with one of these (in column 1) begins a declaration: where the
#: parser re-synchronises after a syntax error.
_RESYNC = re.compile(r"^(?:from|import|state|error|async|step|fn|pipeline|server|tool)(?![A-Za-z0-9_])", re.MULTILINE)


# ---------------------------------------------------------------- the tables

#: A token on the value stack: (text, start offset). Spans need only offsets.
_Tok = tuple[str, int]
#: A node's position: its last three fields (see mcec.syntax).
_Where = tuple[SourceFile, int, int]


@dataclass(frozen=True, slots=True)
class _Tables:
    """Everything taken from Lark once: the LALR table in a compact form and the tokenizer."""

    lark_parser: lark.Lark
    #: ``actions[state][symbol]``: ``>= 0`` shift to (or go to) that state; ``< 0``: reduce rule ``~value``.
    actions: tuple[dict[str, int], ...]
    #: Per rule: (number of children, origin symbol, builder method name or None to keep the single child).
    rules: tuple[tuple[int, str, str | None], ...]
    start_state: int
    end_state: int
    #: The symbol each state is entered by (every LR state has exactly one).
    entered_by: tuple[str, ...]
    keywords: dict[str, str]
    punctuation: dict[str, str]
    tokenizer: re.Pattern[str]
    #: Memo of :func:`_fuse`, filled as parses meet new (state, symbol, lookahead) triples.
    chains: dict[tuple[int, str, str], tuple[int, tuple[int, ...]]]


def _fuse(tables: _Tables, below: int, origin: str, lookahead: str) -> tuple[int, tuple[int, ...]]:
    """Where a reduction to ``origin`` over state ``below`` ends up after the one-child reductions that follow.

    Most reductions are one-child rules (``NAME`` → ``name`` → ``qual_name`` →
    ``type_name`` → ``_type_atom`` → ``type``): each pops one state and goes to
    from the same state ``below``, so which of them run depends only on
    ``(below, origin, lookahead)``. Returns the final state and the rules whose
    builders must run, in order; the driver does them in one step. It stops
    where the table shifts, reduces a longer rule, or has no action (the error
    is then found exactly where the step-by-step loop would find it).
    """
    state = tables.actions[below][origin]
    builders: list[int] = []
    while True:
        action = tables.actions[state].get(lookahead)
        if action is None or action >= 0:
            break
        size, symbol, method = tables.rules[~action]
        if size != 1:
            break
        if method is not None:
            builders.append(~action)
        state = tables.actions[below][symbol]
    return state, tuple(builders)


#: Builder method for each grammar rule, by ``"origin: expansion"``; ``None`` keeps the single child
#: (`_rule`s and `?rule`s with one child). A rule missing here is reported when the tables are built.
_RULE_METHODS: Final[dict[str, str | None]] = {
    "start: __start_star_0": "start",
    "start: ": "start_empty",
    "from_import: FROM qual_name IMPORT imported_name __from_import_star_1": "from_import_many",
    "from_import: FROM qual_name IMPORT imported_name": "from_import_one",
    "imported_name: name AS name": "imported_name_alias",
    "imported_name: name": "imported_name",
    "module_import: IMPORT qual_name AS name": "module_import_alias",
    "module_import: IMPORT qual_name": "module_import",
    "state_decl: STATE type MERGE qual_name": "state_decl_merge",
    "state_decl: STATE type": "state_decl",
    "error_decl: ERROR type": "error_decl",
    "step_decl: ASYNC STEP name COLON type ARROW type error_list EQUAL qual_name": "step_decl",
    "step_decl: ASYNC STEP name COLON type ARROW type EQUAL qual_name": "step_decl",
    "step_decl: STEP name COLON type ARROW type error_list EQUAL qual_name": "step_decl",
    "step_decl: STEP name COLON type ARROW type EQUAL qual_name": "step_decl",
    "fn_decl: FN name COLON type ARROW type EQUAL qual_name": "fn_decl",
    "server_decl: SERVER name EQUAL STDIO STRING": "server_decl",
    "tool_decl: TOOL name COLON type ARROW type error_list EQUAL name DOT name": "tool_decl",
    "tool_decl: TOOL name COLON type ARROW type EQUAL name DOT name": "tool_decl",
    "pipeline_decl: PIPELINE name COLON type ARROW type error_list EQUAL expr SEMI": "pipeline_decl",
    "pipeline_decl: PIPELINE name COLON type ARROW type error_list block": "pipeline_decl",
    "pipeline_decl: PIPELINE name COLON type ARROW type EQUAL expr SEMI": "pipeline_decl",
    "pipeline_decl: PIPELINE name COLON type ARROW type block": "pipeline_decl",
    "block: LBRACE __block_star_2 RBRACE": "block",
    "block: LBRACE RBRACE": "block_empty",
    "statement: STEP expr SEMI": "statement_step",
    "statement: expr SEMI": "statement",
    "error_list: BANG _type_atom __error_list_star_3": "error_list_many",
    "error_list: BANG _type_atom": "error_list_one",
    "type_union: _type_atom __error_list_star_3": "type_union",
    "type_name: qual_name": "type_name",
    "type_apply: qual_name LSQB type __type_apply_star_4 RSQB": "type_apply_many",
    "type_apply: qual_name LSQB type RSQB": "type_apply_one",
    "qual_name: name __qual_name_star_5": "qual_name_many",
    "qual_name: name": "qual_name_one",
    "name: NAME": "name",
    "or_else: _catch_level __or_else_plus_6": "or_else",
    "catch: _bind_level __catch_plus_7": "catch",
    "bind: _term __bind_plus_8": "bind",
    "group: LPAR expr RPAR": "group",
    "ref: NAME": "ref",
    "par: PAR LT expr __par_star_9 GT": "par_many",
    "par: PAR LT expr GT": "par_one",
    "each: EACH LPAR LIMIT EQUAL INT RPAR _term": "each_limit",
    "each: EACH _term": "each",
    "local: LOCAL _term": "local",
    # Lark's helpers for `x*` / `x+`: lists of what the parent needs, grown in place (left recursion).
    "__start_star_0: _decl": "list_first",
    "__start_star_0: __start_star_0 _decl": "list_append",
    "__from_import_star_1: COMMA imported_name": "list_second",
    "__from_import_star_1: __from_import_star_1 COMMA imported_name": "list_append_third",
    "__block_star_2: statement": "list_first",
    "__block_star_2: __block_star_2 statement": "list_append",
    "__error_list_star_3: BAR _type_atom": "list_second",
    "__error_list_star_3: __error_list_star_3 BAR _type_atom": "list_append_third",
    "__type_apply_star_4: COMMA type": "list_second",
    "__type_apply_star_4: __type_apply_star_4 COMMA type": "list_append_third",
    "__qual_name_star_5: DOT attr_name": "list_second",
    "__qual_name_star_5: __qual_name_star_5 DOT attr_name": "list_append_third",
    "__or_else_plus_6: ORELSE _catch_level": "or_else_first",
    "__or_else_plus_6: __or_else_plus_6 ORELSE _catch_level": "or_else_next",
    "__catch_plus_7: CATCH _type_atom __error_list_star_3 FATARROW _term": "catch_first_many",
    "__catch_plus_7: CATCH _type_atom FATARROW _term": "catch_first_one",
    "__catch_plus_7: __catch_plus_7 CATCH _type_atom __error_list_star_3 FATARROW _term": "catch_next_many",
    "__catch_plus_7: __catch_plus_7 CATCH _type_atom FATARROW _term": "catch_next_one",
    "__bind_plus_8: BINDOP _term": "list_second",
    "__bind_plus_8: __bind_plus_8 BINDOP _term": "list_append_third",
    "__par_star_9: COMMA expr": "list_second",
    "__par_star_9: __par_star_9 COMMA expr": "list_append_third",
}
#: Rules with one child that leave no node: the child is kept as it is.
_KEEP_CHILD: Final = ("_decl", "type", "_type_atom", "expr", "_catch_level", "_bind_level", "_term")
#: The non-string terminals, which the tokenizer matches with the grammar's own patterns.
_PATTERN_TERMINALS: Final = ("COMMENT", "NAME", "INT", "STRING")


class GrammarMismatch(Exception):
    """The grammar has a rule or terminal this module does not know: a bug, found when the tables are built."""


def _tokenizer(terminals: list[Any], ignored: list[str]) -> tuple[dict[str, str], dict[str, str], re.Pattern[str]]:
    """Keyword and punctuation lookups plus one regex for all terminals.

    Each ``findall`` match is ``(whitespace, comment, name, int, string, punctuation, other)``:
    leading whitespace, then exactly one of the rest. ``other`` is one character
    no terminal matches (where Lark's lexer would stop). Keywords are matched as
    names and looked up, which is how Lark lets a keyword win over ``NAME``.
    """
    patterns = {t.name: t.pattern for t in terminals}
    if set(ignored) != {"WS", "COMMENT"} or any(name not in patterns for name in (*_PATTERN_TERMINALS, "WS")):
        raise GrammarMismatch(f"unexpected terminal set: {sorted(patterns)}, ignored {ignored}")
    name_re = re.compile(patterns["NAME"].to_regexp())
    keywords: dict[str, str] = {}
    punctuation: dict[str, str] = {}
    for terminal in terminals:
        if isinstance(terminal.pattern, PatternStr):
            text = terminal.pattern.value
            (keywords if name_re.fullmatch(text) else punctuation)[text] = terminal.name
        elif terminal.name not in (*_PATTERN_TERMINALS, "WS"):
            raise GrammarMismatch(f"unexpected pattern terminal {terminal.name}")
    # Longest first, as Lark's lexer matches them (`>>=` before `>`).
    punct_re = "|".join(re.escape(p) for p in sorted(punctuation, key=len, reverse=True))
    groups = [patterns[name].to_regexp() for name in _PATTERN_TERMINALS]
    # `other` excludes whitespace, so trailing whitespace ends the matches instead of being "other".
    alternatives = "|".join(f"({g})" for g in [*groups, punct_re, "[^ \t\f\r\n]"])
    source = f"((?:{patterns['WS'].to_regexp()})?)(?:{alternatives})"
    return keywords, punctuation, re.compile(source, re.DOTALL)


@functools.cache
def _tables() -> _Tables:
    """Build the LALR table with Lark (once per process: grammar analysis takes a while) and the tokenizer."""
    parser = lark.Lark(load_grammar(), parser="lalr", lexer="basic", maybe_placeholders=False)
    table = parser.parser.parser.parser.parse_table
    rule_index: dict[Any, int] = {}
    rules: list[tuple[int, str, str | None]] = []
    for rule in parser.rules:
        # Lark's symbol names are Token objects (str subclasses with a Python-level __eq__):
        # plain str keys keep every table lookup in C.
        origin = str(rule.origin.name)
        key = f"{origin}: {' '.join(str(sym.name) for sym in rule.expansion)}"
        if origin in _KEEP_CHILD and len(rule.expansion) == 1:
            method = None
        elif key in _RULE_METHODS:
            method = _RULE_METHODS[key]
        elif origin == "attr_name" and len(rule.expansion) == 1:
            method = "attr_name"
        else:
            raise GrammarMismatch(f"no builder for grammar rule `{key}`")
        rule_index[rule] = len(rules)
        rules.append((len(rule.expansion), origin, method))
    count = len(table.states)
    actions: list[dict[str, int]] = [{} for _ in range(count)]
    entered_by = ["" for _ in range(count)]
    for state, row in table.states.items():
        for name, (action, arg) in row.items():
            symbol = str(name)
            if action is Shift:
                actions[state][symbol] = arg
                entered_by[arg] = symbol
            else:
                actions[state][symbol] = ~rule_index[arg]
    keywords, punctuation, tokenizer = _tokenizer(list(parser.terminals), list(parser.lexer_conf.ignore))
    return _Tables(
        parser,
        tuple(actions),
        tuple(rules),
        table.start_states["start"],
        table.end_states["start"],
        tuple(entered_by),
        keywords,
        punctuation,
        tokenizer,
        {},
    )


# ---------------------------------------------------------------- building nodes


class _Builder:
    """Makes :mod:`mcec.syntax` nodes for one parse; one method per grammar rule (see :data:`_RULE_METHODS`).

    A method receives the rule's children as a list, or the child itself for a
    one-child rule: tokens as :data:`_Tok` tuples, nodes, and the lists the
    ``x*`` helper rules build. Spans run from the first child to the last.
    """

    __slots__ = ("comments", "diagnostics", "failed", "source")

    def __init__(self, source: SourceFile) -> None:
        self.source = source
        self.comments: list[s.Comment] = []
        self.diagnostics: list[Diagnostic] = []
        self.failed = False

    # -- positions (the one place where token positions become node positions)
    #
    # A node takes its position as its last three arguments, ``source, start,
    # end`` (no Span object: see mcec.syntax); the helpers below give those three
    # for a node running from its first child to its last, to be star-unpacked
    # into the constructor. ``tok_span`` makes a Span for the two Span fields
    # (a limit, a server's command). Line and column are worked out
    # from the offsets only when a diagnostic is rendered or a site is generated.

    def tok_span(self, tok: _Tok) -> Span:
        start = tok[1]
        return make.SPAN(self.source, start, start + len(tok[0]))

    def one_tok(self, tok: _Tok) -> _Where:
        start = tok[1]
        return self.source, start, start + len(tok[0])

    def tok_tok(self, first: _Tok, last: _Tok) -> _Where:
        return self.source, first[1], last[1] + len(last[0])

    def tok_node(self, first: _Tok, last: s.Node) -> _Where:
        return self.source, first[1], last.end

    def node_tok(self, first: s.Node, last: _Tok) -> _Where:
        return self.source, first.start, last[1] + len(last[0])

    def node_node(self, first: s.Node, last: s.Node) -> _Where:
        return self.source, first.start, last.end

    def comment(self, text: str, start: int) -> None:
        """Remember a ``#`` comment for ``Module.comments``."""
        text = text.rstrip("\r")
        self.comments.append(make.COMMENT(text, self.source, start, start + len(text)))

    def check_name(self, name: s.Name, what: str) -> None:
        """MCE016 for a Python keyword (or a name Python would NFKC-normalise differently)."""
        text = name.text
        if text in PYTHON_KEYWORDS:
            self.diagnostics.append(
                error(
                    "MCE016",
                    f"`{text}` is a Python keyword and cannot be used as {what}",
                    name.span,
                    help=f"the generated Python module could not use it; choose another name, such as `{text}_`",
                )
            )
        elif not text.isascii() and unicodedata.normalize("NFKC", text) != text:
            self.diagnostics.append(error("MCE016", f"`{text}` is not a name Python keeps as written", name.span))

    def check_python_path(self, path: s.QualName) -> None:
        """MCE016 for a Python keyword heading a module path or an implementation name.

        The generated module writes these as Python (``import m``, ``m.f``);
        the parts after a dot are checked as attribute names already.
        """
        self.check_name(path.parts[0], "a module or implementation name")

    # -- x* / x+ helpers: a list of what the parent needs, grown in place

    def list_first(self, child: Any) -> list[Any]:
        return [child]

    def list_append(self, c: list[Any]) -> list[Any]:
        items: list[Any] = c[0]
        items.append(c[1])
        return items

    def list_second(self, c: list[Any]) -> list[Any]:
        return [c[1]]

    def list_append_third(self, c: list[Any]) -> list[Any]:
        items: list[Any] = c[0]
        items.append(c[2])
        return items

    # -- names and types

    def name(self, tok: _Tok) -> s.Name:
        return make.NAME(tok[0], *self.one_tok(tok))

    def attr_name(self, tok: _Tok) -> s.Name:
        # After a dot: reserved words are fine (`impl.merge`), Python keywords are not (`impl.class`).
        name = make.NAME(tok[0], *self.one_tok(tok))
        self.check_name(name, "an attribute name")
        return name

    def qual_name_one(self, name: s.Name) -> s.QualName:
        return make.QUAL((name,), *self.node_node(name, name))

    def qual_name_many(self, c: list[Any]) -> s.QualName:
        first: s.Name = c[0]
        rest: list[s.Name] = c[1]
        return make.QUAL((first, *rest), *self.node_node(first, rest[-1]))

    def type_name(self, name: s.QualName) -> s.Name | s.QualName:
        return name.parts[0] if len(name.parts) == 1 else name

    def type_apply_one(self, c: list[Any]) -> s.TypeApply:
        return make.TYPE_APPLY(c[0], (c[2],), *self.node_tok(c[0], c[3]))

    def type_apply_many(self, c: list[Any]) -> s.TypeApply:
        return make.TYPE_APPLY(c[0], (c[2], *c[3]), *self.node_tok(c[0], c[4]))

    def type_union(self, c: list[Any]) -> s.TypeUnion:
        # Members are single types (names or applications), never unions: nothing to flatten.
        rest: list[s.TypeExpr] = c[1]
        return make.TYPE_UNION((c[0], *rest), *self.node_node(c[0], rest[-1]))

    def error_list_one(self, c: list[Any]) -> s.ErrorList:
        return make.ERROR_LIST((c[1],), *self.tok_node(c[0], c[1]))

    def error_list_many(self, c: list[Any]) -> s.ErrorList:
        rest: list[s.TypeExpr] = c[2]
        return make.ERROR_LIST((c[1], *rest), *self.tok_node(c[0], rest[-1]))

    # -- expressions

    def ref(self, tok: _Tok) -> s.Ref:
        where = self.one_tok(tok)
        if tok[0] in PYTHON_KEYWORDS:
            self.check_name(make.NAME(tok[0], *where), "a name")
        return make.REF(tok[0], *where)

    def group(self, c: list[Any]) -> Any:
        # `( e )` is just `e`, with `e`'s own span.
        return c[1]

    def bind(self, c: list[Any]) -> s.Bind:
        parts: list[Any] = []
        for child in (c[0], *c[1]):
            # Bind is associative: `(a >>= b) >>= c` is flattened too.
            if type(child) is s.Bind:
                parts.extend(child.parts)
            else:
                parts.append(child)
        return make.BIND(tuple(parts), *self.node_node(parts[0], parts[-1]))

    def catch_first_one(self, c: list[Any]) -> list[Any]:
        return [(c[0], (c[1],), c[3])]

    def catch_first_many(self, c: list[Any]) -> list[Any]:
        return [(c[0], (c[1], *c[2]), c[4])]

    def catch_next_one(self, c: list[Any]) -> list[Any]:
        items: list[Any] = c[0]
        items.append((c[1], (c[2],), c[4]))
        return items

    def catch_next_many(self, c: list[Any]) -> list[Any]:
        items: list[Any] = c[0]
        items.append((c[1], (c[2], *c[3]), c[5]))
        return items

    def catch(self, c: list[Any]) -> Any:
        # `body (catch E… => handler)+`, folded to the left.
        body = c[0]
        for keyword_token, errors, handler in c[1]:
            body = make.CATCH(body, errors, handler, keyword_token[1], *self.node_node(body, handler))
        return body

    def or_else_first(self, c: list[Any]) -> list[Any]:
        return [(c[0], c[1])]

    def or_else_next(self, c: list[Any]) -> list[Any]:
        items: list[Any] = c[0]
        items.append((c[1], c[2]))
        return items

    def or_else(self, c: list[Any]) -> Any:
        body = c[0]
        for keyword_token, fallback in c[1]:
            body = make.OR_ELSE(body, fallback, keyword_token[1], *self.node_node(body, fallback))
        return body

    def par_one(self, c: list[Any]) -> s.Par:
        return make.PAR((c[2],), *self.tok_tok(c[0], c[3]))

    def par_many(self, c: list[Any]) -> s.Par:
        return make.PAR((c[2], *c[3]), *self.tok_tok(c[0], c[4]))

    def each(self, c: list[Any]) -> s.Each:
        return make.EACH(c[1], None, None, *self.tok_node(c[0], c[1]))

    def each_limit(self, c: list[Any]) -> s.Each:
        limit: _Tok = c[4]
        body = c[6]
        return make.EACH(body, int(limit[0]), self.tok_span(limit), *self.tok_node(c[0], body))

    def local(self, c: list[Any]) -> s.Local:
        return make.LOCAL(c[1], *self.tok_node(c[0], c[1]))

    # -- blocks

    def statement(self, c: list[Any]) -> s.Statement:
        return make.STATEMENT(c[0], False, *self.node_tok(c[0], c[1]))

    def statement_step(self, c: list[Any]) -> s.Statement:
        return make.STATEMENT(c[1], True, *self.tok_tok(c[0], c[2]))

    def block(self, c: list[Any]) -> s.Block:
        return make.BLOCK(tuple(c[1]), *self.tok_tok(c[0], c[2]))

    def block_empty(self, c: list[Any]) -> s.Block:
        return make.BLOCK((), *self.tok_tok(c[0], c[1]))

    # -- declarations

    def imported_name(self, name: s.Name) -> s.ImportedName:
        entry = s.ImportedName(name, None, *self.node_node(name, name))
        self.check_name(name, "an imported name")
        return entry

    def imported_name_alias(self, c: list[Any]) -> s.ImportedName:
        entry = s.ImportedName(c[0], c[2], *self.node_node(c[0], c[2]))
        self.check_name(c[2], "an import alias")
        return entry

    def from_import_one(self, c: list[Any]) -> s.FromImport:
        self.check_python_path(c[1])
        return s.FromImport(c[1], (c[3],), *self.tok_node(c[0], c[3]))

    def from_import_many(self, c: list[Any]) -> s.FromImport:
        rest: list[s.ImportedName] = c[4]
        self.check_python_path(c[1])
        return s.FromImport(c[1], (c[3], *rest), *self.tok_node(c[0], rest[-1]))

    def module_import(self, c: list[Any]) -> s.ModuleImport:
        self.check_python_path(c[1])
        return s.ModuleImport(c[1], None, *self.tok_node(c[0], c[1]))

    def module_import_alias(self, c: list[Any]) -> s.ModuleImport:
        self.check_python_path(c[1])
        self.check_name(c[3], "an import alias")
        return s.ModuleImport(c[1], c[3], *self.tok_node(c[0], c[3]))

    def state_decl(self, c: list[Any]) -> s.StateDecl:
        return s.StateDecl(c[1], None, *self.tok_node(c[0], c[1]))

    def state_decl_merge(self, c: list[Any]) -> s.StateDecl:
        self.check_python_path(c[3])
        return s.StateDecl(c[1], c[3], *self.tok_node(c[0], c[3]))

    def error_decl(self, c: list[Any]) -> s.ErrorDecl:
        return s.ErrorDecl(c[1], *self.tok_node(c[0], c[1]))

    def step_decl(self, c: list[Any]) -> s.StepDecl:
        # [ASYNC] STEP name COLON type ARROW type [error_list] EQUAL qual_name
        is_async = c[0][0] == "async"
        at = 2 if is_async else 1
        name = c[at]
        errors = c[at + 5] if len(c) == at + 8 else None
        self.check_name(name, "a step name")
        self.check_python_path(c[-1])
        return make.STEP_DECL(name, is_async, c[at + 2], c[at + 4], errors, c[-1], *self.tok_node(c[0], c[-1]))

    def fn_decl(self, c: list[Any]) -> s.FnDecl:
        # FN name COLON type ARROW type EQUAL qual_name
        self.check_name(c[1], "a fn name")
        self.check_python_path(c[7])
        return make.FN_DECL(c[1], c[3], c[5], c[7], *self.tok_node(c[0], c[7]))

    def server_decl(self, c: list[Any]) -> s.ServerDecl:
        # SERVER name EQUAL STDIO STRING
        name = c[1]
        token: _Tok = c[4]
        self.check_name(name, "a server name")
        try:
            command = json.loads(token[0], strict=False)
        except ValueError:
            self.failed = True
            self.diagnostics.append(
                error(
                    "MCE001",
                    "invalid escape in string",
                    self.tok_span(token),
                    help='strings use JSON escapes: `\\"`, `\\\\`, `\\n`, `\\t`, `\\uXXXX`',
                )
            )
            command = ""
        return s.ServerDecl(name, command, self.tok_span(token), *self.tok_tok(c[0], token))

    def tool_decl(self, c: list[Any]) -> s.ToolDecl:
        # TOOL name COLON type ARROW type [error_list] EQUAL name DOT name
        errors = c[6] if len(c) == 11 else None
        self.check_name(c[1], "a tool name")
        return s.ToolDecl(c[1], c[3], c[5], errors, c[-3], c[-1], *self.tok_node(c[0], c[-1]))

    def pipeline_decl(self, c: list[Any]) -> s.PipelineDecl:
        # PIPELINE name COLON type ARROW type [error_list] (EQUAL expr SEMI | block)
        errors = c[6] if type(c[6]) is s.ErrorList else None
        last = c[-1]
        body = c[-2] if type(last) is tuple else last
        self.check_name(c[1], "a pipeline name")
        where = self.tok_tok(c[0], last) if type(last) is tuple else self.tok_node(c[0], last)
        return make.PIPELINE_DECL(c[1], c[3], c[5], errors, body, *where)

    def start(self, decls: list[s.Decl]) -> list[s.Decl]:
        return decls

    def start_empty(self, c: list[Any]) -> list[s.Decl]:
        return []




# ---------------------------------------------------------------- the driver loop


class _LexerStub:
    """What Lark's interactive parser needs of a lexer when it probes terminals: a token class."""

    _Token = Token


_LEXER_STUB: Final = _LexerStub()


@dataclass(frozen=True, slots=True)
class _Stop:
    """Why a run stopped early: the diagnostic, and the offset to resume after (``None``: stop for good)."""

    diagnostic: Diagnostic
    resume: int | None


def _accepted(tables: _Tables, states: list[int], expected: frozenset[str]) -> frozenset[str]:
    """The terminals that could really come next.

    ``expected`` is the LALR state's lookahead set, which merges the follow
    sets of every context sharing the state (after a name it holds `->`, `[`,
    `=>`, …); Lark's interactive parser tries each one on a copy of the state
    stack (no nodes are built).
    """
    try:
        conf: ParseConf[int] = ParseConf(tables.lark_parser.parser.parser.parser.parse_table, {}, "start")
        probe = InteractiveParser(None, ParserState(conf, _LEXER_STUB, list(states), []), _LEXER_STUB)  # type: ignore[arg-type]
        accepted = probe.accepts()  # type: ignore[no-untyped-call]
    except Exception:  # a probe failing must not hide the real syntax error
        accepted = None
    return frozenset(accepted or expected)


def _stack_items(tables: _Tables, states: list[int], values: list[Any]) -> tuple[StackItem, ...]:
    """The parser's stack at an error, as plain data for :mod:`mcec.syntax_errors`.

    Tokens give their terminal name, nodes their class name; what `_rule`s and
    ``x*`` helpers left (no node of their own) is ``?``.
    """
    items: list[StackItem] = []
    for state, value in zip(states[1:], values):
        symbol = tables.entered_by[state]
        if symbol.isupper():
            items.append(StackItem(symbol, value[1], value[1] + len(value[0])))
        elif not symbol.startswith("_") and isinstance(value, s.Node):
            items.append(StackItem(type(value).__name__, value.start, value.end))
        else:
            items.append(StackItem("?", -1, -1))
    return tuple(items)


def _unexpected(
    source: SourceFile, tables: _Tables, states: list[int], values: list[Any], kind: str, tok: _Tok | None
) -> _Stop:
    """The diagnostic for a token the table has no action for (``tok`` is ``None`` at the end of the text)."""
    expected = frozenset(symbol for symbol in tables.actions[states[-1]] if symbol.isupper())
    if tok is None:
        start = end = len(source.text.rstrip())
        text = ""
    else:
        text, start = tok[0], tok[1]
        end = start + len(text)
    site = ErrorSite(
        found_type=kind,
        found_text=text,
        start=start,
        end=end,
        expected=_accepted(tables, states, expected),
        stack=_stack_items(tables, states, values),
    )
    resume: int | None = None if tok is None else start
    stack = site.stack
    if resume is not None and len(stack) >= 2 and stack[-2].kind == "DOT" and stack[-1].kind in KEYWORDS:
        # `m.f.` then `pipeline p …` on the next line: the keyword was read as an attribute
        # name; resume there so that its declaration is parsed too.
        resume = stack[-1].start
    return _Stop(describe_unexpected(source, site), resume)


def _run(builder: _Builder, source: SourceFile, text: str, base: int) -> list[s.Decl] | _Stop:
    """Parse ``text`` from offset ``base`` (a line start) to the end: the declarations, or why it stopped."""
    tables = _tables()
    actions = tables.actions
    keywords = tables.keywords
    punctuation = tables.punctuation
    reducers = [(size, origin, None if method is None else getattr(builder, method)) for size, origin, method in tables.rules]
    comment = builder.comment
    chains = tables.chains
    states = [tables.start_state]
    values: list[Any] = []
    pos = base
    kind = ""
    tok: _Tok | None = None
    for space, note, name, number, string, punct, other in tables.tokenizer.findall(text, base):
        pos += len(space)
        if name:
            kind = keywords.get(name, "NAME")
            tok = (name, pos)
        elif punct:
            kind = punctuation[punct]
            tok = (punct, pos)
        elif note:
            comment(note, pos)
            pos += len(note)
            continue
        elif number:
            kind = "INT"
            tok = (number, pos)
        elif string:
            kind = "STRING"
            tok = (string, pos)
        else:
            # A character no terminal matches (Lark's lexer would stop here too).
            return _Stop(describe_bad_character(source, pos), pos + 1)
        pos += len(tok[0])
        while True:
            action = actions[states[-1]].get(kind)
            if action is None:
                return _unexpected(source, tables, states, values, kind, tok)
            if action >= 0:
                states.append(action)
                values.append(tok)
                break
            size, origin, build = reducers[~action]
            if size == 1:
                value = values[-1] if build is None else build(values[-1])
                below = states[-2]
            elif size:
                children = values[-size:]
                del values[-size:]
                del states[-size:]
                value = build(children)  # type: ignore[misc]
                below = states[-1]
                states.append(below)  # replaced below, like the one-child case
                values.append(None)
            else:
                value = build([])  # type: ignore[misc]
                below = states[-1]
                states.append(below)
                values.append(None)
            # The goto, and the one-child reductions the same lookahead triggers next (see _fuse).
            fused = chains.get((below, origin, kind))
            if fused is None:
                fused = chains[below, origin, kind] = _fuse(tables, below, origin, kind)
            states[-1] = fused[0]
            for index in fused[1]:
                value = reducers[index][2](value)  # type: ignore[misc]
            values[-1] = value
    # The end of the text: reduce until the start symbol is complete.
    end_state = tables.end_state
    while True:
        action = actions[states[-1]].get("$END")
        if action is None or action >= 0:
            return _unexpected(source, tables, states, values, "$END", None)
        size, origin, build = reducers[~action]
        if size == 1:
            if build is not None:
                values[-1] = build(values[-1])
            states.pop()
        elif size:
            children = values[-size:]
            del values[-size:]
            del states[-size:]
            values.append(build(children))  # type: ignore[misc]
        else:
            values.append(build([]))  # type: ignore[misc]
        states.append(actions[states[-1]][origin])
        if states[-1] == end_state:
            decls: list[s.Decl] = values[-1]
            return decls


# ---------------------------------------------------------------- parse


def _parse_segments(builder: _Builder, source: SourceFile, text: str) -> list[s.Decl]:
    """Parse ``text`` (the file's text, maybe with a BOM blanked); recover and go on after errors."""
    decls: list[s.Decl] = []
    syntax_errors = 0
    base = 0
    while True:
        try:
            outcome = _run(builder, source, text, base)
        except Exception as exc:  # a bug in a builder method must not become a traceback
            outcome = _Stop(error("MCE001", f"syntax error: {exc}", source.span(base, base)), None)
        if not isinstance(outcome, _Stop):
            decls = outcome
            break
        builder.failed = True
        builder.diagnostics.append(outcome.diagnostic)
        syntax_errors += 1
        if outcome.resume is None or syntax_errors >= MAX_SYNTAX_ERRORS:
            break
        found = _RESYNC.search(text, max(outcome.resume, base + 1))
        if found is None:
            break
        base = found.start()
    return decls




def parse(source: SourceFile) -> ParseResult:
    """Parse ``source`` with the LALR table, recovering after errors (see :func:`mcec.parser.parse_lalr`)."""
    text = source.text
    if text.startswith("\ufeff"):
        # A byte-order mark is allowed at the very start; a space keeps offsets equal.
        text = " " + text[1:]
    builder = _Builder(source)
    decls = _parse_segments(builder, source, text)
    diagnostics = tuple(sorted(dict.fromkeys(builder.diagnostics), key=Diagnostic.sort_key))
    if builder.failed:
        return ParseResult(None, diagnostics)
    module = s.Module(source.path, tuple(decls), tuple(builder.comments), make.SPAN(source, 0, len(source.text)))
    return ParseResult(module, diagnostics)
