"""A LaTeX method section as the plain text a generator is prompted with.

What the reader of a compiled paper sees is kept, what only the compiler reads is dropped: comments,
labels, citations and cross-references, figure and table environments (their images and placement are
not the method), the markers of other environments and of list items. Sectioning commands become their
titles, text-formatting commands (``\\textbf{x}``, ``\\emph{x}`` ...) their text, LaTeX's quotes
(````x''``) typographic ones (“x”, which a code-based generator reads as a quoted label), ``~`` a space,
``\\%`` a per cent sign; mathematics is kept as written (``$\\mathbf{z}_t$``). Whitespace is collapsed, paragraphs kept.
"""

from __future__ import annotations

import re

_COMMENT = re.compile(r"(?<!\\)%.*")
_FLOATS = re.compile(r"\\begin\{(figure|table|wrapfigure|wraptable)\*?\}.*?\\end\{\1\*?\}", re.DOTALL)
_DROPPED = re.compile(
    r"\\(?:label|cite[a-z]*|ref|eqref|autoref|cref|Cref|pageref|footnotemark|vspace|hspace)\*?"
    r"(?:\[[^\]]*\])*\{[^{}]*\}"
)
_SECTION = re.compile(r"\\(?:section|subsection|subsubsection|paragraph|subparagraph)\*?\{([^{}]*)\}")
_FORMATTING = re.compile(
    r"\\(?:textbf|textit|emph|texttt|textsc|textrm|textsf|underline|mbox|text)\{([^{}]*)\}"
)
_ENVIRONMENT_MARK = re.compile(r"\\(?:begin|end)\{[^{}]*\}(?:\[[^\]]*\])?")
_ITEM = re.compile(r"\\item\b(?:\[[^\]]*\])?\s*")
_DOUBLE_QUOTE = re.compile(r"``(.+?)''", re.DOTALL)
_SINGLE_QUOTE = re.compile(r"(?<![`\w])`([^`'\n]+)'")
_SPACING = re.compile(r"\\[,;:! ]|~")
_LINE_BREAK = re.compile(r"\\\\(?:\[[^\]]*\])?")
_ESCAPED = re.compile(r"\\([%&_#])")
# A space left before punctuation where a citation or a reference was dropped: "model \cite{x}." .
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:)])")


def latex_text(latex: str) -> str:
    """The plain text of a LaTeX method section (see the module docstring)."""
    text = "\n".join(_COMMENT.sub("", line) for line in latex.splitlines())
    text = _FLOATS.sub(" ", text)
    text = _DROPPED.sub("", text)
    text = _SECTION.sub(lambda match: f"\n\n{match.group(1).strip()}.\n\n", text)
    previous = None
    while previous != text:  # nested formatting, \textbf{\emph{x}}
        previous, text = text, _FORMATTING.sub(r"\1", text)
    text = _ENVIRONMENT_MARK.sub("\n", text)
    text = _ITEM.sub("\n- ", text)
    text = _DOUBLE_QUOTE.sub("\u201c\\1\u201d", text)
    text = _SINGLE_QUOTE.sub("\u2018\\1\u2019", text)
    text = _LINE_BREAK.sub("\n", _SPACING.sub(" ", text))
    text = _ESCAPED.sub(r"\1", text)
    paragraphs = (
        _SPACE_BEFORE_PUNCTUATION.sub(r"\1", " ".join(paragraph.split()))
        for paragraph in re.split(r"\n\s*\n", text)
    )
    return "\n\n".join(paragraph for paragraph in paragraphs if paragraph)
