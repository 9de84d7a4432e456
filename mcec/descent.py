"""The fast path of parsing: a recursive-descent parser for valid specs.

:func:`mcec.parser.parse` calls :func:`parse_valid` first and falls back to the
LALR parser (Lark's table, our driver) only when this returns ``None``. So this
module never explains anything: on the first token it does not expect, on a
name that needs a diagnostic (a Python keyword, MCE016), on an invalid string
escape, or on nesting deeper than the interpreter's recursion limit allows, it
gives up and the LALR parser parses the file again, reporting what is wrong.

Why two parsers: the LALR driver is general (any grammar Lark accepts, errors
described from the parser state), but it pays for that per token: a table
lookup, a stack push, and per reduction a child list and a builder call. Here
each grammar rule is a few lines of straight code, tokens are plain strings
from one ``findall``, and positions come from ``itertools.accumulate`` (all in
C), so a valid file is parsed several times faster. Both build the same
:mod:`mcec.syntax` tree for every input this module accepts: the grammar
(``grammar/mce.lark``) stays the definition, each function below names the
rule it implements, and tests check tree equality on generated specs and
mutations (``tests/test_0_descent.py``). A change to the grammar must be made
here too; those tests fail until it is.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable
from itertools import accumulate, repeat
from typing import Any, Final, NoReturn

from mcec import construct as c
from mcec import syntax as s
from mcec.span import SourceFile, Span
from mcec.syntax_errors import KEYWORDS, PYTHON_KEYWORDS, SPELLING

__all__ = ["RESERVED_WORDS", "parse_valid"]

#: The words LANGUAGE.md §2 reserves; they never lex as names (the grammar's keyword terminals).
RESERVED_WORDS: Final = frozenset(KEYWORDS.values())

#: The grammar's punctuation terminals, as written.
PUNCTUATION: Final = tuple(SPELLING.values())

#: The grammar's whitespace (WS): the only characters ``findall`` may skip.
_WHITESPACE: Final = " \t\f\r\n"
#: What may stand between two tokens: whitespace and comments (the grammar's WS and COMMENT).
#: Possessive, so that nothing inside a comment is ever taken back as a token.
_GAP: Final = r"[ \t\f\r\n]*+(?:\#[^\n]*+[ \t\f\r\n]*+)*+"
#: One piece per token, with the gap before it: the grammar's NAME, INT, STRING
#: and punctuation terminals, or one character no terminal matches (never
#: skipped: the parse then gives up on it). The gap after the last token is a
#: last piece with no token (``\Z``), so the pieces cover the whole text.
_PIECES: Final = re.compile(
    _GAP
    # Most frequent first (the regex engine tries the branches in order); the
    # longer punctuation before the one-character class that holds its prefixes.
    + r"""(?:[A-Za-z_][A-Za-z0-9_]*|"""
    + "|".join(re.escape(p) for p in PUNCTUATION if len(p) > 1)
    + "|["
    + "".join(re.escape(p) for p in PUNCTUATION if len(p) == 1)
    + r"""]|[0-9]+|"(?:[^"\\\r\n]|\\[^\r\n])*"|[^ \t\f\r\n]|\Z)"""
)
#: ASCII characters ``str.isspace`` accepts that the grammar's WS does not (see ``_strip_gaps``).
_OTHER_ASCII_SPACE: Final = "\x0b\x1c\x1d\x1e\x1f"
#: First characters of NAME tokens (and reserved words).
_NAME_FIRST: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
#: Words that are never a plain reference: reserved (a syntax error) or a Python keyword (MCE016).
_NOT_A_REF: Final = RESERVED_WORDS | PYTHON_KEYWORDS
#: After the end of the tokens; it starts no rule, so reaching it where a token is expected gives up.
_END: Final = "\x00"


class _GiveUp(Exception):
    """Not a valid spec this parser vouches for: let the LALR parser handle the file."""


def _give_up() -> NoReturn:
    raise _GiveUp


def parse_valid(source: SourceFile) -> s.Module | None:
    """The syntax tree of ``source`` when it is a valid spec needing no diagnostic, else ``None``.

    ``None`` means "ask :mod:`mcec.parser`": the text has a syntax error, a
    name that gets MCE016, an invalid string escape, or nesting too deep for
    recursion. A tree returned here equals the one the LALR parser builds.
    """
    text = source.text
    if text.startswith("\ufeff"):
        # A byte-order mark is allowed at the very start; a space keeps offsets equal.
        text = " " + text[1:]
    # Tokens and where they end, made by C loops (findall, map, accumulate): no Python code per
    # token. A token starts at its end minus its length; the parser works that out where it needs it.
    pieces = _PIECES.findall(text)
    if not pieces[-1]:
        pieces.pop()  # the \Z branch matches once more, empty, after a piece that ends the text
    ends = list(accumulate(map(len, pieces)))
    tokens = _strip_gaps(text, pieces)
    # Free the pieces before the tree is built: the nodes then reuse their memory
    # instead of fresh pages (a fifth fewer page faults on a 100,000-line file).
    del pieces
    comments = _comments(source, text, tokens, ends) if "#" in text else []
    if tokens and not tokens[-1]:
        tokens.pop()  # the gap after the last token
        ends.pop()
    count = len(tokens)
    tokens.append(_END)
    ends.append(len(text))
    try:
        decls = _descend(source, tokens, ends, count)
    except (_GiveUp, RecursionError):
        return None
    return s.Module(source.path, tuple(decls), tuple(comments), c.SPAN(source, 0, len(source.text)))


def _strip_gaps(text: str, pieces: list[str]) -> list[str]:
    """The pieces of ``text`` without the whitespace before their tokens (comments stay; see ``_comments``).

    ``str.lstrip()`` without an argument is a third cheaper than with one, but
    it strips every character ``str.isspace`` accepts; a piece's token may be
    one such character the grammar does not treat as whitespace (which the
    parse must see, and give up on). So the argument-free form is used only
    when the text has none: it is ASCII and has none of the five others.
    """
    if text.isascii() and not any(other in text for other in _OTHER_ASCII_SPACE):
        return list(map(str.lstrip, pieces))
    return list(map(str.lstrip, pieces, repeat(_WHITESPACE)))


def _comments(source: SourceFile, text: str, tokens: list[str], ends: list[int]) -> list[s.Comment]:
    """The comments of ``text``, in order; the tokens of the pieces that hold them are corrected in place.

    A comment sits in the gap before a token, so ``lstrip`` left it at the
    front of that token: a token starting with ``#`` is comment lines, then
    (after the last newline: no token holds one) whitespace and the real
    token, or the last comment of a file that ends without a newline. Work is in
    proportion to the number of ``#`` characters (a ``bisect`` each), not to
    the number of tokens: a ``#`` inside a string token or in a gap already
    handled is skipped. String methods take the gap apart (two regex matches
    did, 10% slower); a comment costs about 14,000 instructions, two lines' worth
    of tokens: the bisect, the node, the slices.
    """
    found: list[s.Comment] = []
    at = text.find("#")
    while at >= 0:
        index = bisect.bisect_right(ends, at)  # the piece that holds offset `at`
        held = tokens[index]
        if held[:1] == "#":  # else `at` is inside a string token
            offset = ends[index] - len(held)
            last_newline = held.rfind("\n")  # -1 (none) takes all of `held` below
            rest = held[last_newline + 1 :].lstrip(_WHITESPACE)
            if rest[:1] == "#":  # the last comment of the file, no newline after it: no token
                lines, tokens[index] = held, ""
            else:
                lines, tokens[index] = held[:last_newline], rest
            for line in lines.split("\n"):
                hash_at = line.find("#")
                if hash_at >= 0:
                    note = line[hash_at:].rstrip("\r")
                    start = offset + hash_at
                    found.append(c.COMMENT(note, source, start, start + len(note)))
                offset += len(line) + 1
        at = text.find("#", ends[index])
    return found


def _descend(source: SourceFile, toks: list[str], ends: list[int], count: int) -> list[s.Decl]:
    """The declarations of a file whose tokens are ``toks[:count]`` (then one end marker).

    ``ends[k]`` is the offset just after ``toks[k]``: a one-character token
    (every closing bracket and ``;``) ends there, and a token starts at
    ``ends[k] - len(toks[k])``. A node takes its position as its last three
    arguments, ``source, start, end`` (see :mod:`mcec.syntax`), worked out from
    ``ends`` and the children's own ``start``/``end``: no ``Span`` is built but
    for the two ``Span`` fields (a limit, a server's command).

    The rules are closures over the token lists and the cursor ``i``: the
    cheapest way for CPython to share them (no attribute lookups).
    """
    i = 0
    make_span = c.SPAN
    make_name = c.NAME
    make_qual = c.QUAL
    # The two most frequent nodes, one-name types and references, are built in
    # place where they are most often made (type_atom, term), not by a call to
    # NAME or REF: the call is over a quarter of the node (see mcec.fastinit.builder_class).
    new_name = c.NAME_BUILDER
    new_ref = c.REF_BUILDER

    def token_span(at: int) -> Span:
        end = ends[at]
        return make_span(source, end - len(toks[at]), end)

    def expect(text: str) -> int:
        """Consume ``text``; its index."""
        nonlocal i
        if toks[i] != text:
            _give_up()
        i += 1
        return i - 1

    def name() -> s.Name:
        """``name: NAME`` (a NAME token: not a reserved word)."""
        nonlocal i
        tok = toks[i]
        if tok[0] not in _NAME_FIRST or tok in RESERVED_WORDS:
            _give_up()
        end = ends[i]
        i += 1
        return make_name(tok, source, end - len(tok), end)

    def declared_name() -> s.Name:
        """A ``name`` the parser checks for MCE016 (a Python keyword gets a diagnostic: give up)."""
        nonlocal i
        tok = toks[i]
        if tok[0] not in _NAME_FIRST or tok in _NOT_A_REF:
            _give_up()
        end = ends[i]
        i += 1
        return make_name(tok, source, end - len(tok), end)

    def dotted(first: s.Name) -> s.QualName:
        """The rest of ``qual_name: name (DOT attr_name)*`` after ``first``; after a dot reserved words are names too."""
        nonlocal i
        parts = [first]
        while toks[i] == ".":
            i += 1
            tok = toks[i]
            if tok[0] not in _NAME_FIRST or tok in PYTHON_KEYWORDS:
                _give_up()
            end = ends[i]
            i += 1
            parts.append(make_name(tok, source, end - len(tok), end))
        return make_qual(tuple(parts), source, first.start, parts[-1].end)

    def python_path() -> s.QualName:
        """``qual_name: name (DOT attr_name)*``, written as Python by the generated module (a module, an implementation).

        A Python keyword heading it gets MCE016, as a declared name does (the
        parts after a dot are checked in ``dotted``).
        """
        first = declared_name()
        if toks[i] == ".":
            return dotted(first)
        return make_qual((first,), source, first.start, first.end)

    def type_atom() -> s.Name | s.QualName | s.TypeApply:
        """``_type_atom: type_name | type_apply`` (``name`` and ``qual_name`` inlined: most types are one name)."""
        nonlocal i
        tok = toks[i]
        if tok[0] not in _NAME_FIRST or tok in RESERVED_WORDS:
            _give_up()
        end = ends[i]
        start = end - len(tok)
        i += 1
        node = new_name()  # NAME(tok, source, start, end), built in place: see `new_name`
        node.text = tok
        node.source = source
        node.start = start
        node.end = end
        node.__class__ = s.Name
        first: s.Name = node
        after = toks[i]
        if after == ".":
            head = dotted(first)
            after = toks[i]
            if after != "[":
                return head
        elif after == "[":
            head = make_qual((first,), source, start, end)
        else:
            return first  # most types: one name
        i += 1
        args = [type_()]
        while toks[i] == ",":
            i += 1
            args.append(type_())
        if toks[i] != "]":
            _give_up()
        i += 1
        return c.TYPE_APPLY(head, tuple(args), source, start, ends[i - 1])

    def type_() -> s.TypeExpr:
        """``?type: _type_atom | type_union``."""
        atom = type_atom()
        if toks[i] != "|":
            return atom
        return union_rest(atom)

    def union_rest(atom: s.TypeExpr) -> s.TypeUnion:
        """The rest of ``type_union: _type_atom (BAR _type_atom)+`` after its first member ``atom``."""
        nonlocal i
        members: list[s.TypeExpr] = [atom]
        while toks[i] == "|":
            i += 1
            members.append(type_atom())
        return c.TYPE_UNION(tuple(members), source, atom.start, members[-1].end)

    def error_list() -> s.ErrorList | None:
        """``error_list: BANG _type_atom (BAR _type_atom)*``, if the next token is ``!``."""
        nonlocal i
        if toks[i] != "!":
            return None
        bang = ends[i] - 1
        i += 1
        errors: list[s.TypeExpr] = [type_atom()]
        while toks[i] == "|":
            i += 1
            errors.append(type_atom())
        return c.ERROR_LIST(tuple(errors), source, bang, errors[-1].end)

    # -- expressions: loosest first, orelse < catch < >>= < term (LANGUAGE.md §5). The levels
    # are inlined into `expr` and `catch_level` (most expressions are one term: one call, not four).

    def expr() -> Any:
        """``?expr: _catch_level | or_else``; ``or_else`` folds to the left."""
        nonlocal i
        body = term()
        after = toks[i]
        if after == ">>=":
            body = bind_rest(body)
            after = toks[i]
        if after == "catch":
            body = catch_rest(body)
            after = toks[i]
        while after == "orelse":
            keyword_at = ends[i] - 6  # `orelse`
            i += 1
            fallback = catch_level()
            body = c.OR_ELSE(body, fallback, keyword_at, source, body.start, fallback.end)
            after = toks[i]
        return body

    def catch_level() -> Any:
        """``_catch_level: _bind_level | catch``."""
        body = term()
        if toks[i] == ">>=":
            body = bind_rest(body)
        if toks[i] == "catch":
            body = catch_rest(body)
        return body

    def catch_rest(body: Any) -> Any:
        """``catch: _bind_level (CATCH _type_atom (BAR _type_atom)* FATARROW _term)+``, folded to the left."""
        nonlocal i
        while toks[i] == "catch":
            keyword_at = ends[i] - 5  # `catch`
            i += 1
            errors: list[s.TypeExpr] = [type_atom()]
            while toks[i] == "|":
                i += 1
                errors.append(type_atom())
            expect("=>")
            handler = term()
            body = c.CATCH(body, tuple(errors), handler, keyword_at, source, body.start, handler.end)
        return body

    def bind_rest(first: Any) -> s.Bind:
        """``bind: _term (BINDOP _term)+``: one flat Bind (a parenthesised Bind is spliced in)."""
        nonlocal i
        parts: list[Any] = list(first.parts) if type(first) is s.Bind else [first]
        while toks[i] == ">>=":
            i += 1
            part = term()
            if type(part) is s.Bind:
                parts.extend(part.parts)
            else:
                parts.append(part)
        return c.BIND(tuple(parts), source, parts[0].start, parts[-1].end)

    def group() -> Any:
        """``group: LPAR expr RPAR`` leaves no node: the inner expression, with its own span."""
        nonlocal i
        i += 1
        inner = expr()
        expect(")")
        return inner

    def par() -> s.Par:
        """``par: PAR LT expr (COMMA expr)* GT``."""
        nonlocal i
        first = ends[i] - 3  # `par`
        i += 1
        if toks[i] != "<":
            _give_up()
        i += 1
        branches = [expr()]
        while toks[i] == ",":
            i += 1
            branches.append(expr())
        if toks[i] != ">":
            _give_up()
        i += 1
        return c.PAR(tuple(branches), source, first, ends[i - 1])

    def each() -> s.Each:
        """``each: EACH (LPAR LIMIT EQUAL INT RPAR)? _term``."""
        nonlocal i
        first = ends[i] - 4  # `each`
        i += 1
        limit: int | None = None
        limit_span: Span | None = None
        if toks[i] == "(" and toks[i + 1] == "limit":
            i += 2
            expect("=")
            number = toks[i]
            if not number.isdigit() or not number.isascii():
                _give_up()
            limit = int(number)
            limit_span = token_span(i)
            i += 1
            expect(")")
        body = term()
        return c.EACH(body, limit, limit_span, source, first, body.end)

    def local() -> s.Local:
        """``local: LOCAL _term``."""
        nonlocal i
        first = ends[i] - 5  # `local`
        i += 1
        body = term()
        return c.LOCAL(body, source, first, body.end)

    term_rules: dict[str, Callable[[], Any]] = {"(": group, "par": par, "each": each, "local": local}
    term_rule = term_rules.get

    def term() -> Any:
        """``_term: ref | par | each | local | group``; ``ref: NAME`` inlined (a Python keyword gets MCE016)."""
        nonlocal i
        tok = toks[i]
        rule = term_rule(tok)
        if rule is not None:
            return rule()
        if tok[0] not in _NAME_FIRST or tok in _NOT_A_REF:
            _give_up()
        end = ends[i]
        start = end - len(tok)
        i += 1
        ref = new_ref()  # REF(tok, source, start, end), built in place: see `new_name`
        ref.name = tok
        ref.source = source
        ref.start = start
        ref.end = end
        ref.__class__ = s.Ref
        return ref

    # -- declarations

    def block() -> s.Block:
        """``block: LBRACE statement* RBRACE``; ``statement: STEP? expr SEMI``."""
        nonlocal i
        opening = ends[i] - 1
        i += 1
        statements: list[s.Statement] = []
        while toks[i] != "}":
            is_step = toks[i] == "step"
            if is_step:
                first = ends[i] - 4  # `step`
                i += 1
            body = expr()
            if not is_step:
                first = body.start
            if toks[i] != ";":  # `expect` written out here and in par, type_atom, pipeline_decl: see signature
                _give_up()
            statements.append(c.STATEMENT(body, is_step, source, first, ends[i]))
            i += 1
        i += 1
        return c.BLOCK(tuple(statements), source, opening, ends[i - 1])

    def signature() -> tuple[s.TypeExpr, s.TypeExpr]:
        """``COLON type ARROW type``, shared by steps, fns, tools and pipelines.

        Every declaration has one, so ``expect`` and ``type_`` are written out
        here: a call costs about 600 instructions, and these four calls were 2%
        of the parse.
        """
        nonlocal i
        if toks[i] != ":":
            _give_up()
        i += 1
        input_type: s.TypeExpr = type_atom()
        if toks[i] == "|":
            input_type = union_rest(input_type)
        if toks[i] != "->":
            _give_up()
        i += 1
        output_type: s.TypeExpr = type_atom()
        if toks[i] == "|":
            output_type = union_rest(output_type)
        return input_type, output_type

    def pipeline_decl(first: int) -> s.PipelineDecl:
        """``pipeline_decl: PIPELINE name COLON type ARROW type error_list? (EQUAL expr SEMI | block)``."""
        nonlocal i
        declared = declared_name()
        input_type, output_type = signature()
        errors = error_list()
        if toks[i] == "=":
            i += 1
            body: Any = expr()
            if toks[i] != ";":
                _give_up()
            end = ends[i]
            i += 1
        elif toks[i] == "{":
            body = block()
            end = body.end
        else:
            _give_up()
        return c.PIPELINE_DECL(declared, input_type, output_type, errors, body, source, first, end)

    def step_decl(first: int) -> s.StepDecl:
        """``step_decl: ASYNC? STEP name COLON type ARROW type error_list? EQUAL qual_name``."""
        is_async = toks[i - 1] == "async"
        if is_async:
            expect("step")
        declared = declared_name()
        input_type, output_type = signature()
        errors = error_list()
        expect("=")
        impl = python_path()
        return c.STEP_DECL(declared, is_async, input_type, output_type, errors, impl, source, first, impl.end)

    def fn_decl(first: int) -> s.FnDecl:
        """``fn_decl: FN name COLON type ARROW type EQUAL qual_name``."""
        declared = declared_name()
        input_type, output_type = signature()
        expect("=")
        impl = python_path()
        return c.FN_DECL(declared, input_type, output_type, impl, source, first, impl.end)

    def tool_decl(first: int) -> s.ToolDecl:
        """``tool_decl: TOOL name COLON type ARROW type error_list? EQUAL name DOT name``."""
        declared = declared_name()
        input_type, output_type = signature()
        errors = error_list()
        expect("=")
        server = name()
        expect(".")
        tool_name = name()
        return s.ToolDecl(declared, input_type, output_type, errors, server, tool_name, source, first, tool_name.end)

    def server_decl(first: int) -> s.ServerDecl:
        """``server_decl: SERVER name EQUAL STDIO STRING`` (the string is JSON; a bad escape gets MCE001)."""
        nonlocal i
        declared = declared_name()
        expect("=")
        expect("stdio")
        literal = toks[i]
        if literal[0] != '"':
            _give_up()
        try:
            command = json.loads(literal, strict=False)
        except ValueError:
            _give_up()
        where = token_span(i)
        i += 1
        return s.ServerDecl(declared, command, where, source, first, where.end)

    def imported_name() -> s.ImportedName:
        """``imported_name: name (AS name)?`` (both checked for MCE016)."""
        nonlocal i
        imported = declared_name()
        if toks[i] != "as":
            return s.ImportedName(imported, None, source, imported.start, imported.end)
        i += 1
        alias = declared_name()
        return s.ImportedName(imported, alias, source, imported.start, alias.end)

    def from_import(first: int) -> s.FromImport:
        """``from_import: FROM qual_name IMPORT imported_name (COMMA imported_name)*``."""
        nonlocal i
        module = python_path()
        expect("import")
        names = [imported_name()]
        while toks[i] == ",":
            i += 1
            names.append(imported_name())
        return s.FromImport(module, tuple(names), source, first, names[-1].end)

    def module_import(first: int) -> s.ModuleImport:
        """``module_import: IMPORT qual_name (AS name)?``."""
        nonlocal i
        module = python_path()
        if toks[i] != "as":
            return s.ModuleImport(module, None, source, first, module.end)
        i += 1
        alias = declared_name()
        return s.ModuleImport(module, alias, source, first, alias.end)

    def state_decl(first: int) -> s.StateDecl:
        """``state_decl: STATE type (MERGE qual_name)?``."""
        nonlocal i
        state_type = type_()
        if toks[i] != "merge":
            return s.StateDecl(state_type, None, source, first, state_type.end)
        i += 1
        merge = python_path()
        return s.StateDecl(state_type, merge, source, first, merge.end)

    def error_decl(first: int) -> s.ErrorDecl:
        """``error_decl: ERROR type``."""
        error_type = type_()
        return s.ErrorDecl(error_type, source, first, error_type.end)

    decl_rules: dict[str, Callable[[int], s.Decl]] = {
        "from": from_import,
        "import": module_import,
        "state": state_decl,
        "error": error_decl,
        "async": step_decl,
        "step": step_decl,
        "fn": fn_decl,
        "server": server_decl,
        "tool": tool_decl,
        "pipeline": pipeline_decl,
    }
    decl_rule = decl_rules.get
    decls: list[s.Decl] = []
    while i < count:
        rule = decl_rule(toks[i])
        if rule is None:
            _give_up()
        first = ends[i] - len(toks[i])
        i += 1
        decls.append(rule(first))
    return decls
