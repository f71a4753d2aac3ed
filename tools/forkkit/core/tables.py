"""Markdown tables, as the kit writes them into reports and documents."""


def md_cell(text):
    """`text` for a table cell: a | in it would end the cell."""
    return text.replace("|", "\\|")


def md_row(cells):
    """One row: `| a | b |` (an empty cell is `|  |`)."""
    return "| " + " | ".join(cells) + " |"


def md_rule(columns, right=(), spaced=False):
    """The line under the header: `|---|---|`, or `| --- | ---: |` when
    `spaced`; the columns numbered in `right` align right."""
    marks = ["---:" if i in right else "---" for i in range(columns)]
    return md_row(marks) if spaced else "|" + "|".join(marks) + "|"


def md_head(cells):
    """The header row: as md_row(), but a cell left empty on purpose (over
    the row names) is `| |`."""
    return "|" + "|".join(" %s " % c if c else " " for c in cells) + "|"


def md_table(head, rows, right=(), spaced=False):
    """The lines of a table: header, rule, rows (lists of cell texts)."""
    return [md_head(head), md_rule(len(head), right, spaced)] + [md_row(r) for r in rows]
