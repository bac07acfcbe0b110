"""Text that Jupyter renders as Markdown and a terminal shows as it is.
"""

from __future__ import annotations


class Markdown(str):
    """A string that Jupyter renders as Markdown and everything else sees as plain text."""

    def _repr_markdown_(self) -> str:
        return str(self)

    def __repr__(self) -> str:  # the plain-text view in a terminal or a text-only front end
        return str(self)

