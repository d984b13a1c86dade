"""The matrix as a static page, `kvspec spec matrix --html FOLDER` (spec/adapter-protocol.md, PROTO-33):
FOLDER/index.html, made from the rows README.md's Markdown is made from (matrix.rows), and beside it
a copy of each report with the counterexamples it links, so that FOLDER can be moved or published
alone and every link on the page still resolves. The page has its style inline, no script, and
nothing a browser would fetch from elsewhere (no CDN, no web font)."""

from html import escape
from pathlib import Path
from urllib.parse import quote

from kvspec.conformance.certification.matrix import HEADERS, Certified, Row, rows
from kvspec.reference import KvspecError

# The badge's colours (PROTO-32), light: green conforms, yellow conforms to its dialect, red does not conform.
STYLE = """\
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem; color: #1f2328; background: #fff; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d0d7de; padding: .35rem .6rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
.conforms { background: #dafbe1; color: #116329; }
.dialect { background: #fff8c5; color: #7d4e00; }
.fails { background: #ffebe9; color: #a40e26; }
.legend span { padding: .1rem .4rem; margin-right: .4rem; }
"""
VERDICT_CLASS = {True: "conforms", False: "fails"}


def href(folder: str) -> str:
    """The link from the page to the copy of ``folder``'s report: its name percent-encoded (a `#` or a space in it
    would end or break the link), a name in bytes the locale cannot decode as those bytes."""
    return f"{quote(folder, safe='', errors='surrogateescape')}/report.md"


def cell(text: str, verdict: str | None = None) -> str:
    """A table cell: every string of a report is escaped (PROTO-31: what the implementation said of itself reaches the user
    as text, never as markup), and a verdict, given, colours its cell beside its words (the words alone say it)."""
    return f'<td class="{verdict}">{escape(text)}</td>' if verdict else f"<td>{escape(text)}</td>"


def table_row(row: Row) -> str:
    name, version, policy, canonical, found, against, fixtures, dialect_fixtures = row.cells()
    against_class = None if row.conforms_to_dialect is None else "dialect" if row.conforms_to_dialect else "fails"
    return "".join(["<tr>", cell(name), cell(version), cell(policy), cell(canonical, VERDICT_CLASS[row.conforms]), cell(found),
                    cell(against, against_class), cell(fixtures), cell(dialect_fixtures),
                    f'<td><a href="{escape(href(row.folder))}">report</a></td>', "</tr>"])


def page(matrix_rows: list[Row]) -> str:
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">', "<title>kvspec certifications</title>",
        f"<style>\n{STYLE}</style>", "</head>", "<body>", "<h1>kvspec certifications</h1>",
        "<p>Each implementation kvspec certifies, policy by policy: its verdict against the canonical spec, the dialect "
        "<code>kvspec certify --find-dialect</code> found (spec/dialects.md, DIALECT-8), its verdict against the dialect named after it, "
        "and the replay cases of the golden fixtures it passes, kvspec's own corpus and its dialect's. Each report is a copy beside "
        "this page.</p>",
        '<p class="legend"><span class="conforms">conforms</span><span class="dialect">conforms to its dialect</span>'
        '<span class="fails">does not conform</span></p>',
        "<table>", "<thead>", "<tr>" + "".join(f'<th scope="col">{escape(header)}</th>' for header in HEADERS) + "</tr>", "</thead>",
        "<tbody>", *(table_row(row) for row in matrix_rows), "</tbody>", "</table>",
        "<p>Made by <code>kvspec spec matrix --html</code> from each certification's report.json, fixtures.json and dialect/.</p>",
        "</body>", "</html>", ""])


def report_files(c: Certified) -> list[str]:
    """report.md and the counterexamples it links, each of which the report names as a file beside it."""
    traces = [f.trace_file for f in [*c.report.faults, *(f for verdict in c.report.policies for f in verdict.failures)] if f.trace_file]
    for name in traces:
        if name in (".", "..") or "/" in name or "\\" in name:
            raise KvspecError(f"{c.folder / 'report.json'}: trace_file {name!r} is not the name of a file beside the report")
    return ["report.md", *dict.fromkeys(traces)]


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise KvspecError(f"{path}: cannot read it ({error.strerror or type(error).__name__}): the page links it") from None


def files(certifications: list[Certified]) -> dict[str, bytes]:
    """The page's folder, each file by its path in it: the copies of the reports, then index.html, which links them."""
    copies = {f"{c.folder.name}/{name}": read_bytes(c.folder / name) for c in certifications for name in report_files(c)}
    return copies | {"index.html": page(rows(certifications)).encode("utf-8", "backslashreplace")}
