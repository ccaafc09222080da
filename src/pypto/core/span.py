"""Source locations (SPEC §4: every IR node carries a span, ignored by equality)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Span"]


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file: 1-based lines, 1-based columns.

    `Span.unknown()` is used for compiler-made nodes without a user location.
    """

    filename: str
    begin_line: int
    begin_col: int
    end_line: int = -1
    end_col: int = -1

    @staticmethod
    def unknown() -> Span:
        return _UNKNOWN

    def is_known(self) -> bool:
        return self.begin_line > 0

    def __str__(self) -> str:
        if not self.is_known():
            return "<unknown>"
        return f"{self.filename}:{self.begin_line}:{self.begin_col}"


_UNKNOWN = Span("<unknown>", 0, 0, 0, 0)
