"""Syntax errors in words: what the parser expected, said the way a person would.

:mod:`mcec.syntax.parser` hands over plain data about a failed parse — the
token it found, the set of terminal names the grammar allowed there, and the
parser's stack (what was read so far in the current declaration) — and this
module writes the MCE001 diagnostic. Messages never list grammar terminal
names; they say "expected `->` after the input type" or "expected a step name
after `>>=`". How terminals are spelled comes from the grammar
(:mod:`mcec.syntax.grammar`).

A reserved word found where a name was expected is MCE016, not MCE001.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from mcec.diagnostics import Diagnostic, Label, error
from mcec.span import SourceFile, Span
from mcec.syntax.grammar import tables

__all__ = ["ErrorSite", "StackItem", "describe_bad_character", "describe_unexpected", "reserved_word"]

_GRAMMAR: Final = tables()
#: Terminal name → how it is written in a spec.
SPELLING: Final = _GRAMMAR.spelling
#: Reserved words (§2): terminal name → word.
KEYWORDS: Final = _GRAMMAR.keywords
#: Terminals that can start an expression term.
_TERM_START: Final = _GRAMMAR.term_start
#: Terminals that start a top-level declaration.
_DECL_START: Final = _GRAMMAR.declaration_start

_DECL_WORDS: Final = (
    ", ".join(f"`{word}`" for word in _GRAMMAR.declaration_words[:-1]) + f" or `{_GRAMMAR.declaration_words[-1]}`"
)


@dataclass(frozen=True, slots=True)
class StackItem:
    """One entry of the parser's stack: a terminal name or a syntax-node class name, with offsets."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ErrorSite:
    """Everything known about an unexpected token, as plain data."""

    found_type: str
    found_text: str
    start: int
    end: int
    expected: frozenset[str]
    stack: tuple[StackItem, ...]


def _found(site: ErrorSite) -> str:
    """``found `x``` / ``found the end of the file``."""
    if site.found_type == "$END":
        return "found the end of the file"
    text = site.found_text if len(site.found_text) <= 40 else site.found_text[:37] + "..."
    return f"found `{text}`"


def _declaration_keyword(stack: tuple[StackItem, ...]) -> str | None:
    """The keyword of the declaration being read (``pipeline``, ``step``, …), if any."""
    for item in stack:
        if item.kind in _DECL_START:
            # a reserved word (`step`), or a soft one that starts a declaration (`model`, `llm`)
            return KEYWORDS.get(item.kind) or SPELLING.get(item.kind)
    return None


def _in_block(stack: tuple[StackItem, ...]) -> bool:
    return _innermost_open(stack) == "LBRACE"


def _innermost_open(stack: tuple[StackItem, ...]) -> str | None:
    """The innermost construct still open at the error: ``PAR``, ``LPAR``, ``LBRACE``, ``MATCH`` (its
    ``{``) or ``EQUAL``.

    Closed groups are already reduced to nodes, so an opening token still on the
    stack belongs to a group that is open.
    """
    for index in range(len(stack) - 1, -1, -1):
        item = stack[index]
        if item.kind == "LBRACE" and index > 0 and stack[index - 1].kind == "MATCH":
            return "MATCH"
        if item.kind in ("PAR", "LPAR", "LBRACE", "EQUAL"):
            return item.kind
    return None


def _attribute_word(stack: tuple[StackItem, ...]) -> StackItem | None:
    """A reserved word just read after a dot, where it is an attribute name (`impl.merge`), not a keyword."""
    if len(stack) >= 2 and stack[-2].kind == "DOT" and stack[-1].kind in KEYWORDS:
        return stack[-1]
    return None


def _last_token(stack: tuple[StackItem, ...]) -> StackItem | None:
    if _attribute_word(stack) is not None:
        return None  # a name, not a keyword: nothing to say about what follows it
    return stack[-1] if stack and (stack[-1].kind in SPELLING or stack[-1].kind in KEYWORDS) else None


def _after_token(last: StackItem, site: ErrorSite) -> tuple[str, str | None] | None:
    """A message keyed on the token just read (``>>=``, ``->``, ``catch``, …): ``(message, help)``."""
    declaration = _declaration_keyword(site.stack)
    kind = last.kind
    expects_term = bool(site.expected & _TERM_START)
    table: dict[str, tuple[str, str | None]] = {
        "BINDOP": ("expected a step name after `>>=`", None),
        "ORELSE": ("expected a fallback after `orelse`", "a fallback is one term; parenthesise a chain: `orelse (f >>= g)`"),
        "CATCH": ("expected an error type after `catch`", None),
        "FATARROW": (
            "expected a handler after `=>`",
            "a handler is one term; parenthesise a chain: `catch E => (h >>= k)`",
        ),
        "BANG": ("expected an error type after `!`", None),
        "ARROW": ("expected the output type after `->`", None),
        "COLON": ("expected the input type after `:`", None),
        "FROM": ("expected a module name after `from`", None),
        "IMPORT": ("expected a name after `import`", None),
        "AS": ("expected a name after `as`", None),
        "DOT": ("expected a name after `.`", None),
        "STATE": ("expected the state type after `state`", None),
        "ERROR": ("expected the error type after `error`", None),
        "ASYNC": ("expected `step` after `async`", None),
        "STREAM": ("expected `llm` after `stream`", "a streaming llm step is written `stream llm n : A -> B = model \"…\"`"),
        "FN": ("expected the fn name after `fn`", None),
        "PIPELINE": ("expected the pipeline name after `pipeline`", None),
        "SERVER": ("expected the server name after `server`", None),
        "TOOL": ("expected the tool name after `tool`", None),
        "MERGE": ("expected the merge function (like `module.merge`) after `merge`", None),
        "STDIO": ('expected the command line as a string after `stdio`, like `"python -m server"`', None),
        "PAR": ("expected `<` after `par`", "a parallel group is written `par <a, b>`"),
        "LT": ("expected an expression after `<`", None),
        "LOCAL": ("expected an expression after `local`", None),
        "EACH": ("expected an expression or `(limit=…)` after `each`", None),
        "LIMIT": ("expected `=` after `limit`", "write `each(limit=4) e`"),
        "LSQB": ("expected a type argument after `[`", None),
        "BAR": ("expected a type after `|`", None),
        "LBRACE": ("expected a statement or `}` after `{`", None),
        "LPAR": ("expected an expression after `(`" if expects_term else "expected `limit` after `(`", None),
    }
    before = site.stack[-2].kind if len(site.stack) >= 2 else None
    if declaration == "model" and kind in ("LPAR", "COMMA"):
        after = "`(`" if kind == "LPAR" else "`,`"
        return f"expected a model option (`name=value`) after {after}", 'write `model fast = openai "gpt-4o-mini" (temperature=0.2, max_repairs=1)`'
    if kind == "LBRACE" and before == "MATCH":
        return "expected a pattern after `{`: a type name, a string or number, or `_`", "write `match { A => a, B => b }`"
    if kind == "LPAR" and before in _COMBINATOR_ARGUMENT:
        return _COMBINATOR_ARGUMENT[before]
    if kind == "STEP":
        if expects_term:
            return "expected an expression after `step`", None
        return "expected the step name after `step`", None
    if kind == "EQUAL":
        if declaration == "model" and "INT" in site.expected:
            return "expected the option's value after `=`", 'write `temperature=0.2`, `timeout=30` or `base_url="http://…"`'
        if "INT" in site.expected:
            return "expected a whole number after `limit =`", "write `each(limit=4) e`"
        if "STDIO" in site.expected:
            return "expected `stdio` after `=`", 'write `server name = stdio "command line"`'
        if declaration == "pipeline":
            return "expected the pipeline body after `=`", None
        if declaration == "tool":
            return "expected `server.tool_name` after `=`", None
        return "expected the implementation (like `module.function`) after `=`", None
    if kind == "COMMA":
        if expects_term:
            return "expected an expression after `,`", None
        return "expected a name or type after `,`", None
    if kind == "SEMI" and _in_block(site.stack):
        return "expected a statement or `}`", None
    return table.get(kind)


#: What the `(` of a v2 combinator must be followed by: (message, help).
_COMBINATOR_ARGUMENT: Final = {
    "LOOP": ("expected the most times to run the body after `loop(`", "write `loop(8) body`"),
    "RETRY": ("expected the number of attempts after `retry(`", "write `retry(3) step` or `retry(3, on=E, backoff=0.5) step`"),
    "TIMEOUT": ("expected the seconds after `timeout(`", "write `timeout(10) step` or `timeout(0.5) step`"),
}


def _par_glued_bind(source: SourceFile, site: ErrorSite) -> Diagnostic | None:
    """`par <a, b>>= c`: `>>=` was lexed inside the group, which is then never closed."""
    opener = next((item for item in reversed(site.stack) if item.kind == "PAR"), None)
    if opener is None:
        return None
    inside = source.text[opener.end : site.start]
    glued = None
    for match in re.finditer(r"(?<=[^\s<,(])>>=", inside):
        glued = match
    if glued is None:
        return None
    bind_start = opener.end + glued.start()
    bind_end = bind_start + 3
    rest = source.text[bind_end : site.start].rstrip()
    fixed = re.sub(r"\s+", " ", source.text[opener.start : bind_start] + "> >>=" + rest)
    if "\n" in fixed or len(fixed) > 80:
        fixed_help = "put a space between `>` and `>>=`: write `> >>=`"
    else:
        fixed_help = f"write `{fixed}`"
    return error(
        "MCE001",
        "expected `>` to close the `par` group: `>>=` right after it is read as one token, a bind inside the group",
        source.span(bind_start, bind_end),
        labels=(
            Label(source.span(opener.start, opener.end), "this group is never closed"),
            Label(source.span(site.start, site.end), _found(site).replace("found", "the group ends before", 1)),
        ),
        help=fixed_help,
    )


def _by_expected(site: ErrorSite) -> tuple[str, str | None]:
    """A message keyed on what the grammar allowed here (the token just read told nothing specific)."""
    expected = site.expected
    declaration = _declaration_keyword(site.stack)
    innermost = _innermost_open(site.stack)
    if not site.stack or site.stack[-1].kind.endswith("Decl") or site.stack[-1].kind in ("FromImport", "ModuleImport"):
        if expected & _DECL_START:
            return f"expected a declaration ({_DECL_WORDS})", None
    if innermost == "MATCH" and "RBRACE" in expected:
        return "expected `,` or `}` after the arm", "arms are written `match { A => a, B => b }`"
    if innermost == "MATCH" and "FATARROW" in expected:
        return "expected `=>` after the pattern", "arms are written `match { A => a, B => b }`"
    if innermost == "MATCH":
        return "expected a pattern: a type name, a string or number, or `_`", "arms are written `match { A => a, B => b }`"
    if "ELSE" in expected:
        return "expected `else` and the other branch", "an `if` has both branches: `if p then a else b`"
    if "THEN" in expected:
        return "expected `then` after the condition", "write `if p then a else b`; a condition that is a chain needs parentheses"
    if innermost == "PAR" and "GT" in expected:
        return "expected `,` or `>` to close the `par` group", None
    if innermost == "LPAR" and "RPAR" in expected:
        opener = max(i for i, item in enumerate(site.stack) if item.kind == "LPAR")
        if opener > 0 and site.stack[opener - 1].kind == "EACH":
            return "expected `)`", "to limit how many run at once, write `each(limit=4) e`"
        return "expected `)`", None
    if "SEMI" in expected and innermost == "LBRACE":
        return "expected `;` after the statement", None
    if "SEMI" in expected and innermost == "EQUAL":
        return "expected `;` after the pipeline body", None
    if "ARROW" in expected:
        return "expected `->` after the input type", "a signature is written `: Input -> Output`"
    if "COLON" in expected:
        what = f"the {declaration} name" if declaration else "the name"
        return f"expected `:` after {what}", "a signature is written `: Input -> Output`"
    if "LBRACE" in expected and "EQUAL" in expected:
        return "expected `=` or `{` to start the pipeline body", None
    if "EQUAL" in expected and declaration in ("step", "fn", "tool", "async"):
        return "expected `=` and the implementation after the signature", None
    if "EQUAL" in expected and declaration == "server":
        return "expected `=` after the server name", 'write `server name = stdio "command line"`'
    if "FATARROW" in expected:
        return "expected `=>` after the caught error types", "write `catch E1 | E2 => handler`"
    if "RPAR" in expected:
        return "expected `)`", None
    if "RSQB" in expected:
        return "expected `,` or `]` after the type argument", None
    if "IMPORT" in expected and declaration == "from":
        return "expected `import` after the module name", "write `from a.b import X`"
    if "DOT" in expected and declaration == "tool":
        return "expected `.` and the tool's name after the server", "write `= server.tool_name`"
    if "STRING" in expected:
        return "expected a string", None
    if expected & _DECL_START:
        return f"expected a declaration ({_DECL_WORDS})", None
    if expected & _TERM_START:
        return "expected an expression (a step name, `par`, `each`, `local` or `(`)", None
    if "NAME" in expected:
        return "expected a name", None
    words = sorted(f"`{SPELLING.get(t, KEYWORDS.get(t, t.lower()))}`" for t in expected if t != "$END")
    if not words:
        return "expected the end of the file", None
    return "expected " + (" or ".join(words[:4]) if len(words) <= 4 else ", ".join(words[:4]) + " or …"), None


#: Help for a token found where an expression could go on with an operator: what the user
#: probably meant (`a >= b`, `a > b`, `a = b`, `a | b`, `a, b` between steps).
_NOT_AN_OPERATOR: Final = {
    "GT": "did you mean `>>=`? Steps run one after another with `a >>= b`",
    "EQUAL": "did you mean `>>=`? Steps run one after another with `a >>= b`",
    "BAR": "did you mean `a >>= b` (one after another) or `par <a, b>` (side by side)?",
    "COMMA": "to run steps side by side, write `par <a, b>`",
}


def _each_limit_without_parentheses(source: SourceFile, site: ErrorSite) -> Diagnostic | None:
    """`each limit=3 a`: the limit was read as a step named `limit`."""
    stack = site.stack
    if not (site.found_type == "EQUAL" and len(stack) >= 2 and stack[-2].kind == "EACH" and stack[-1].kind == "NAME"):
        return None
    word = stack[-1]
    if source.text[word.start : word.end] != "limit":
        return None
    number = re.match(r"\s*=\s*([0-9]+)", source.text[site.start :])
    limit = number.group(1) if number else "4"
    end = site.start + number.end() if number else site.end
    return error(
        "MCE001",
        "the limit of `each` goes in parentheses",
        source.span(word.start, end),
        help=f"write `each(limit={limit}) …`",
    )


def describe_unexpected(source: SourceFile, site: ErrorSite) -> Diagnostic:
    """The diagnostic for an unexpected token (MCE001, or MCE016 for a misplaced reserved word)."""
    span = source.span(site.start, site.end)
    if site.found_type in KEYWORDS and "NAME" in site.expected:
        return reserved_word(KEYWORDS[site.found_type], span)
    attribute = _attribute_word(site.stack)
    if attribute is not None and attribute.kind in _DECL_START:
        # `m.f.` at the end of a line, then `pipeline p …`: the keyword was taken as the last part of the name.
        word = KEYWORDS[attribute.kind]
        return error(
            "MCE001",
            f"expected a name after `.`, found `{word}`",
            source.span(attribute.start, attribute.end),
            help=f"`{word}` was read as the last part of a dotted name; a dotted name does not end with `.`",
        )
    if "GT" in site.expected and _innermost_open(site.stack) == "PAR":
        glued = _par_glued_bind(source, site)
        if glued is not None:
            return glued
    each_limit = _each_limit_without_parentheses(source, site)
    if each_limit is not None:
        return each_limit
    last = _last_token(site.stack)
    described = _after_token(last, site) if last is not None else None
    message, help_text = described if described is not None else _by_expected(site)
    if message.startswith("expected `;` after") and site.found_type in _NOT_AN_OPERATOR:
        help_text = _NOT_AN_OPERATOR[site.found_type]
    if site.found_type == "BINDOP" and any(item.kind == "FATARROW" for item in site.stack):
        help_text = "a `catch` handler is one term: write `catch E => (h >>= k)` for a chain, or `(a catch E => h) >>= k` to go on after it"
    elif site.found_type == "BINDOP" and any(item.kind == "ORELSE" for item in site.stack):
        help_text = "a fallback binds loosest: write `a orelse (f >>= g)` for a chain, or `(a orelse f) >>= g` to go on after it"
    labels: tuple[Label, ...] = ()
    if site.stack and message.startswith(("expected `;`", "expected `->`", "expected `:`")):
        previous = site.stack[-1]
        if previous.start >= 0:
            labels = (Label(source.span(previous.start, previous.end), "after this"),)
    return error("MCE001", f"{message}, {_found(site)}", span, labels=labels, help=help_text)


def reserved_word(word: str, span: Span) -> Diagnostic:
    """MCE016 for a reserved word written where a name belongs."""
    return error(
        "MCE016",
        f"`{word}` is a reserved word and cannot be used as a name",
        span,
        help=f"choose another name, such as `{word}_`",
    )


def describe_bad_character(source: SourceFile, offset: int) -> Diagnostic:
    """MCE001 for text the lexer cannot read at ``offset`` (unterminated string, stray or non-ASCII character)."""
    char = source.text[offset] if offset < len(source.text) else ""
    if char == '"':
        line, _column = source.position(offset)
        end = offset + len(source.line_text(line)) - (_column - 1)
        return error(
            "MCE001",
            "unterminated string",
            source.span(offset, max(end, offset + 1)),
            help='a string ends with `"` on the same line; write a line break as `\\n`',
        )
    span = source.span(offset, offset + 1)
    if char == "'":
        return error("MCE001", "unexpected character `'`", span, help='strings use double quotes: `"…"`')
    if char == "-" and source.text[offset + 1 : offset + 2].isspace():
        return error("MCE001", "unexpected character `-`", span, help="a negative number is written without a space: `-1`")
    code_point = f"U+{ord(char):04X}" if char else "end of file"
    if char and ord(char) > 127:
        name = unicodedata.name(char, "")
        shown = f"`{char}` ({code_point}{' ' + name if name else ''})"
        if not char.isprintable():
            shown = f"{code_point}{' ' + name if name else ''}"
        return error(
            "MCE001",
            f"unexpected non-ASCII character {shown}",
            span,
            help="names and keywords use only ASCII letters, digits and `_`; non-ASCII text may appear only in comments and strings",
        )
    if char and not char.isprintable() and char not in "\t\n\r":
        return error("MCE001", f"unexpected control character {code_point}", span)
    return error("MCE001", f"unexpected character `{char}`", span)
