"""Parsing printed DSL text (upstream path `pypto.language.parser.text_parser`, SPEC §4 and §13).

`parse(code)` is `pl.parse`: the `ir.Program` or `ir.Function` the text describes.
`parse_program(code)` is the same for text that must describe a Program.
"""

from __future__ import annotations

from typing import Any

from ...core.errors import ParserSyntaxError, user_facing
from ...core.span import Span
from ...ir.function import Program

__all__ = ["parse", "parse_program"]


@user_facing
def parse(code: str, filename: str | None = None) -> Any:
    """The Program or Function printed as `code` (`as_python()` output or hand-written DSL text).

    Raises ParserError subclasses located in `filename` (a generated `<pl.parse-N>` name if None).
    """
    from .entry import parse_text

    return parse_text(code, filename)


@user_facing
def parse_program(code: str, filename: str | None = None) -> Program:
    """`parse(code)` for text holding an `@pl.program` class.

    Raises:
        ParserSyntaxError: the text describes a single function, not a program.
    """
    node = parse(code, filename)
    if not isinstance(node, Program):
        raise ParserSyntaxError("parse_program expects the text of an @pl.program class; this text "
                                "describes a single function (use parse)", getattr(node, "span", None)
                                or Span.unknown())
    return node
