"""`ErrorRenderer` (upstream path `...parser.diagnostics.renderer`, SPEC §13): an error as text.

The rendering is the one every PyPTO error uses for `str(error)` (`pypto.core.errors.
render_location`): `file:line:col: <kind>: message`, then the source line and a caret under the
located columns. Errors without a known location render as their bare message.
"""

from __future__ import annotations

from ....core.errors import PyPTOError, render_location
from ....core.span import Span

__all__ = ["ErrorRenderer"]


class ErrorRenderer:
    """Formats PyPTO errors (or a span and a message) for display.

    `kind` is the word after the location (`error`, `warning`, `note`).
    """

    def __init__(self, kind: str = "error") -> None:
        self.kind = kind

    def render(self, error: PyPTOError | BaseException) -> str:
        """The located text of `error`; a non-PyPTO exception renders as `Type: message`."""
        if isinstance(error, PyPTOError):
            return render_location(error.span, error.message, self.kind)
        return f"{type(error).__name__}: {error}"

    def render_at(self, span: Span | None, message: str) -> str:
        """`message` located at `span` (the source line and caret when the file is readable)."""
        return render_location(span, message, self.kind)
