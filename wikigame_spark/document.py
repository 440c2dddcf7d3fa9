"""A small document written twice, as Markdown and as self-contained HTML, for every report.

The evaluation's report and the graph statistics both render headings, paragraphs, tables and
figures through :class:`Document`, so they share one look and one rounding rule
(:func:`rounded`). It knows nothing about games or graphs: it sits below every layer.
"""

from __future__ import annotations

import base64
import html
import math
import re
from decimal import ROUND_HALF_UP, Decimal

import pandas as pd


def is_missing(value) -> bool:
    """No value: ``None`` or a float NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def rounded(value: float, digits: int = 2) -> str:
    """The reports' one rounding rule, in tables and figures alike: the decimal value as Python
    prints it, rounded half away from zero (0.175 → ``0.18``, never ``0.17`` here and ``18 %``
    there); ``–`` for no value."""
    if is_missing(value):
        return "–"
    d = Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{abs(d) if d == 0 else d:.{digits}f}"


def fmt(value, digits: int = 3) -> str:
    """A table cell: ``–`` for no value, floats rounded (tiny or huge ones in e-notation)."""
    if is_missing(value):
        return "–"
    if isinstance(value, float):
        if value != 0 and (abs(value) < 10 ** (-digits) or abs(value) >= 1e6):
            return f"{value:.2e}"
        return rounded(value, digits)
    return str(value)


def _cells(df: pd.DataFrame) -> list[list[str]]:
    """Each row's cells as text: a column of whole numbers held as floats (counts beside a missing
    value, sums) shown as integers, not ``76.000``."""
    columns = [df.iloc[:, i] for i in range(df.shape[1])]
    whole = [pd.api.types.is_float_dtype(c) and c.dropna().map(lambda v: float(v).is_integer()).all() for c in columns]
    return [
        [fmt(int(v)) if w and not is_missing(v) else fmt(v) for v, w in zip(row, whole)]
        for row in df.itertuples(index=False)
    ]


def md_table(df: pd.DataFrame) -> str:
    cell = lambda text: text.replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(cell(fmt(c)) for c in df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in _cells(df)]
    return "\n".join(lines)


def html_table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in _cells(df))
    # a wide table scrolls inside the page instead of running off it
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0;font-size:13px}.wide{overflow-x:auto;max-width:100%}"
    "td{overflow-wrap:anywhere;max-width:32em}"
    "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f3f3f3}"
    "img{max-width:100%;border:1px solid #eee;margin:0.5em 0}figcaption{color:#555;font-size:13px}"
)


class Document:
    """Blocks rendered twice: Markdown (figures by relative path) and HTML (figures inlined, so
    the page reads anywhere, the MLflow UI included)."""

    def __init__(self) -> None:
        self.blocks: list[tuple] = []
        self.files: dict[str, bytes] = {}

    def heading(self, text: str, level: int = 2) -> None:
        self.blocks.append(("h", level, text))

    def para(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, df: pd.DataFrame) -> None:
        self.blocks.append(("table", df))

    def figure(self, name: str, png: bytes, caption: str) -> None:
        path = f"figures/{name}.png"
        self.files[path] = png
        self.blocks.append(("figure", path, caption))

    def markdown(self) -> str:
        out = []
        for b in self.blocks:
            if b[0] == "h":
                out.append("#" * b[1] + " " + b[2])
            elif b[0] == "p":
                out.append(b[1])
            elif b[0] == "table":
                out.append(md_table(b[1]))
            else:
                out.append(f"![{b[2]}]({b[1]})\n\n*{b[2]}*")
        return "\n\n".join(out) + "\n"

    def html(self, title: str) -> str:
        out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"]
        out.append(f"<style>{_CSS}</style></head><body>")
        for b in self.blocks:
            if b[0] == "h":
                out.append(f"<h{b[1]}>{html.escape(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                text = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(b[1]))
                out.append(f"<p>{text}</p>")
            elif b[0] == "table":
                out.append(html_table(b[1]))
            else:
                data = base64.b64encode(self.files[b[1]]).decode("ascii")
                out.append(
                    f"<figure><img alt='{html.escape(b[2])}' src='data:image/png;base64,{data}'>"
                    f"<figcaption>{html.escape(b[2])}</figcaption></figure>"
                )
        out.append("</body></html>")
        return "\n".join(out) + "\n"
