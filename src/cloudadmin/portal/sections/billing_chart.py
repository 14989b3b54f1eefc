"""The billing chart drawn as SVG on the server (no charting library, no script): small
multiples, one row of twelve bars per product (and one for all of them), each row on its
own scale with its largest figure written beside it, so that no information is carried
by colour alone. Every bar has a ``<title>`` with its figure, and the image a
``<title>`` and a ``<desc>``; the chart's page shows the same figures as a table.

The SVG is served as an image of its own (``image/svg+xml``): presentation attributes
only, no ``style`` attribute, no script.
"""

from __future__ import annotations

from datetime import date
from xml.sax.saxutils import escape, quoteattr

from cloudadmin.billing.addendums.chart import ActiveByMonth

WIDTH = 820
LABEL_WIDTH = 220  # product names
SCALE_WIDTH = 80  # the row's largest figure, at the right
ROW_HEIGHT = 34
BAR_SPACE = 0.7  # of a month's column
TOP = 48
BOTTOM = 44
INK = "#1d2330"
MUTED = "#5b6472"
BAR = "#1f5fbf"
LINE = "#d5d9e0"
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def month_label(month: date) -> str:
    return f"{month.year}-{month.month:02d}"


def period_text(chart: ActiveByMonth) -> str:
    return f"{month_label(chart.months[0])} to {month_label(chart.months[-1])}"


def title_text(chart: ActiveByMonth) -> str:
    return f"Active addendums per product and month, {period_text(chart)} (UTC)"


def _text(x: float, y: float, content: str, **attributes: str) -> str:
    extra = "".join(f" {name.replace('_', '-')}={quoteattr(v)}" for name, v in attributes.items())
    return f'<text x="{x:.1f}" y="{y:.1f}"{extra}>{escape(content)}</text>'


def _short(name: str, limit: int = 30) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def draw(chart: ActiveByMonth) -> str:
    """The chart as an SVG document."""
    rows = [("All products", chart.totals), *((p.name, p.counts) for p in chart.products)]
    months = len(chart.months)
    plot = WIDTH - LABEL_WIDTH - SCALE_WIDTH
    column = plot / months
    bar = column * BAR_SPACE
    height = TOP + ROW_HEIGHT * len(rows) + BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="chart-title chart-desc" '
        f'font-family="system-ui, sans-serif" font-size="13">',
        f'<title id="chart-title">{escape(title_text(chart))}</title>',
        f'<desc id="chart-desc">{escape(_description(chart))}</desc>',
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        _text(8, 22, title_text(chart), fill=INK, font_size="15", font_weight="600"),
        _text(WIDTH - 8, 22, "largest in row", fill=MUTED, text_anchor="end"),
    ]
    for r, (name, counts) in enumerate(rows):
        top = TOP + r * ROW_HEIGHT
        base = top + ROW_HEIGHT - 6
        largest = max(counts) if counts else 0
        weight = "600" if r == 0 else "400"
        out.append(_text(8, base - 6, _short(name), fill=INK, font_weight=weight))
        out.append(
            f'<line x1="{LABEL_WIDTH}" y1="{base}" x2="{LABEL_WIDTH + plot:.1f}" y2="{base}" '
            f'stroke="{LINE}"/>'
        )
        for i, n in enumerate(counts):
            if n == 0 or largest == 0:
                continue
            h = max(1.0, (ROW_HEIGHT - 10) * n / largest)
            x = LABEL_WIDTH + i * column + (column - bar) / 2
            tip = f"{name}, {month_label(chart.months[i])}: {n:,}"
            out.append(
                f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{BAR}"><title>{escape(tip)}</title></rect>'
            )
        out.append(_text(WIDTH - 8, base - 6, f"{largest:,}", fill=MUTED, text_anchor="end"))
    if not chart.products:
        y = TOP + ROW_HEIGHT + 20
        out.append(_text(LABEL_WIDTH, y, "No addendum was active in these months.", fill=MUTED))
    axis = TOP + ROW_HEIGHT * len(rows) + 16
    for i, month in enumerate(chart.months):
        x = LABEL_WIDTH + (i + 0.5) * column
        out.append(_text(x, axis, _MONTH_NAMES[month.month - 1], fill=INK, text_anchor="middle"))
        if i == 0 or month.month == 1:
            out.append(_text(x, axis + 16, str(month.year), fill=MUTED, text_anchor="middle"))
    out.append("</svg>")
    return "\n".join(out)


def _description(chart: ActiveByMonth) -> str:
    """The figures in words, for a reader of the image alone."""
    if not chart.products:
        return f"No addendum was active from {period_text(chart)}."
    labels = [month_label(m) for m in chart.months]
    parts = [
        f"{p.name}: " + ", ".join(f"{m} {n}" for m, n in zip(labels, p.counts, strict=True))
        for p in chart.products
    ]
    return f"Active addendums per month, {period_text(chart)}. " + "; ".join(parts) + "."
