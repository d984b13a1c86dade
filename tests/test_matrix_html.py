"""`kvspec spec matrix --html FOLDER` (spec/adapter-protocol.md, PROTO-33): the matrix as a static
page, opened in a real headless Chromium (Debian's package) to check what a person sees: the rows'
text as rendered, a verdict's colour, each report link, an implementation's `<script>` shown as text,
nothing fetched from the network. Chromium is driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`), with the standard library alone: no WebDriver, no new dependency.

Without `chromium` on PATH the browser's tests skip, unless KVSPEC_REQUIRE_CHROMIUM is set (.ci/run
sets it, and installs Chromium where it is missing): then they fail. The page's bad input needs no
browser and always runs."""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes, urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
CERTIFICATIONS = ROOT / "docs" / "certifications"
KVSPEC = Path(sys.executable).with_name("kvspec")
CHROMIUM = shutil.which("chromium")
REQUIRED = bool(os.environ.get("KVSPEC_REQUIRE_CHROMIUM"))
# The flags that start Chromium here as root, with nothing of its own reaching the network.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--remote-debugging-pipe")
WIDTH, HEIGHT = 1600, 1000
SCRIPT_NAME = '<script>document.title = "injected"</script><b>bold</b> cache'
CONFORMING = "a conforming #1"  # a space and a `#`, which end or break a link unless encoded


def spec_matrix(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KVSPEC), "spec", "matrix", *args], cwd=checkout, capture_output=True, text=True, timeout=60)


def a_checkout(tmp: Path, *folders: str) -> Path:
    """What spec matrix reads, apart: spec/dialects.md and a copy of docs/certifications (of ``folders`` alone, given)."""
    checkout = tmp / "checkout"
    (checkout / "spec").mkdir(parents=True)
    shutil.copy(ROOT / "spec" / "dialects.md", checkout / "spec")
    left_out = [p.name for p in CERTIFICATIONS.iterdir() if p.name not in folders] if folders else []
    shutil.copytree(CERTIFICATIONS, checkout / "docs" / "certifications",
                    ignore=lambda folder, names: left_out if Path(folder) == CERTIFICATIONS else [])
    return checkout


def certification(checkout: Path, folder: str, change: Any) -> None:
    """A certification of its own: vllm's report, ``change``d, its report.md and README, no dialect."""
    target = checkout / "docs" / "certifications" / folder
    target.mkdir()
    report = json.loads((CERTIFICATIONS / "vllm" / "report.json").read_text())
    change(report)
    (target / "report.json").write_text(json.dumps(report))
    verdicts = json.loads((CERTIFICATIONS / "vllm" / "fixtures.json").read_text())
    (target / "fixtures.json").write_text(json.dumps([v | {"verdict": "pass" if report["conforms"] else v["verdict"]} for v in verdicts]))
    (target / "report.md").write_text(f"# the report of {folder}\n")
    (target / "README.md").write_text(f"# {folder}\n")


def conforming(report: dict[str, Any]) -> None:
    report["implementation"]["name"] = SCRIPT_NAME
    report["conforms"] = True
    report["policies"][0].update(conforms=True, failures=[], found=None, behaviour="conforms")


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- the browser


class Chromium:
    """Headless Chromium over the DevTools protocol on a pipe: JSON messages ended by NUL, read by
    Chromium from its fd 3 and written to its fd 4. One page, attached to its session."""

    def __init__(self, binary: str, profile: Path) -> None:
        self.commands, to_chromium = os.pipe()
        from_chromium, self.replies = os.pipe()

        def on_fds_3_and_4() -> None:
            """In the child: the pipes' ends as its fds 3 and 4, from copies (an end may itself be 3 or 4), inheritable."""
            mine = os.dup(self.commands), os.dup(self.replies)
            for fd, end in zip((3, 4), mine):
                os.dup2(end, fd)
                os.set_inheritable(fd, True)

        # close_fds=False: closing the child's other fds would close 3 and 4; every other fd of this process is not inheritable (PEP 446)
        self.process = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=on_fds_3_and_4, close_fds=False,
                                        start_new_session=True)
        os.close(self.commands)
        os.close(self.replies)
        self.send, self.receive = to_chromium, from_chromium
        self.buffer, self.events, self.next_id, self.session = b"", [], 0, None
        try:
            # its first answer waits for Chromium to start: 10 s was too little on a machine half as fast as usual (2026-12-03)
            target = self.call("Target.createTarget", deadline=60, url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        except BaseException:
            self.close()
            raise

    def call(self, method: str, deadline: float = 10, **params: Any) -> Any:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params} | ({"sessionId": self.session} if self.session else {})
        try:
            os.write(self.send, json.dumps(message).encode() + b"\0")
        except BrokenPipeError:
            raise AssertionError(f"Chromium ended before {method} (exit status {self.process.wait(10)})") from None
        while True:
            reply = self.message(deadline)
            if reply.get("id") == self.next_id:
                assert "error" not in reply, (method, reply["error"])
                return reply["result"]
            self.events.append(reply)

    def message(self, deadline: float) -> dict[str, Any]:
        end = time.monotonic() + deadline
        while b"\0" not in self.buffer:
            ready, _, _ = select.select([self.receive], [], [], max(0.0, end - time.monotonic()))
            chunk = os.read(self.receive, 1 << 20) if ready else b""
            assert chunk, f"Chromium {'ended' if ready else f'said nothing for {deadline} s'}"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(line)

    def loaded(self, method: str, **params: Any) -> None:
        """``method`` called and the document it loads loaded (its load event fired), what it requested recorded."""
        self.events.clear()
        self.call(method, **params)
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self.message(10))

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"]["value"]

    def requested(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (AssertionError, OSError):  # it may end before it replies, or have ended
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()
        os.close(self.send)
        os.close(self.receive)


# --------------------------------------------------------------------------- the page, as Chromium shows it

VERSION = '1.0 <img src="x" onerror="document.title = 1">'  # markup would fetch x: the requests show it
UNDECODABLE = b"caf\xe9"  # a folder named in Latin-1: bytes the UTF-8 locale cannot decode

# What a person sees of the page: each table's cells as rendered (innerText), each verdict cell's
# colour as painted (its computed background, and whether the cell is what is drawn at its centre).
SEEN = """(() => {
  const cells = row => [...row.cells].map(cell => cell.innerText);
  const painted = cell => {
    cell.scrollIntoView({block: "center"});
    const box = cell.getBoundingClientRect();
    const drawn = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
    return {colour: getComputedStyle(cell).backgroundColor, drawn: drawn === cell};
  };
  const rows = [...document.querySelectorAll("tbody tr")];
  const verdicts = rows.map(row => [painted(row.cells[3]), painted(row.cells[5])]);
  window.scrollTo(0, 0);
  return {title: document.title, scripts: document.scripts.length, images: document.images.length,
          bold: document.querySelectorAll("b").length, headers: [...document.querySelectorAll("thead th")].map(th => th.innerText),
          rows: rows.map(cells), verdicts, links: [...document.querySelectorAll("a")].map(a => a.href)};
})()"""


def undecodable_certification(checkout: Path) -> None:
    """A certification in a folder the locale cannot decode the name of (vllm's, under another name)."""
    folder = os.fsencode(checkout / "docs" / "certifications") + b"/" + UNDECODABLE
    os.mkdir(folder)
    for name in ("report.md", "fixtures.json", "README.md", "lru-counterexample-1.jsonl"):
        shutil.copy(CERTIFICATIONS / "vllm" / name, os.fsdecode(folder + b"/" + name.encode()))
    report = json.loads((CERTIFICATIONS / "vllm" / "report.json").read_text())
    report["implementation"]["name"] = "vLLM's report, in a folder named in Latin-1"
    Path(os.fsdecode(folder + b"/report.json")).write_text(json.dumps(report))


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A checkout whose certifications are the committed ones, a conforming one named with markup and
    a space and a `#` in its folder's name, and one in a folder named in Latin-1; its page, written."""
    checkout = a_checkout(tmp_path_factory.mktemp("matrix"))

    def conforming_with_markup(report: dict[str, Any]) -> None:
        conforming(report)
        report["implementation"]["version"] = VERSION

    certification(checkout, CONFORMING, conforming_with_markup)
    undecodable_certification(checkout)
    site = checkout.parent / "site"
    run = spec_matrix(checkout, "docs/certifications", "--html", str(site))
    assert run.returncode == 0 and run.stderr == "", run.stderr
    return checkout, site


@pytest.fixture(scope="module")
def seen(written: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The page in headless Chromium: what SEEN reads, the URLs the page made Chromium request, a
    screenshot of the whole page (also kept in /tmp/matrix-screenshot.png), and the text a click on
    the conforming row's report link shows."""
    if CHROMIUM is None:
        if REQUIRED:
            pytest.fail("KVSPEC_REQUIRE_CHROMIUM is set and `chromium` is not on PATH: install it (.ci/run does: apt-get install chromium)")
        pytest.skip("`chromium` is not on PATH (Debian: apt-get install chromium)")
    _, site = written
    browser = Chromium(CHROMIUM, tmp_path_factory.mktemp("profile"))
    try:
        browser.call("Network.enable")
        browser.call("Page.enable")
        browser.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False)
        browser.loaded("Page.navigate", url=(site / "index.html").as_uri())
        page = browser.evaluate(SEEN) | {"requested": browser.requested()}
        size = browser.call("Page.getLayoutMetrics")["cssContentSize"]
        whole = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=whole)["data"])
        page["screenshot"] = tmp_path_factory.mktemp("screenshot") / "matrix.png"
        page["screenshot"].write_bytes(shot)
        shutil.copy(page["screenshot"], "/tmp/matrix-screenshot.png")  # for a person to look at
        page["size"] = (round(size["width"]), round(size["height"]))
        browser.loaded("Runtime.evaluate", expression="document.querySelector('tbody a').click()")
        page["clicked"] = browser.evaluate("[location.href, document.body.innerText]")
        yield page
    finally:
        browser.close()


def markdown_rows(readme: Path) -> tuple[list[str], list[list[str]]]:
    """README.md's matrix: its headers, and each row's cells, a link as its text."""
    table = [line for line in readme.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    cells = [[re.sub(r"^\[(.*)\]\(.*\)$", r"\1", cell) for cell in line[2:-2].split(" | ")] for line in table]
    return cells[0], cells[1:]


def test_PROTO_33_chromium_shows_every_row_of_the_matrix_as_readme_md_gives_it(written: tuple[Path, Path],
                                                                                seen: dict[str, Any]) -> None:
    """The rows as rendered are README.md's, cell for cell (one source of rows); and, read from the
    reports' JSON alone, each certification's policies in its folder's order with its name and version."""
    checkout, _ = written
    headers, rows = markdown_rows(checkout / "docs" / "certifications" / "README.md")
    assert seen["headers"] == headers and seen["rows"] == rows
    reports = [json.loads(path.read_text()) for path in sorted((checkout / "docs" / "certifications").glob("*/report.json"))]
    expected = [[r["implementation"]["name"], r["implementation"]["version"], p["policy"]] for r in reports for p in r["policies"]]
    assert [row[:3] for row in seen["rows"]] == expected
    assert len(reports) == len(list(CERTIFICATIONS.glob("*/report.json"))) + 2  # the committed ones, and the two of the fixture


def test_PROTO_33_a_verdict_is_in_words_and_in_its_cells_colour(seen: dict[str, Any]) -> None:
    """The conforming row's canonical verdict, a non-conforming one's and a verdict against a dialect
    that conforms: each cell says it, and each is drawn in a colour of its own."""
    rows, verdicts = seen["rows"], seen["verdicts"]
    mine = next(i for i, row in enumerate(rows) if row[0] == SCRIPT_NAME)
    failing = next(i for i, row in enumerate(rows) if row[3].startswith("does not conform") and row[5].startswith("conforms to "))
    assert rows[mine][3] == "conforms" and rows[mine][5] == "—"
    canonical, failed, dialect = verdicts[mine][0], verdicts[failing][0], verdicts[failing][1]
    assert canonical["drawn"] and failed["drawn"] and dialect["drawn"]
    assert len({canonical["colour"], failed["colour"], dialect["colour"]}) == 3, (canonical, failed, dialect)
    assert verdicts[mine][1]["colour"] not in {canonical["colour"], failed["colour"], dialect["colour"]}  # no verdict, no verdict's colour


def test_PROTO_31_an_implementations_markup_shows_as_text(seen: dict[str, Any]) -> None:
    """A name that holds a script and bold, a version that holds an image: each is shown as written,
    and none of it runs or is parsed (the title the script would set, the image it would fetch)."""
    mine = next(row for row in seen["rows"] if row[0] == SCRIPT_NAME)
    assert mine[1] == VERSION
    assert (seen["title"], seen["scripts"], seen["images"], seen["bold"]) == ("kvspec certifications", 0, 0, 0)


def test_PROTO_33_each_report_link_opens_the_copy_of_its_report_beside_the_page(written: tuple[Path, Path],
                                                                                 seen: dict[str, Any]) -> None:
    """Every link is to a file in the page's folder, the report copied byte for byte (the `#` and the
    space of a folder's name and a name in Latin-1 included), and the counterexamples the report links
    are beside it; a click on one shows the report."""
    checkout, site = written
    assert len(seen["links"]) == len(seen["rows"])
    for link in seen["links"]:
        url = urlparse(link)
        copy = Path(os.fsdecode(unquote_to_bytes(url.path)))
        assert url.scheme == "file" and copy.parent.parent == site and copy.name == "report.md", link
        source = checkout / "docs" / "certifications" / copy.parent.name / "report.md"
        assert copy.read_bytes() == source.read_bytes(), link
        for trace in re.findall(r"\]\(([^)]+\.jsonl?)\)", source.read_text(encoding="utf-8")):
            assert (copy.parent / trace).read_bytes() == (source.parent / trace).read_bytes(), trace
    assert any(copy.endswith("caf%E9/report.md") for copy in seen["links"])
    href, text = seen["clicked"]
    assert href == seen["links"][0] and text.startswith(f"# the report of {CONFORMING}")


def test_PROTO_33_the_page_fetches_nothing_from_outside_its_folder(written: tuple[Path, Path], seen: dict[str, Any]) -> None:
    _, site = written
    assert seen["requested"] == [(site / "index.html").as_uri()]


def test_PROTO_33_the_screenshot_is_the_whole_page(seen: dict[str, Any]) -> None:
    """A PNG as large as the page's content (its header's width and height), taller than the window: for a person to look at."""
    png = seen["screenshot"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == seen["size"]
    assert seen["size"][1] > HEIGHT


# --------------------------------------------------------------------------- bad input: no browser needed


def refused(checkout: Path, *args: str) -> str:
    """spec matrix with ``args`` refused: exit 1, one line on stderr (returned), nothing written."""
    before = snapshot(checkout.parent)
    run = spec_matrix(checkout, "docs/certifications", *args)
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and run.stdout == "", run.stderr
    assert snapshot(checkout.parent) == before
    return run.stderr


def test_PROTO_33_an_html_folder_that_is_a_file_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    checkout = a_checkout(tmp_path, "vllm")
    (tmp_path / "site").write_text("a file\n")
    assert refused(checkout, "--html", str(tmp_path / "site")) == f"kvspec: error: --html {tmp_path / 'site'}: is a file, not a folder\n"
    assert refused(checkout, "--html", str(tmp_path / "site" / "page")).endswith("is a file, not a folder\n")


def test_PROTO_33_an_html_folder_that_cannot_be_made_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    """/proc refuses a folder even to root, whom permission bits do not stop."""
    line = refused(a_checkout(tmp_path, "vllm"), "--html", "/proc/kvspec-page")
    assert line.startswith("kvspec: error: --html /proc/kvspec-page: cannot be made: ")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder")
def test_PROTO_33_an_html_folder_that_cannot_be_written_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    checkout = a_checkout(tmp_path, "vllm")
    (tmp_path / "site").mkdir(mode=0o555)
    assert refused(checkout, "--html", str(tmp_path / "site")) == f"kvspec: error: --html {tmp_path / 'site'}: permission denied\n"


def test_PROTO_33_a_report_naming_a_counterexample_outside_its_folder_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    checkout = a_checkout(tmp_path, "vllm")
    report = checkout / "docs" / "certifications" / "vllm" / "report.json"
    report.write_text(report.read_text().replace('"trace_file": "lru-counterexample-1.jsonl"', '"trace_file": "../../../../etc/passwd"'))
    line = refused(checkout, "--html", str(tmp_path / "site"))
    assert line == ("kvspec: error: docs/certifications/vllm/report.json: trace_file '../../../../etc/passwd' is not the name of a file "
                    "beside the report\n")


@pytest.mark.parametrize("trace", ["..", ".", "sub/trace.jsonl", "sub\\trace.jsonl"])
def test_PROTO_33_a_counterexample_is_a_file_beside_its_report(tmp_path: Path, trace: str) -> None:
    from kvspec.conformance.certification.verdict import matrix
    from kvspec.reference import KvspecError

    folder = a_checkout(tmp_path, "vllm") / "docs" / "certifications" / "vllm"
    assert matrix.report_files(matrix.certified(folder)) == ["report.md", "lru-counterexample-1.jsonl"]
    report = folder / "report.json"
    report.write_text(report.read_text().replace('"trace_file": "lru-counterexample-1.jsonl"', f'"trace_file": {json.dumps(trace)}'))
    with pytest.raises(KvspecError, match=re.escape(f"trace_file {trace!r} is not the name of a file beside the report")):
        matrix.report_files(matrix.certified(folder))


def test_PROTO_33_a_report_the_page_would_link_and_cannot_read_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    from kvspec.conformance.certification.verdict import matrix
    from kvspec.reference import KvspecError

    checkout = a_checkout(tmp_path, "vllm")
    folder = checkout / "docs" / "certifications" / "vllm"
    (folder / "lru-counterexample-1.jsonl").unlink()
    unread = f"{folder}/lru-counterexample-1.jsonl: cannot read it (No such file or directory): the page links it"
    with pytest.raises(KvspecError, match=re.escape(unread)):
        matrix.page_files([matrix.certified(folder)])
    (folder / "report.md").unlink()
    line = refused(checkout, "--html", str(tmp_path / "site"))
    assert line == "kvspec: error: docs/certifications/vllm/report.md: cannot read it (No such file or directory): the page links it\n"


def test_PROTO_33_a_report_without_its_implementations_name_or_version_is_one_line(tmp_path: Path) -> None:
    """The matrix names each implementation and its version, as its start reply gave them: a report
    without one is not a certification the matrix can show (it was a KeyError's traceback)."""
    from kvspec.conformance.certification.verdict import matrix
    from kvspec.reference import KvspecError

    checkout = a_checkout(tmp_path, "vllm")
    certification(checkout, "versionless", lambda report: report["implementation"].pop("version"))
    with pytest.raises(KvspecError, match="versionless/report.json: implementation has no version"):
        matrix.certified(checkout / "docs" / "certifications" / "versionless")
    shutil.rmtree(checkout / "docs" / "certifications" / "versionless")
    certification(checkout, "nameless", lambda report: report["implementation"].pop("name"))
    assert refused(checkout) == ("kvspec: error: docs/certifications/nameless/report.json: implementation has no name: the matrix names "
                                 "each implementation and its version, as its start reply gave them (PROTO-5)\n")


def test_PROTO_33_a_folder_named_in_bytes_the_locale_cannot_decode_is_written_as_its_escape(tmp_path: Path) -> None:
    """Its name reaches README.md as the escape stderr would show (it was a UnicodeEncodeError's traceback)."""
    checkout = a_checkout(tmp_path, "vllm")
    undecodable_certification(checkout)
    run = spec_matrix(checkout, "docs/certifications")
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert "| [vLLM's report, in a folder named in Latin-1](caf\\udce9/README.md) | 0.33.0 | lru |" in (
        checkout / "docs" / "certifications" / "README.md").read_text(encoding="utf-8")
