"""The bad-input corpus (issue 12): every subcommand, run end to end through the installed
`kvspec` command, fed bad traces (encodings, framing, types, ranges, gzip damage, sizes), bad
arguments, bad output targets, broken fixture corpora, bad hunts, a bad environment, and
interrupted by SIGINT and SIGTERM.

Each case runs in a temporary folder of its own, as the current directory, in a session of its
own, and asserts the rules of docs/cli.md ("Exit status" and the `kvspec replay` bullets):

- the exit status (0 done; 1 bad input or a failure to run; 3 a finding; 130 and 143 after SIGINT
  and SIGTERM);
- stderr: exactly one line for 1, 130 and 143 (`kvspec: error: ...`, argparse's
  `kvspec SUBCOMMAND: error: argument --x: ... (kvspec SUBCOMMAND --help shows the usage)`, or
  `kvspec: interrupted`), matching the case's pattern (the file:line:field and the clause, the
  option, or the clause); nothing for 0; stdout empty for 1 (no output, not even part of one);
- the folder holds exactly the files it started with, unchanged: no output, no hidden
  temporary file (`.NAME.XXXX`), no input damaged (a fake checkout's conformance/*.json included);
- no process is left: none in the case's session, and none carrying the case's marker in its
  environment or its folder in its command line (an adapter runs in a session of its own).

Some cases fail until kvspec's bad-input fixes land; their failure says what kvspec did.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

KVSPEC = Path(sys.executable).with_name("kvspec")  # CI installs kvspec into the venv running pytest
PYTHON = sys.executable
ROOT_REASON = "permission bits are not enforced here (root, or CAP_DAC_OVERRIDE), so an unreadable or unwritable path is neither"
INT64_MAX = 2**63 - 1
MARKER = "KVSPEC_BAD_INPUT_CASE"


# --------------------------------------------------------------------------- the case table


@dataclass(frozen=True)
class Folder:
    """A folder to create in the case's folder (with ``mode`` applied after the snapshot)."""

    mode: int | None = None


@dataclass(frozen=True)
class Moded:
    """A file whose mode is set after the snapshot (an unreadable or read-only input)."""

    data: bytes
    mode: int


Content = bytes | Folder | Moded


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]  # after `kvspec`; {tmp} is the case's folder, {python} the interpreter
    status: int | tuple[int, ...]
    stderr: str = ""  # a regex the single stderr line must match in full (for a status other than 0)
    files: Mapping[str, Content] = field(default_factory=dict)
    env: Mapping[str, str | None] = field(default_factory=dict)  # None unsets
    stdin: bytes | None = None
    stdout_to: str | None = None  # a path stdout is opened on (/dev/full) instead of a pipe
    stdout: str | None = None  # a regex stdout must contain (for findings)
    stdout_check: Callable[[str], None] | None = None
    stderr_lines: int | None = None  # default: 0 for status 0, else 1
    creates: tuple[str, ...] = ()  # files a successful case writes
    timeout: float = 60.0
    memory: int | None = None  # an address-space limit, for cases that could grow without bound
    needs_permissions: bool = False  # an unreadable or unwritable path: skipped where permission bits are not enforced


def usage(sub: str, option: str, message: str = ".+") -> str:
    """argparse's refusal, in kvspec's one-line form."""
    return rf"kvspec {sub}: error: argument {option}: {message} \(kvspec {sub} --help shows the usage\)"


def required(sub: str, what: str) -> str:
    return rf"kvspec {sub}: error: the following arguments are required: {what} \(kvspec {sub} --help shows the usage\)"


def unrecognized(sub: str, what: str) -> str:
    """argparse reports an unknown argument from the top-level parser or the subcommand's."""
    return rf"kvspec(?: {sub})?: error: unrecognized arguments: {what} \(kvspec(?: {sub})? --help shows the usage\)"


def error(message: str) -> str:
    return rf"kvspec: error: {message}"


NO_POSITION = r"(?!.*\bline \d+,? column \d+)(?!.*\(char \d+\))"  # one line number only: PATH:N, never `at line 1 column K`


def trace_error(line: int | str, field_re: str, clause: str = "REPLAY-TRACE-1", message: str = ".+", name: str = "t.jsonl",
                name_re: str | None = None) -> str:
    """`kvspec: error: PATH:LINE: field FIELD: CLAUSE: message` (REPLAY-TRACE-7)."""
    return rf"kvspec: error: {name_re or re.escape(name)}:{line}: field {field_re}: {clause}: {NO_POSITION}{message}"


LINE = r"\(line\)"
FILE = r"\((?:file|line)\)"
ANY_FIELD = r"\S+"
INTERRUPTED = "kvspec: interrupted"


# ----------------------------------------------------------------------------- trace builders


def raw(ts: str = "0", il: str = "1000", ol: str = "1", ids: str = "[1, 2]", extra: str = "") -> bytes:
    """One trace line with each field's JSON token as given."""
    return f'{{"timestamp": {ts}, "input_length": {il}, "output_length": {ol}, "hash_ids": {ids}{extra}}}\n'.encode()


OK = raw()  # 1000 tokens in two blocks of 512
OK2 = raw(ids="[1, 3]")


def without(name: str) -> bytes:
    record = {"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [1, 2]}
    del record[name]
    return json.dumps(record).encode() + b"\n"


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


GZ = gz(OK + OK2 + OK)


def flip(data: bytes, start: int, stop: int) -> bytes:
    return data[:start] + bytes(b ^ 0xFF for b in data[start:stop]) + data[stop:]


LONG = "x" * 300  # a name past the 255 bytes of most file systems
BIG_LINE = 17 * 2**20  # past the bound of about 16 MiB a line
MEMORY = 2**30  # an address space of 1 GiB: a line that is never bounded fails loudly rather than filling the machine


def replay(name: str = "t.jsonl", *extra: str) -> tuple[str, ...]:
    return ("replay", name, "--capacity", "16", *extra)


def tcase(id: str, content: bytes, line: int | str, field_re: str, clause: str = "REPLAY-TRACE-1", message: str = ".+",
**kw: object) -> Case:
    """A plain trace at t.jsonl, replayed; refused at ``line`` for ``field_re`` by ``clause``."""
    return Case(id, replay(), 1, trace_error(line, field_re, clause, message), files={"t.jsonl": content}, **kw)  # type: ignore[arg-type]


def accepted(id: str, content: bytes, *extra: str, **kw: object) -> Case:
    return Case(id, replay("t.jsonl", *extra), 0, files={"t.jsonl": content}, **kw)  # type: ignore[arg-type]


def requests_are(count: int) -> Callable[[str], None]:
    """stdout is a result (or a sweep of results) whose every `requests` is ``count``."""

    def check(stdout: str) -> None:
        found: list[int] = []

        def walk(value: object) -> None:
            if isinstance(value, dict):
                if "requests" in value:
                    found.append(value["requests"])
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        walk(json.loads(stdout))
        assert found and all(n == count for n in found), f"requests replayed: {found}, expected {count} each"

    return check


# --------------------------------------------------------------------------------- traces

# REPLAY-TRACE-1: UTF-16 and UTF-32, with and without a byte order mark (written here, not by the
# codecs' native order), each named, with the command that converts it
FOREIGN = [
    ("utf16-le-with-bom", b"\xff\xfe", "utf-16-le", "UTF-16 (little-endian, with a byte order mark)", "UTF-16"),
    ("utf16-be-with-bom", b"\xfe\xff", "utf-16-be", "UTF-16 (big-endian, with a byte order mark)", "UTF-16"),
    ("utf16-le-without-bom", b"", "utf-16-le", "UTF-16 (little-endian)", "UTF-16LE"),
    ("utf16-be-without-bom", b"", "utf-16-be", "UTF-16 (big-endian)", "UTF-16BE"),
    ("utf32-le-with-bom", b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32 (little-endian, with a byte order mark)", "UTF-32"),
    ("utf32-be-with-bom", b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32 (big-endian, with a byte order mark)", "UTF-32"),
    ("utf32-le-without-bom", b"", "utf-32-le", "UTF-32 (little-endian)", "UTF-32LE"),
    ("utf32-be-without-bom", b"", "utf-32-be", "UTF-32 (big-endian)", "UTF-32BE"),
]


def foreign(label: str, content: bytes, named: str, iconv: str, before: str = "") -> Case:
    """A trace in UTF-16 or UTF-32, refused at line 1 naming its encoding, with the conversion to run."""
    converted = f"{before}iconv -f {iconv} -t UTF-8{'' if before else ' t.jsonl'} > t.utf8.jsonl"
    return tcase(f"trace-{label}", content, 1, FILE, "REPLAY-TRACE-1",
                 re.escape(f"the trace is in {named}, not UTF-8: convert it first ({converted})"))


TRACE_CASES: list[Case] = [
    # encodings (REPLAY-TRACE-1: UTF-8 text)
    tcase("trace-latin1-byte-in-key", OK + raw(extra=', "caf\xe9": 1').decode().encode("latin-1"), 2, ANY_FIELD, r"REPLAY-TRACE-\d"),
    tcase("trace-latin1-lone-byte-line", OK + b"\xe9\n", 2, ANY_FIELD),
    tcase("trace-utf8-overlong-encoding", OK + raw(extra=', "\xc0\xaf": 1').replace(b"\xc3\x80\xc2\xaf", b"\xc0\xaf"), 2, ANY_FIELD,
          r"REPLAY-TRACE-\d"),
    *(foreign(label, mark + (OK + OK2).decode().encode(codec), named, iconv) for label, mark, codec, named, iconv in FOREIGN),
    foreign("utf16-gzip", gz(b"\xff\xfe" + (OK + OK2).decode().encode("utf-16-le")), "UTF-16 (little-endian, with a byte order mark)",
            "UTF-16", "gzip -dc t.jsonl | "),
    Case("trace-utf8-bom-accepted-or-refused-with-a-hint", replay(), (0, 1),
         trace_error(1, ANY_FIELD, r"REPLAY-TRACE-\d", r"(?i:.*(?:\bBOM\b|byte.order.mark).*)"),
         files={"t.jsonl": b"\xef\xbb\xbf" + OK + OK2}, stdout_check=requests_are(2)),
    tcase("trace-utf8-bom-on-line-2", OK + b"\xef\xbb\xbf" + OK2, 2, ANY_FIELD, r"REPLAY-TRACE-\d"),
    tcase("trace-nul-byte-line", OK + b"\x00\n", 2, ANY_FIELD),
    tcase("trace-lone-surrogate-escape", OK + raw(extra=', "\\ud800": 1'), 2, ANY_FIELD),
    tcase("trace-non-ascii-extra-field-named", OK + raw(extra=', "caf\u00e9": 1'), 2, "caf\u00e9"),
    accepted("trace-crlf-line-ends-accepted", (OK + OK2).replace(b"\n", b"\r\n")),
    # framing (REPLAY-TRACE-1: one JSON object a line)
    tcase("trace-blank-line", OK + b"\n" + OK2, 2, LINE),
    tcase("trace-whitespace-only-line", OK + b" \t  \n" + OK2, 2, LINE),
    tcase("trace-blank-line-at-end", OK + OK2 + b"\n", 3, LINE),
    accepted("trace-last-line-without-newline-accepted", OK + OK2[:-1]),
    tcase("trace-truncated-last-line", OK + OK2 + OK[:40], 3, LINE),
    tcase("trace-trailing-garbage", OK + OK2[:-1] + b" xyz\n", 2, LINE),
    tcase("trace-two-objects-on-one-line", OK + OK2[:-1] + OK, 2, LINE),
    tcase("trace-nan-literal-hash-id", OK + raw(ids="[1, NaN]"), 2, ANY_FIELD, r"REPLAY-TRACE-[12]"),
    tcase("trace-deeply-nested-array", OK + b"[" * 100_000 + b"]" * 100_000 + b"\n", 2, ANY_FIELD),
    tcase("trace-json-array-line", OK + b"[1, 2]\n", 2, LINE),
    tcase("trace-json-null-line", OK + b"null\n", 2, LINE),
    tcase("trace-empty-object", OK + b"{}\n", 2, r"\w+"),
    *(tcase(f"trace-missing-{name}", OK + without(name), 2, name) for name in ("timestamp", "input_length", "output_length", "hash_ids")),
    tcase("trace-extra-field", OK + raw(extra=', "extra": 1'), 2, "extra"),
    tcase("trace-duplicate-key-hash_ids", OK + raw(extra=', "hash_ids": [3, 4]'), 2, "hash_ids", r"REPLAY-TRACE-\d", r"(?i:.*duplicate.*)"),
    tcase("trace-duplicate-key-by-escape", OK + raw(extra=', "\\u0074imestamp": 0'), 2, "timestamp", r"REPLAY-TRACE-\d",
          r"(?i:.*duplicate.*)"),
]

# types and ranges, field by field (REPLAY-TRACE-2), each on line 3 after two good lines
BAD_VALUES = {
    "timestamp": {"float": "1.0", "string": '"0"', "null": "null", "negative": "-1"},
    "input_length": {"exponent": "1e3", "false": "false", "zero": "0", "2-pow-63": str(2**63)},
    "output_length": {"float": "1.5", "true": "true", "negative": "-1"},
}
ARG = {"timestamp": "ts", "input_length": "il", "output_length": "ol"}
for _name, _values in BAD_VALUES.items():
    for _label, _token in _values.items():
        TRACE_CASES.append(tcase(f"trace-{_name}-{_label}", OK + OK2 + raw(**{ARG[_name]: _token}), 3, _name, "REPLAY-TRACE-2"))
for _label, _token in {"float": "2.0", "string": '"2"', "null": "null", "2-pow-63": str(2**63),
                       "below-minus-2-pow-63": str(-(2**63) - 1)}.items():
    TRACE_CASES.append(tcase(f"trace-hash-id-{_label}", OK + OK2 + raw(ids=f"[1, {_token}]"), 3, r"hash_ids\[1\]", "REPLAY-TRACE-2"))
for _label, _token in {"null": "null", "string": '"1,2"', "empty": "[]"}.items():
    TRACE_CASES.append(tcase(f"trace-hash_ids-{_label}", OK + OK2 + raw(ids=_token), 3, "hash_ids", "REPLAY-TRACE-2"))

TRACE_CASES += [
    accepted("trace-int64-bounds-accepted", raw(ts=str(INT64_MAX), ol="0", ids=f"[{-(2**63)}, {INT64_MAX}]") + raw(ids="[-0, 0]")),
    # REPLAY-TRACE-3: input_length fills the blocks
    tcase("trace-input_length-below-its-blocks", OK + raw(il="512"), 2, "input_length", "REPLAY-TRACE-3"),
    tcase("trace-input_length-beyond-its-blocks", OK + raw(il="1025"), 2, "input_length", "REPLAY-TRACE-3"),
    Case("trace-block-size-disagrees", replay("t.jsonl", "--block-size", "256"), 1, trace_error(1, "input_length", "REPLAY-TRACE-3"),
         files={"t.jsonl": OK}),
    # REPLAY-RESULT-3: the prompt tokens sum past 2^63 - 1
    Case("trace-prompt-tokens-sum-past-int64", replay("t.jsonl", "--block-size", str(2**62)), 1,
         trace_error(2, "input_length", "REPLAY-RESULT-3"), files={"t.jsonl": raw(il=str(2**62), ids="[1]") * 2}),
    accepted("trace-50000-hash-ids-accepted", raw(il=str(50_000 * 512), ids=json.dumps(list(range(50_000))))),
    # gzip (REPLAY-TRACE-6): by content, damage refused at the line where reading failed
    accepted("gzip-accepted", GZ, stdout_check=requests_are(3)),
    Case("gzip-named-gz-but-plain-accepted", replay("t.jsonl.gz"), 0, files={"t.jsonl.gz": OK + OK2}, stdout_check=requests_are(2)),
    accepted("gzip-concatenated-members-accepted", GZ + gz(OK2), stdout_check=requests_are(4)),
    accepted("gzip-of-nothing-accepted", gz(b""), stdout_check=requests_are(0)),
    tcase("gzip-truncated", GZ[:-10], r"\d+", FILE, "REPLAY-TRACE-6"),
    tcase("gzip-corrupt-deflate", flip(GZ, 10, 20), r"\d+", FILE, "REPLAY-TRACE-6"),
    tcase("gzip-bad-crc", GZ[:-8] + b"\0\0\0\0" + GZ[-4:], r"\d+", FILE, "REPLAY-TRACE-6"),
    tcase("gzip-trailing-garbage", GZ + b"garbage!", r"\d+", FILE, "REPLAY-TRACE-6"),
    tcase("gzip-bad-line-numbered-after-decompression", gz(OK + OK2 + raw(ts="-1")), 3, "timestamp", "REPLAY-TRACE-2"),
    tcase("gzip-of-a-line-past-the-bound", gz(b"a" * BIG_LINE + b"\n"), 1, ANY_FIELD, r"REPLAY-TRACE-\d",
          r".*line longer than [\d,_]+ bytes.*",
          memory=MEMORY),
    # sizes
    accepted("size-empty-file-accepted", b"", stdout_check=requests_are(0)),
    Case("size-dev-null-accepted", replay("/dev/null"), 0, stdout_check=requests_are(0)),
    tcase("size-line-past-the-bound", OK + b"a" * BIG_LINE + b"\n", 2, ANY_FIELD, r"REPLAY-TRACE-\d", r".*line longer than [\d,_]+ bytes.*",
          memory=MEMORY),
    tcase("size-valid-line-padded-past-the-bound", OK + OK2[:-2] + b" " * BIG_LINE + b"}\n", 2, ANY_FIELD, r"REPLAY-TRACE-\d",
          r".*line longer than [\d,_]+ bytes.*", memory=MEMORY),
    Case("size-dev-zero-ends-promptly", replay("/dev/zero"), 1,
         trace_error(1, ANY_FIELD, r"REPLAY-TRACE-\d", r".*line longer than [\d,_]+ bytes.*", name="/dev/zero"), timeout=30, memory=MEMORY),
    # the trace path
    Case("path-trace-is-a-folder", replay("sub"), 1, error(r"sub\b.*(?i:is a (?:folder|directory)).*"), files={"sub": Folder()}),
    Case("path-trace-missing", replay("absent.jsonl"), 1, error(r"absent\.jsonl: .+")),
    Case("path-trace-unreadable", replay(), 1, error(r"t\.jsonl\b.*(?i:permission denied).*"), files={"t.jsonl": Moded(OK, 0o000)},
         needs_permissions=True),
    Case("path-trace-name-with-space-and-accent", replay("my trac\u00e9.jsonl"), 1,
         trace_error(2, "timestamp", "REPLAY-TRACE-2", name="my trac\u00e9.jsonl"), files={"my trac\u00e9.jsonl": OK + raw(ts="-1")}),
    Case("stdin-dash-accepted", replay("-"), 0, stdin=OK + OK2, stdout_check=requests_are(2)),
    Case("stdin-dash-gzip-accepted", replay("-"), 0, stdin=GZ, stdout_check=requests_are(3)),
    Case("stdin-dash-bad-line", replay("-"), 1, trace_error(2, "timestamp", "REPLAY-TRACE-2", name_re=r"(?:-|<stdin>|stdin)"),
         stdin=OK + raw(ts="1.5")),
    Case("stdin-dash-sweep-reads-it-whole-or-refuses", ("sweep", "-", "--policy", "lru", "--capacity", "16", "--capacity", "32"), (0, 1),
         error(r"(?:.*\W)?-(?:\W.*)?"), stdin=OK + OK2, stdout_check=requests_are(2)),
    # every command that reads a trace refuses a bad one alike
    Case("sweep-bad-trace-line", ("sweep", "t.jsonl", "--capacity", "16"), 1, trace_error(2, "hash_ids", "REPLAY-TRACE-2"),
         files={"t.jsonl": OK + raw(ids="[]")}),
    Case("compare-bad-trace-line", ("compare", "t.jsonl", "--capacity-bytes", "1GiB"), 1, trace_error(2, "extra", "REPLAY-TRACE-1"),
         files={"t.jsonl": OK + raw(extra=', "extra": 0')}),
    Case("replay-adapter-bad-trace-is-bad-input", replay("t.jsonl", "--adapter", "reference"), 1,
         trace_error(2, "input_length", "REPLAY-TRACE-3"),
         files={"t.jsonl": OK + raw(il="1")}),
]

# -------------------------------------------------------------------------------- arguments

TINY = {"t.jsonl": OK + OK2}
ARGUMENT_CASES: list[Case] = [
    Case("args-no-command", (), 1, r"kvspec: error: the following arguments are required: command \(kvspec --help shows the usage\)"),
    Case("args-unknown-command", ("nosuch",), 1, r"kvspec: error: argument command: invalid choice: .+ \(kvspec --help shows the usage\)"),
    Case("args-version", ("--version",), 0, stdout=r"^kvspec \S+ \(spec \S+\)\n$"),
    Case("replay-capacity-not-a-number", replay("t.jsonl", "--capacity", "x"), 1, usage("replay", "--capacity", "REPLAY-CONF-1: .+"),
         files=TINY),
    Case("replay-capacity-without-value", ("replay", "t.jsonl", "--capacity"), 1, usage("replay", "--capacity", "expected one argument"),
         files=TINY),
    Case("replay-capacity-zero", replay("t.jsonl", "--capacity", "0"), 1, error("REPLAY-CONF-1: .+"), files=TINY),
    Case("replay-capacity-2-pow-63", replay("t.jsonl", "--capacity", str(2**63)), 1, error("REPLAY-CONF-1: .+"), files=TINY),
    Case("replay-capacity-too-small-for-s3fifo", replay("t.jsonl", "--capacity", "5"), 1, error("S3-CONF-5: .+"), files=TINY),
    Case("replay-block-size-float", replay("t.jsonl", "--block-size", "1.5"), 1, usage("replay", "--block-size", "REPLAY-CONF-2: .+"),
         files=TINY),
    Case("replay-block-size-2-pow-63", replay("t.jsonl", "--block-size", str(2**63)), 1, error("REPLAY-CONF-2: .+"), files=TINY),
    Case("replay-small-ratio-nan", replay("t.jsonl", "--small-ratio", "nan"), 1, error("S3-CONF-1: .+"), files=TINY),
    Case("replay-small-ratio-negative", replay("t.jsonl", "--small-ratio", "-0.1"), 1, error("S3-CONF-1: .+"), files=TINY),
    Case("replay-max-freq-negative", replay("t.jsonl", "--max-freq", "-1"), 1, error("S3-CONF-6: .+"), files=TINY),
    Case("replay-other-policys-knob-ignored", replay("t.jsonl", "--policy", "lru", "--small-ratio", "5"), 0, files=TINY),
    Case("replay-policy-unknown", replay("t.jsonl", "--policy", "arc"), 1, usage("replay", "--policy", "invalid choice: .+"), files=TINY),
    Case("replay-unknown-option", replay("t.jsonl", "--bogus"), 1, unrecognized("replay", "--bogus"), files=TINY),
    Case("replay-per-request-with-a-value", replay("t.jsonl", "--per-request=yes"), 1, usage("replay", "--per-request", ".+"), files=TINY),
    Case("replay-reply-timeout-zero", replay("t.jsonl", "--adapter", "reference", "--reply-timeout", "0"), 1,
         usage("replay", "--reply-timeout", "PROTO-15: .+"), files=TINY),
    Case("replay-adapter-empty", replay("t.jsonl", "--adapter", ""), 1, error("PROTO-18: .+"), files=TINY),
    Case("sweep-capacity-word", ("sweep", "t.jsonl", "--capacity", "16", "--capacity", "x"), 1, usage("sweep", "--capacity", "REPLAY-CONF-1: .+"),
         files=TINY),
    Case("sweep-capacity-empty", ("sweep", "t.jsonl", "--capacity", ""), 1, usage("sweep", "--capacity", "REPLAY-CONF-1: .+"),
         files=TINY),
    Case("sweep-capacity-zero", ("sweep", "t.jsonl", "--capacity", "16", "--capacity", "0"), 1, error("REPLAY-CONF-1: .+"), files=TINY),
    Case("sweep-capacity-2-pow-63", ("sweep", "t.jsonl", "--capacity", str(2**63)), 1, error("REPLAY-CONF-1: .+"), files=TINY),
    Case("compare-capacity-2-pow-63", ("compare", "--capacity-bytes", str(2**63)), 1, error(rf"--capacity-bytes {2**63}: .+")),
    Case("compare-capacity-units-overflow", ("compare", "--capacity-bytes", "8589934592TiB"), 1, error(r"--capacity-bytes \S+: .+")),
    Case("compare-capacity-unknown-unit", ("compare", "--capacity-bytes", "1XiB"), 1, usage("compare", "--capacity-bytes", "BEN-CMP-1: .+")),
    Case("compare-capacity-in-blocks-is-no-option", ("compare", "--capacity", "16"), 1, unrecognized("compare", "--capacity")),
    Case("compare-two-capacities-without-trace", ("compare", "--capacity-bytes", "1MiB", "--capacity-bytes", "2MiB"), 1,
         error("BEN-CMP-1: .+")),
    Case("compare-capacity-below-one-block", ("compare", "t.jsonl", "--capacity-bytes", "1"), 1, error(r"BEN-\w+-\d+: .+"),
         files=TINY),
    Case("compare-empty-trace-accepted", ("compare", "empty.jsonl"), 0, files={"empty.jsonl": b""}),
    Case("certify-adapter-missing", ("certify",), 1, required("certify", "--adapter")),
    Case("certify-adapter-unknown-kind", ("certify", "--adapter", "bogus"), 1, error("PROTO-18: .+")),
    Case("certify-adapter-cmd-empty", ("certify", "--adapter", "cmd:"), 1, error("PROTO-18: .+")),
    Case("certify-profile-unknown", ("certify", "--adapter", "reference", "--profile", "slow"), 1, usage("certify", "--profile",
         "invalid choice: .+")),
    Case("certify-policy-unknown", ("certify", "--adapter", "reference", "--policy", "arc"), 1, usage("certify", "--policy",
         "invalid choice: .+")),
    Case("certify-start-timeout-zero", ("certify", "--adapter", "reference", "--start-timeout", "0"), 1, usage("certify",
         "--start-timeout", "PROTO-15: .+")),
    Case("certify-reply-timeout-inf", ("certify", "--adapter", "reference", "--reply-timeout", "inf"), 1, usage("certify",
         "--reply-timeout", "PROTO-15: .+")),
    Case("certify-small-ratio-2", ("certify", "--adapter", "reference", "--small-ratio", "2"), 1, error("S3-CONF-1: .+")),
    Case("fixtures-no-action", ("fixtures",), 1, required("fixtures", "action")),
    Case("fixtures-verify-adapter-missing", ("fixtures", "verify"), 1, required("fixtures verify", "--adapter")),
    Case("fixtures-collect-no-report", ("fixtures", "collect"), 1, required("fixtures collect", "REPORT")),
    Case("hunt-unknown-search", ("hunt", "everything"), 1, usage("hunt", "search", "invalid choice: .+")),
    Case("hunt-pair-one-function", ("hunt", "diff", "--pair", "a.f"), 1, usage("hunt", "--pair", "expected 2 arguments")),
    Case("hunt-pair-without-diff", ("hunt", "check", "--pair", "a.f", "a.g"), 1, error("hunt: .*--pair.*")),
    # a dialect that has no dialect of the policy asked for: the policies that have one, as --policy options
    Case("replay-dialect-without-the-default-policy", replay("t.jsonl", "--dialect", "sglang"), 1,
         error("DIALECT-5: sglang has no s3fifo dialect; it has lru, fifo: give --policy lru or --policy fifo"), files=TINY),
    Case("replay-variation-of-other-policies", replay("t.jsonl", "--policy", "s3fifo", "--variation", "path-ids"), 1,
         error("DIALECT-2: path-ids is a variation point of lru and fifo, not of s3fifo: give --policy lru or --policy fifo"), files=TINY),
    Case("replay-variations-no-policy-has", replay("t.jsonl", "--variation", "path-ids,ghost-ignored"), 1,
         error("DIALECT-2: .+, and no policy has a dialect of path-ids, ghost-ignored"), files=TINY),
    Case("sweep-dialect-without-the-policy", ("sweep", "t.jsonl", "--capacity", "16", "--dialect", "vllm", "--policy", "fifo"), 1,
         error("DIALECT-5: vllm has no fifo dialect; it has lru: give --policy lru"), files=TINY),
    Case("certify-dialect-without-the-policy", ("certify", "--adapter", "reference", "--dialect", "vllm", "--policy", "fifo"), 1,
         error("DIALECT-5: vllm has no fifo dialect; it has lru: give --policy lru")),
    Case("generate-dialect-no-policy-has", ("fixtures", "generate", "g", "--dialect", "vllm", "--variation", "ghost-ignored"), 1,
         error("DIALECT-2: ghost-ignored is a variation point of s3fifo, not of lru, and no policy has a dialect of vllm, ghost-ignored")),
]

# ---------------------------------------------------------------------------- adapters

CRASH = b"import sys\nsys.stdin.readline()\nsys.exit(1)\n"  # reads the start request, exits before replying
IMPORT_RAISES = b'raise ImportError("libkvcache.so: cannot open shared object file")\n\ndef make():\n    pass\n'
NO_FACTORY = b"def other():\n    pass\n"
ADAPTER_CASES: list[Case] = [
    Case("certify-adapter-no-such-program", ("certify", "--adapter", "cmd:/nonexistent/impl", "--start-timeout", "2"), 1,
         error(r"PROTO-18: .*/nonexistent/impl.*")),
    Case("certify-adapter-no-such-module", ("certify", "--adapter", "python:nosuch:f", "--start-timeout", "2"), 1,
         error(r"PROTO-18: .*nosuch.*")),
    Case("certify-adapter-no-such-factory", ("certify", "--adapter", "python:impl.py:make", "--start-timeout", "2"), 1,
         error(r"PROTO-18: .*make.*"), files={"impl.py": NO_FACTORY}),
    Case("certify-adapter-crashes-at-start-is-a-finding", ("certify", "--adapter", "cmd:{python} crash.py", "--start-timeout", "2"), 3,
         files={"crash.py": CRASH}, stderr_lines=0, stdout=r"^\S.*DOES NOT CONFORM.*\n.*at its start"),
    Case("certify-adapter-import-raises-is-a-finding", ("certify", "--adapter", "python:impl.py:make", "--start-timeout", "2"), 3,
         files={"impl.py": IMPORT_RAISES}, stderr_lines=0, stdout=r"^\S.*DOES NOT CONFORM.*\n.*PROTO-14.*at its start.*importing impl.py raised ImportError"),  # served: its error reply to start
    Case("replay-adapter-no-such-program", replay("t.jsonl", "--adapter", "cmd:/nonexistent/impl", "--start-timeout", "2"), 1,
         error(r"PROTO-18: .*/nonexistent/impl.*"), files=TINY),
    Case("replay-adapter-crashes-at-start-is-a-finding", replay("t.jsonl", "--adapter", "cmd:{python} crash.py", "--start-timeout", "2",
                                                                "--output", "out.json"), 3,
         r"kvspec: .*does not conform, at its start: PROTO-\d+: .+", files={**TINY, "crash.py": CRASH}),
    Case("fixtures-verify-adapter-no-such-program", ("fixtures", "verify", "--adapter", "cmd:/nonexistent/impl", "--start-timeout", "2"), 1,
         error(r"PROTO-18: .*/nonexistent/impl.*")),
    Case("fixtures-verify-adapter-no-such-module", ("fixtures", "verify", "--adapter", "python:nosuch:f", "--start-timeout", "2"), 1,
         error(r"PROTO-18: .*nosuch.*")),
    Case("fixtures-verify-adapter-crashes-at-start-is-a-finding",
         ("fixtures", "verify", "--adapter", "cmd:{python} crash.py", "--start-timeout", "2", "--output", "verdicts.json"), 3,
         files={"crash.py": CRASH}, stderr_lines=0, stdout=r"DOES NOT CONFORM.*\n\s*FAIL at its start: PROTO-\d+",
         creates=("verdicts.json",)),
]

# ----------------------------------------------------------------------------- outputs

OUTPUT_CASES: list[Case] = [
    Case("output-empty-path", replay("t.jsonl", "--output", ""), 1, usage("replay", "--output", ".+"), files=TINY),
    Case("output-is-a-folder", replay("t.jsonl", "--output", "."), 1, error(r"--output \.: .*folder.*"), files=TINY),
    Case("output-missing-folder", replay("t.jsonl", "--output", "no/dir/x.json"), 1,
         error(r"--output no/dir/x\.json: no such folder: no/dir"),
         files=TINY),
    Case("output-under-a-file", replay("t.jsonl", "--output", "t.jsonl/x.json"), 1, error(r"--output t\.jsonl/x\.json: .+"), files=TINY),
    Case("output-trailing-slash-names-a-folder", replay("t.jsonl", "--output", "out/"), 1,
         usage("replay", "--output", r"out/: ends in /, so it names a folder, not a file"), files=TINY),
    Case("output-unwritable-folder", replay("t.jsonl", "--output", "ro/x.json"), 1, error(r"--output ro/x\.json: .+"),
         files={**TINY, "ro": Folder(0o555)}, needs_permissions=True),
    Case("output-read-only-file", replay("t.jsonl", "--output", "old.json"), 1, error(r"--output old\.json: .+"),
         files={**TINY, "old.json": Moded(b"earlier result\n", 0o444)}, needs_permissions=True),
    Case("output-device-full", replay("t.jsonl", "--output", "/dev/full"), 1, error(r"--output /dev/full: .*(?i:no space).*"), files=TINY),
    Case("output-failed-replay-leaves-old-file", replay("t.jsonl", "--output", "old.json"), 1,
         trace_error(2, "timestamp", "REPLAY-TRACE-2"),
         files={"t.jsonl": OK + raw(ts="true"), "old.json": b"earlier result\n"}),
    Case("sweep-plot-wrong-suffix", ("sweep", "t.jsonl", "--capacity", "16", "--plot", "plot.txt"), 1, error(r"--plot plot\.txt: .+"),
         files=TINY),
    Case("sweep-plot-empty-path", ("sweep", "t.jsonl", "--capacity", "16", "--plot", ""), 1, usage("sweep", "--plot", ".+"), files=TINY),
    Case("sweep-plot-is-a-folder", ("sweep", "t.jsonl", "--capacity", "16", "--plot", "p.png"), 1, error(r"--plot p\.png: .*folder.*"),
         files={**TINY, "p.png": Folder()}),
    Case("sweep-plot-missing-folder", ("sweep", "t.jsonl", "--capacity", "16", "--plot", "no/p.png"), 1,
         error(r"--plot no/p\.png: no such folder: no"),
         files=TINY),
    Case("sweep-second-output-bad-neither-written", ("sweep", "t.jsonl", "--capacity", "16", "--output", "out.json", "--plot",
         "no/p.png"), 1,
         error(r"--plot no/p\.png: .+"), files=TINY),
    Case("sweep-first-output-bad-neither-written", ("sweep", "t.jsonl", "--capacity", "16", "--output", "no/out.json", "--plot",
         "p.png"), 1,
         error(r"--output no/out\.json: .+"), files=TINY),
    Case("sweep-plot-unwritable-folder", ("sweep", "t.jsonl", "--capacity", "16", "--plot", "ro/p.png"), 1,
         error(r"--plot ro/p\.png: .+"),
         files={**TINY, "ro": Folder(0o555)}, needs_permissions=True),
    Case("compare-output-missing-folder", ("compare", "t.jsonl", "--output", "no/out.json"), 1,
         error(r"--output no/out\.json: .+"),
         files=TINY),
    Case("compare-plot-wrong-suffix", ("compare", "t.jsonl", "--plot", "p.gif"), 1, error(r"--plot p\.gif: .+"), files=TINY),
    Case("compare-second-output-bad-neither-written", ("compare", "t.jsonl", "--output", "out.json", "--plot",
         "t.jsonl/p.png"), 1,
         error(r"--plot t\.jsonl/p\.png: .+"), files=TINY),
    Case("certify-report-is-a-file", ("certify", "--adapter", "reference", "--policy", "lru", "--report", "t.jsonl"), 1,
         error(r"--report t\.jsonl: .+"), files=TINY),
    Case("certify-report-under-a-file", ("certify", "--adapter", "reference", "--policy", "lru", "--report", "t.jsonl/rep"), 1,
         error(r"--report t\.jsonl/rep: .+"), files=TINY),
    Case("certify-report-empty-path", ("certify", "--adapter", "reference", "--report", ""), 1, usage("certify", "--report", ".+")),
    Case("certify-report-unwritable-folder", ("certify", "--adapter", "reference", "--policy", "lru", "--report", "ro/rep"), 1,
         error(r"--report ro/rep: .+"), files={"ro": Folder(0o555)}, needs_permissions=True),
    Case("fixtures-verify-output-is-a-folder", ("fixtures", "verify", "--adapter", "reference", "--output", "."), 1,
         error(r"--output \.: .+")),
    Case("fixtures-verify-output-missing-folder", ("fixtures", "verify", "--adapter", "reference", "--output", "no/v.json"), 1,
         error(r"--output no/v\.json: no such folder: no")),
    Case("fixtures-verify-output-empty-path", ("fixtures", "verify", "--adapter", "reference", "--output", ""), 1,
         usage("fixtures verify", "--output", ".+")),
    Case("fixtures-verify-output-unwritable-folder", ("fixtures", "verify", "--adapter", "reference", "--output", "ro/v.json"), 1,
         error(r"--output ro/v\.json: .+"), files={"ro": Folder(0o555)}, needs_permissions=True),
    # a folder is checked by making it: what no test of its ancestors tells
    Case("certify-report-that-proc-refuses", ("certify", "--adapter", "reference", "--policy", "lru", "--report", "/proc/nope"), 1,
         error(r"--report /proc/nope: cannot be made: .+")),
    Case("certify-report-name-too-long", ("certify", "--adapter", "reference", "--policy", "lru", "--report", LONG), 1,
         error(rf"--report {LONG}: .+")),
    Case("certify-report-inner-name-too-long", ("certify", "--adapter", "reference", "--policy", "lru", "--report", f"a/{LONG}/b"), 1,
         error(rf"--report a/{LONG}/b: cannot be made: .+")),
    Case("replay-output-name-of-250-characters-accepted", replay("t.jsonl", "--output", "o" * 245 + ".json"), 0, files=TINY,
         creates=("o" * 245 + ".json",)),
]

# ------------------------------------------------------------------------ fixture corpora

# A one-case corpus: the installed corpus's refused replay case `block_size 0`, and its manifest (FIX-1, FIX-2).
CASE = {"clauses": ["REPLAY-CONF-1", "REPLAY-CONF-2", "REPLAY-CONF-3"],
        "config": {"block_size": 0, "capacity": 4096, "max_freq": 3, "policy": "s3fifo", "small_ratio": 0.1},
        "format": "kvspec-fixture/1", "id": "replay-s3fifo-block-size-0-da2dd0fc", "kind": "replay", "level": "state",
        "provenance": "REPLAY-CONF-2", "refused": "REPLAY-CONF-2", "requests": [], "title": "block_size 0", "totals": None}
CASE_PATH = "replay/replay-s3fifo-block-size-0-da2dd0fc.json"


def corpus_json(value: object) -> bytes:
    return (json.dumps(value, sort_keys=True, indent=1) + "\n").encode()


CASE_BYTES = corpus_json(CASE)


def manifest(case_bytes: bytes = CASE_BYTES, path: str = CASE_PATH, fmt: str = "kvspec-fixture/1", sha: str | None = None,
             cases: list[object] | None = None) -> bytes:
    entry = {"clauses": CASE["clauses"], "id": CASE["id"], "kind": "replay", "path": path,
    "sha256": sha or hashlib.sha256(case_bytes).hexdigest(),
             "title": CASE["title"]}
    return corpus_json({"cases": [entry] if cases is None else cases, "format": fmt, "spec_version": "0.1.0"})


def corpus(folder: str = "c", case_bytes: bytes = CASE_BYTES, **manifest_kw: object) -> dict[str, Content]:
    return {f"{folder}/manifest.json": manifest(case_bytes, **manifest_kw), f"{folder}/{CASE_PATH}": case_bytes}  # type: ignore[arg-type]


def verify(*extra: str) -> tuple[str, ...]:
    return ("fixtures", "verify", *extra, "--adapter", "reference")


REPORT = {"kvspec_version": "0.1.0", "spec_version": "0.1.0", "hypothesis_version": "6.170.17", "adapter": "reference",
          "implementation": {"name": "kvspec-reference", "language": "python", "version": "0.1.0"}, "level": "state", "profile": "quick",
          "seed": 0, "pins": {}, "conforms": True, "faults": [],
          "policies": [{"policy": "fifo", "conforms": True, "examples_per_second": 190.0,
                        "clauses": {"FIFO-ACCESS-1": "pass", "FIFO-EVICT-1": "pass"}, "failures": []}]}
CHECKOUT = {"conformance/counterexamples.json": b"[]\n",
"conformance/hunted.json": b"[]\n"}  # a kvspec checkout, as collect and --record need

SCHEMAS = Path(__file__).resolve().parent.parent / "spec" / "schemas"
USERS_SCHEMAS = {"s/my-api.schema.json": b'{"title": "mine"}\n', "s/v2/orders.schema.json": b'{"title": "mine too"}\n'}
SCHEMAS_WRITTEN = ("s/adapter/", *(f"s/{p.relative_to(SCHEMAS).as_posix()}" for p in SCHEMAS.rglob("*.json")))  # the checked-in ones
LRU_DOC = b"# LRU\n\n- **LRU-ACCESS-1** A hit moves the block to the most recent end.\n"  # a spec document with one clause the reference cites

CORPUS_CASES: list[Case] = [
    Case("corpus-one-case-verifies", verify("c"), 0, files=corpus(), stdout=r"conforms"),
    Case("corpus-empty-manifest", verify("c"), 1, error(r"c/manifest\.json: .*FIX-2.*"), files={"c/manifest.json": manifest(cases=[])}),
    Case("corpus-no-manifest", verify("c"), 1, error(r"c/manifest\.json: .+"), files={"c": Folder()}),
    Case("corpus-manifest-not-json", verify("c"), 1, error(r"c/manifest\.json: .+"), files={"c/manifest.json": b"{\n"}),
    Case("corpus-manifest-other-format", verify("c"), 1, error(r"c/manifest\.json: .*FIX-1.*"), files=corpus(fmt="kvspec-fixture/2")),
    Case("corpus-case-file-missing", verify("c"), 1, error(rf"c/{re.escape(CASE_PATH)}: .+"), files={"c/manifest.json": manifest()}),
    Case("corpus-case-sha256-differs", verify("c"), 1, error(rf"c/{re.escape(CASE_PATH)}: .*FIX-2.*"), files=corpus(sha="0" * 64)),
    Case("corpus-case-other-format", verify("c"), 1, error(rf"c/{re.escape(CASE_PATH)}: .*format.*"),
         files=corpus(case_bytes=corpus_json({**CASE, "format": "other"}))),
    Case("corpus-case-not-json", verify("c"), 1, error(rf"c/{re.escape(CASE_PATH)}: .+"), files=corpus(case_bytes=b"not json\n")),
    Case("corpus-case-path-leaves-the-corpus", verify("c"), 1, error(r"c/manifest\.json: .*\.\./.*"),
         files={"c/manifest.json": manifest(path="../outside.json"), "outside.json": CASE_BYTES}),
    Case("corpus-single-case-file-missing", verify("absent.json"), 1, error(r"absent\.json\b.*")),
    Case("known-failures-not-json", verify("c", "--known-failures", "kf.json"), 1, error(r"kf\.json: .+"),
         files={**corpus(), "kf.json": b"{\n"}),
    Case("known-failures-an-array", verify("c", "--known-failures", "kf.json"), 1, error(r"kf\.json: FIX-11: .+"),
         files={**corpus(), "kf.json": b'["replay-s3fifo-block-size-0-da2dd0fc"]\n'}),
    Case("known-failures-unknown-id", verify("c", "--known-failures", "kf.json"), 1, error(r".*FIX-11: .*replay-lru-retired-00000000.*"),
         files={**corpus(), "kf.json": b'{"replay-lru-retired-00000000": "x"}\n'}),
    Case("known-failures-unexpected-pass-is-a-finding", verify("c", "--known-failures", "kf.json"), 3, files={**corpus(), "kf.json":
         b'{"replay-s3fifo-block-size-0-da2dd0fc": "was broken"}\n'}, stderr_lines=0,
         stdout=r"DOES NOT CONFORM.*\n\s*UNEXPECTED-PASS replay-s3fifo-block-size-0-da2dd0fc"),
    Case("known-failures-unreadable", verify("c", "--known-failures", "kf.json"), 1, error(r"kf\.json: .*(?i:permission denied).*"),
         files={**corpus(), "kf.json": Moded(b"{}\n", 0o000)}, needs_permissions=True),
    Case("generate-folder-with-stray-json", ("fixtures", "generate", "g"), 1, error(r".*stray\.json.*"), files={"g/stray.json": b"{}\n"},
         timeout=120),
    Case("generate-folder-with-unlisted-json-beside-a-manifest", ("fixtures", "generate", "g"), 1, error(r".*stray\.json.*"),
         files={**corpus("g"), "g/replay/stray.json": b"{}\n"}, timeout=120),
    Case("generate-folder-with-broken-manifest", ("fixtures", "generate", "g"), 1, error(r"g/manifest\.json: .+"),
         files={"g/manifest.json": b"{\n"}, timeout=120),
    Case("generate-into-a-file", ("fixtures", "generate", "t.jsonl"), 1, error(r"t\.jsonl: .+"), files=TINY),
    Case("generate-under-a-file", ("fixtures", "generate", "t.jsonl/g"), 1, error(r"t\.jsonl/g: .+"), files=TINY),
    Case("generate-empty-path", ("fixtures", "generate", ""), 1, usage("fixtures generate", "FOLDER", ".+")),
    Case("generate-unwritable-folder", ("fixtures", "generate", "ro/g"), 1, error(r"ro/g: .+"), files={"ro": Folder(0o555)},
         needs_permissions=True),
    Case("collect-report-not-a-certification-report", ("fixtures", "collect", "rep"), 1, error(r"rep/report\.json: .+"),
         files={**CHECKOUT, "rep/report.json": b"{}\n"}),
    Case("collect-report-not-json", ("fixtures", "collect", "rep"), 1, error(r"rep/report\.json: .+"),
         files={**CHECKOUT, "rep/report.json": b"{\n"}),
    Case("collect-folder-without-report", ("fixtures", "collect", "rep"), 1, error(r"rep/report\.json: .+"), files={**CHECKOUT,
         "rep": Folder()}),
    Case("collect-report-folder-missing", ("fixtures", "collect", "absent"), 1, error(r"absent\b.*"), files=CHECKOUT),
    Case("collect-second-report-bad-nothing-written", ("fixtures", "collect", "good", "rep"), 1, error(r"rep/report\.json: .+"),
         files={**CHECKOUT, "good/report.json": json.dumps(REPORT).encode(), "rep/report.json": b'{"policies": 3}\n'}),
    Case("collect-outside-a-checkout", ("fixtures", "collect", "rep"), 1, error(r".*checkout.*"),
         files={"rep/report.json": json.dumps(REPORT).encode()}),
    Case("spec-annotate-outside-a-checkout", ("spec", "annotate"), 1, error(r"spec annotate reads spec/ and tests/: run it from a kvspec checkout")),
    Case("spec-annotate-into-a-file", ("spec", "annotate", "t.jsonl"), 1, error(r"t\.jsonl: .+"), files=TINY),
    Case("spec-schemas-into-a-file", ("spec", "schemas", "t.jsonl"), 1, error(r"t\.jsonl: .+"), files=TINY),
    Case("spec-without-an-action", ("spec",), 1, required("spec", "action")),
    # spec schemas removes only what its manifest lists
    Case("spec-schemas-keeps-the-users-schemas", ("spec", "schemas", "s"), 0, files=USERS_SCHEMAS, creates=SCHEMAS_WRITTEN,
         stdout=r"^\d+ schemas and manifest\.json in s\n$"),
    Case("spec-schemas-refuses-a-manifest-not-its-own", ("spec", "schemas", "s"), 1,
         error(r"s/manifest\.json: not the manifest kvspec spec schemas writes .+"), files={**USERS_SCHEMAS, "s/manifest.json": manifest()}),
    Case("spec-schemas-refuses-a-manifest-listing-a-file-outside", ("spec", "schemas", "s"), 1,
         error(r"s/manifest\.json: lists '\.\./t\.schema\.json', .+"),
         files={"t.schema.json": b"{}\n", "s/manifest.json": json.dumps({"format": "kvspec-schemas/1", "schemas": ["../t.schema.json"]}).encode()}),
    # spec annotate stops at a file it cannot read, naming it, and writes nothing
    *(Case(f"spec-annotate-test-{label}", ("spec", "annotate"), 1, error(rf"tests/test_x\.py{where}: cannot be read as Python: {why}"),
           files={"spec/lru.md": LRU_DOC, "tests/test_x.py": source}) for label, source, where, why in (
        ("not-python", b"def test_x(:\n    pass\n", ":1", ".+"),
        ("not-utf8", b'x = 1\ny = "caf\xe9"\n', ":2", "not utf-8 .+"),
        ("nested-deeply", b"x = " + b"1+" * 100_000 + b"1\n", "", "nested deeper than Python's parser goes"),
        ("with-a-nul-byte", b"x = 1\0\n", "(?::1)?", ".+"),  # a SyntaxError since Python 3.11.4, a ValueError before
    )),
    Case("spec-annotate-spec-not-utf8", ("spec", "annotate"), 1, error(r"spec/lru\.md: byte \d+ is not UTF-8 .+"),
         files={"spec/lru.md": LRU_DOC + b"caf\xe9\n", "tests/test_x.py": b""}),
    Case("spec-annotate-test-in-latin-1-by-its-coding-line-accepted", ("spec", "annotate", "out"), 0,
         files={"spec/lru.md": LRU_DOC, "tests/test_x.py": b'# -*- coding: latin-1 -*-\ndef test_LRU_ACCESS_1_caf\xe9():\n    pass\n'},
         creates=("out/", "out/README.md", "out/lru.md")),
]

# -------------------------------------------------------------------------------- hunt

NO_CROSSHAIR = {"shadow/sitecustomize.py": b'import sys\nsys.modules["crosshair"] = None  # as if CrossHair were not installed\n'}
HUNT_CASES: list[Case] = [
    Case("hunt-check-without-crosshair", ("hunt", "check", "--budget", "20"), 1, error(r"hunt: .+"), files=NO_CROSSHAIR,
         env={"PYTHONPATH": "{tmp}/shadow"}),
    Case("hunt-diff-pair-names-nothing", ("hunt", "diff", "--pair", "nosuch.f", "nosuch.g", "--budget", "20"), 1,
         error(r"hunt: .*nosuch.*")),
    Case("hunt-diff-pair-no-such-function", ("hunt", "diff", "--pair", "kvspec.conformance.hunt.search.nosuch",
         "kvspec.conformance.hunt.search.spec_hit_tokens",
                                             "--budget", "20"), 1, error(r"hunt: .*nosuch.*")),
    Case("hunt-diff-pair-record-writes-nothing", ("hunt", "diff", "--pair", "nosuch.f", "nosuch.g", "--budget", "20", "--record"), 1,
         error(r"hunt: .*nosuch.*"), files=CHECKOUT),
    *(Case(f"hunt-budget-{label}", ("hunt", "diff", "--budget", value), 1,
           rf"(?:kvspec: error: hunt: .*--budget.*|{usage('hunt', '--budget', '.+')})") for label, value in
      (("nan", "nan"), ("inf", "inf"), ("zero", "0"))),
    Case("hunt-per-condition-nan", ("hunt", "diff", "--per-condition", "nan"), 1,
         rf"(?:kvspec: error: hunt: .*--per-condition.*|{usage('hunt', '--per-condition', '.+')})"),
]

# -------------------------------------------------------------------------- environment

ASCII_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": None}
NAMED = b"""from kvspec.adapters.interface import Identity
from kvspec.adapters.reference import ReferenceAdapter


class Named(ReferenceAdapter):
    identity = Identity(name="caf\\u00e9-cache", language="python", version="1")


class Wrong(Named):
    def hit_tokens(self, hash_ids, input_length):
        return 0


def make():
    return Named()


def wrong():
    return Wrong()
"""


def json_field(key: str, value: str, **more: str) -> Callable[[str], None]:
    """stdout is JSON whose ``key`` is ``value`` (and each of ``more`` as given)."""

    def check(stdout: str) -> None:
        found = json.loads(stdout)
        assert {name: found[name] for name in (key, *more)} == {key: value, **more}, stdout[:2000]

    return check


ENV_CASES: list[Case] = [
    *(Case(f"env-contracts-{label}-refused", replay(), 1, error(r".*KVSPEC_CONTRACTS.*"), files=TINY, env={"KVSPEC_CONTRACTS": value})
      for label, value in (("yes", "yes"),)),
    *(Case(f"env-contracts-{label}-accepted", replay(), 0, files=TINY, env={"KVSPEC_CONTRACTS": value})
      for label, value in (("unset", None), ("empty", ""), ("1", "1"), ("all", "all"), ("ALL", "ALL"))),
    Case("env-contracts-refused-for-every-command", ("fixtures", "verify", "c", "--adapter", "reference"), 1,
         error(r".*KVSPEC_CONTRACTS.*"),
         files=corpus(), env={"KVSPEC_CONTRACTS": "yes"}),
    Case("env-stdout-device-full", replay(), 1, error(r"[^:\s].*(?i:no space left).*"), files=TINY, stdout_to="/dev/full"),
    Case("env-tmpdir-missing-output-still-written", replay("t.jsonl", "--output", "out.json"), 0, files=TINY,
         env={"TMPDIR": "/nonexistent/tmp"},
         creates=("out.json",)),
    Case("env-c-locale-non-ascii-trace", replay("trac\u00e9.jsonl"), 1, trace_error(2, "timestamp", "REPLAY-TRACE-2",
         name="trac\u00e9.jsonl"),
         files={"trac\u00e9.jsonl": OK + raw(ts='"x"')}, env={"LC_ALL": "C", "LANG": "C"}),
    # the C locale without Python's UTF-8 mode: a path's bytes the locale cannot decode, and a name outside ASCII, print as escapes
    Case("env-ascii-locale-non-ascii-trace-refused", replay("trac\u00e9.jsonl"), 1,
         trace_error(2, "timestamp", "REPLAY-TRACE-2", name_re=r"trac\\udcc3\\udca9\.jsonl"), files={"trac\u00e9.jsonl": OK + raw(ts='"x"')},
         env=ASCII_LOCALE),
    Case("env-ascii-locale-sweep-of-a-non-ascii-trace", ("sweep", "trac\u00e9.jsonl", "--capacity", "16", "--policy", "lru"), 0,
         files={"trac\u00e9.jsonl": OK + OK2}, env=ASCII_LOCALE, stdout_check=json_field("trace", "trac\\udcc3\\udca9.jsonl")),
    Case("env-ascii-locale-sweep-output-of-a-non-ascii-trace", ("sweep", "trac\u00e9.jsonl", "--capacity", "16", "--output", "\u00f6.json"), 0,
         files={"trac\u00e9.jsonl": OK + OK2}, env=ASCII_LOCALE, creates=("\u00f6.json",)),
    Case("env-ascii-locale-keep-going-of-a-non-ascii-adapter", replay("t.jsonl", "--adapter", "python:nam\u00e9d.py:make", "--keep-going"), 0,
         files={**TINY, "nam\u00e9d.py": NAMED}, env=ASCII_LOCALE,
         stdout_check=json_field("adapter", "python:nam\\udcc3\\udca9d.py:make", name="caf\u00e9-cache")),
    Case("env-ascii-locale-certify-of-a-non-ascii-name", ("certify", "--adapter", "python:named.py:wrong", "--policy", "lru", "--report", "r"), 3,
         files={"named.py": NAMED}, env=ASCII_LOCALE, stderr_lines=0, stdout=r"^caf\\xe9-cache 1 \(python\): DOES NOT CONFORM",
         creates=("r/", "r/report.json", "r/report.md", "r/lru-counterexample-1.jsonl")),
]

CASES = TRACE_CASES + ARGUMENT_CASES + ADAPTER_CASES + OUTPUT_CASES + CORPUS_CASES + HUNT_CASES + ENV_CASES
assert len({case.id for case in CASES}) == len(CASES), "case ids must be unique"


# ------------------------------------------------------------------------------ the harness


def substitute(text: str, tmp: Path, extra: Mapping[str, str] = {}) -> str:
    for key, value in {"{tmp}": str(tmp), "{python}": PYTHON, **extra}.items():
        text = text.replace(key, value)
    return text


def materialise(folder: Path, files: Mapping[str, Content]) -> list[tuple[Path, int]]:
    """Create the case's files; the modes to apply once the snapshot is taken."""
    modes = []
    for name, content in files.items():
        path = folder / name
        if isinstance(content, Folder):
            path.mkdir(parents=True, exist_ok=True)
            if content.mode is not None:
                modes.append((path, content.mode))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.data if isinstance(content, Moded) else content)
        if isinstance(content, Moded):
            modes.append((path, content.mode))
    return modes


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (hidden ones included): a folder, or a file's sha256."""
    found = {}
    for root, dirs, names in os.walk(folder):
        for name in dirs:
            found[os.path.relpath(os.path.join(root, name), folder) + "/"] = "folder"
        for name in names:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, folder)
            if os.path.islink(path) or not os.path.isfile(path):
                found[relative] = "special"
                continue
            with open(path, "rb") as handle:
                found[relative] = hashlib.sha256(handle.read()).hexdigest()
    return found


def difference(before: dict[str, str], after: dict[str, str], creates: tuple[str, ...] = ()) -> list[str]:
    problems = []
    for name in sorted(after.keys() - before.keys()):
        if name not in creates:
            problems.append(f"left {name!r}")
    for name in sorted(before.keys() - after.keys()):
        problems.append(f"removed {name!r}")
    for name in sorted(before.keys() & after.keys()):
        if before[name] != after[name]:
            problems.append(f"changed {name!r}")
    for name in creates:
        if name not in after:
            problems.append(f"did not write {name!r}")
    return problems


def processes_left(session: int, marker: str, folder: Path, exclude: int | None = None) -> list[str]:
    """Live processes of ``session``, or carrying ``marker`` in their environment, or ``folder`` on their command line."""
    found = []
    needle = f"{MARKER}={marker}".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid in (os.getpid(), exclude):
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] in ("Z", "X"):  # dead, waiting to be reaped
            continue
        hit = int(fields[3]) == session or str(folder) in command
        if not hit:
            try:
                hit = needle in Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                pass
        if hit:
            found.append(f"{pid}: {command}")
    return found


def settle(session: int, marker: str, folder: Path, exclude: int | None = None) -> list[str]:
    """What is still running after a moment's grace (a process sent SIGKILL takes a moment to go)."""
    deadline = time.monotonic() + 1.0
    while True:
        left = processes_left(session, marker, folder, exclude)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_everything(session: int, marker: str, folder: Path) -> None:
    for line in processes_left(session, marker, folder):
        try:
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
        except OSError:
            pass


def ended(process: "subprocess.Popen[bytes]", marker: str, folder: Path) -> list[str]:
    """What a run left running after a moment's grace; then all of it ended, kvspec itself included."""
    left = settle(process.pid, marker, folder, exclude=process.pid)
    kill_everything(process.pid, marker, folder)
    if process.poll() is None:
        process.kill()
        process.wait()
    return left


def environment(case_env: Mapping[str, str | None], tmp: Path, marker: str) -> dict[str, str]:
    env = {**os.environ, "KVSPEC_CONTRACTS": "0", "PYTHONDONTWRITEBYTECODE": "1", MARKER: marker}
    env.pop("PYTEST_XDIST_WORKER", None)
    for key, value in case_env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = substitute(value, tmp)
    return env


def limit_memory(pid: int, limit: int | None) -> None:
    if limit is not None:
        try:
            resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
        except (OSError, ValueError):
            pass


@functools.cache
def permissions_bypassed() -> bool:
    """Whether this process reads a file whose mode forbids it (root, as tests may run, does)."""
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "probe"
        probe.write_bytes(b"")
        probe.chmod(0)
        try:
            probe.open("rb").close()
        except PermissionError:
            return False
        return True


def one_line(stderr: str) -> str:
    assert stderr.endswith("\n") and stderr.count("\n") == 1 and "\r" not in stderr, f"stderr is not exactly one line: {stderr[:3000]!r}"
    return stderr[:-1]


def describe(argv: list[str], status: int, stdout: str, stderr: str) -> str:
    return f"\n$ kvspec {' '.join(argv[1:])}\nstatus {status}\nstderr {stderr[:2000]!r}\nstdout {stdout[:500]!r}"


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(case: Case, tmp_path: Path) -> None:
    if case.needs_permissions and permissions_bypassed():
        pytest.skip(ROOT_REASON)
    folder = tmp_path / "case"
    folder.mkdir()
    modes = materialise(folder, case.files)
    before = snapshot(folder)
    for path, mode in modes:
        path.chmod(mode)
    marker = uuid.uuid4().hex
    argv = [str(KVSPEC), *(substitute(arg, folder) for arg in case.argv)]
    stdout_target = open(case.stdout_to, "wb") if case.stdout_to else subprocess.PIPE  # noqa: SIM115
    try:
        process = subprocess.Popen(argv, cwd=folder, env=environment(case.env, folder, marker), start_new_session=True,
                                   stdin=subprocess.PIPE if case.stdin is not None else subprocess.DEVNULL, stdout=stdout_target,
                                   stderr=subprocess.PIPE)
        limit_memory(process.pid, case.memory)
        try:
            out, err = process.communicate(case.stdin, timeout=case.timeout)
        except subprocess.TimeoutExpired:
            kill_everything(process.pid, marker, folder)
            process.communicate()
            pytest.fail(f"kvspec did not end within {case.timeout:g} s: kvspec {' '.join(argv[1:])}")
    finally:
        if case.stdout_to:
            stdout_target.close()  # type: ignore[union-attr]
    left = settle(process.pid, marker, folder)
    kill_everything(process.pid, marker, folder)
    for path, _ in modes:
        path.chmod(0o755 if path.is_dir() else 0o644)
    stdout = (out or b"").decode(errors="backslashreplace")
    stderr = err.decode(errors="backslashreplace")
    shown = describe(argv, process.returncode, stdout, stderr)

    allowed = case.status if isinstance(case.status, tuple) else (case.status,)
    assert process.returncode in allowed, f"exit status {process.returncode}, expected {' or '.join(map(str, allowed))}{shown}"
    lines = case.stderr_lines if case.stderr_lines is not None else (0 if process.returncode == 0 else 1)
    if lines == 0:
        assert stderr == "", f"expected nothing on stderr{shown}"
    else:
        line = one_line(stderr)
        assert "Traceback" not in line
        if process.returncode in (130, 143):
            assert line == INTERRUPTED, shown
        else:
            assert re.fullmatch(case.stderr, line), f"stderr does not match {case.stderr!r}{shown}"
    if process.returncode == 1:
        assert stdout == "", f"bad input, yet output on stdout{shown}"
    if case.stdout is not None:
        assert re.search(case.stdout, stdout), f"stdout does not match {case.stdout!r}{shown}"
    if case.stdout_check is not None and process.returncode == 0:
        case.stdout_check(stdout)
    problems = difference(before, snapshot(folder), case.creates if process.returncode in (0, 3) else ())
    assert not problems, f"the case's folder changed: {'; '.join(problems)}{shown}"
    assert not left, f"processes left running: {left}{shown}"


# ------------------------------------------------------------------------------ SIGINT, SIGTERM


@pytest.fixture(scope="session")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain trace of 300,000 requests (about 25 MB, a replay of a second or so), made once per worker."""
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    with path.open("w") as handle:
        for start in range(0, 300_000, 10_000):
            handle.write("".join(f'{{"timestamp": {i}, "input_length": 1000, "output_length": 1, "hash_ids": [{i % 5000}, {i}]}}\n'
                                 for i in range(start, start + 10_000)))
    return path


SERVE = b'import runpy\nrunpy.run_module("kvspec.adapters.serve", run_name="__main__", alter_sys=True)\n'  # the reference over the protocol


@dataclass(frozen=True)
class SignalCase:
    id: str
    argv: tuple[str, ...]  # {big} is the big trace
    signum: int
    wait_for: str  # "trace": kvspec has the big trace open; "child": its implementation runs; "temporary": .out.json.* exists
    files: Mapping[str, bytes] = field(default_factory=dict)


SIGNAL_CASES = [
    SignalCase("sigint-replay-output", ("replay", "{big}", "--output", "out.json"), signal.SIGINT, "trace"),
    SignalCase("sigterm-replay-output", ("replay", "{big}", "--output", "out.json"), signal.SIGTERM, "trace"),
    SignalCase("sigint-replay-stdout", ("replay", "{big}", "--per-request"), signal.SIGINT, "trace"),
    SignalCase("sigterm-while-the-output-is-written", ("replay", "{big}", "--per-request", "--output", "out.json"),
               signal.SIGTERM, "temporary"),
    SignalCase("sigterm-sweep-output-and-plot",
               ("sweep", "{big}", "--policy", "lru", "--capacity", "64", "--capacity", "128", "--output", "out.json", "--plot", "plot.png"),
               signal.SIGTERM, "trace"),
    SignalCase("sigint-replay-through-a-process-adapter",
               ("replay", "{big}", "--adapter", "cmd:{python} {tmp}/serve.py", "--output", "out.json"),
               signal.SIGINT, "child", {"serve.py": SERVE}),
    SignalCase("sigterm-certify-through-a-process-adapter",
               ("certify", "--adapter", "cmd:{python} {tmp}/serve.py", "--policy", "lru", "--profile", "thorough", "--report", "rep"),
               signal.SIGTERM, "child", {"serve.py": SERVE}),
    SignalCase("sigint-fixtures-verify-through-a-process-adapter",
               ("fixtures", "verify", "--adapter", "cmd:{python} {tmp}/serve.py", "--output", "verdicts.json"),
               signal.SIGINT, "child", {"serve.py": SERVE}),
]


def has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == os.path.realpath(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


@pytest.mark.parametrize("case", SIGNAL_CASES, ids=[case.id for case in SIGNAL_CASES])
def test_interrupted(case: SignalCase, tmp_path: Path, big_trace: Path) -> None:
    """130 after SIGINT, 143 after SIGTERM: `kvspec: interrupted`, no output file, no hidden
    temporary file, and no process (an implementation's included) left running."""
    folder = tmp_path / "case"
    folder.mkdir()
    materialise(folder, case.files)
    before = snapshot(folder)
    marker = uuid.uuid4().hex
    argv = [str(KVSPEC), *(substitute(arg, folder, {"{big}": str(big_trace)}) for arg in case.argv)]
    with (tmp_path / "stdout").open("wb") as out, (tmp_path / "stderr").open("wb") as err:
        process = subprocess.Popen(argv, cwd=folder, env=environment({}, folder, marker), start_new_session=True, stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=err)
    try:
        deadline = time.monotonic() + 20
        while process.poll() is None and time.monotonic() < deadline:
            if case.wait_for == "trace" and has_open(process.pid, big_trace):
                time.sleep(0.3)
                break
            if case.wait_for == "child" and processes_left(-1, marker, folder, exclude=process.pid):
                time.sleep(0.5)
                break
            if case.wait_for == "temporary":  # the hidden temporary file lives for some milliseconds: look often
                if any(name.startswith(".out.json.") for name in os.listdir(folder)):
                    break
                time.sleep(0.001)
                continue
            time.sleep(0.02)
        if process.poll() is not None:
            stderr = (tmp_path / "stderr").read_text(errors="backslashreplace")
            pytest.fail(f"kvspec ended (status {process.returncode}, stderr {stderr[:1000]!r}) before it could be interrupted")
        process.send_signal(case.signum)
        try:
            status = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail(f"kvspec did not end within 20 s of signal {case.signum}")
    finally:
        left = ended(process, marker, folder)
    stderr = (tmp_path / "stderr").read_text(errors="backslashreplace")
    shown = describe(argv, status, (tmp_path / "stdout").read_text(errors="backslashreplace"), stderr)
    assert status == 128 + case.signum, f"exit status {status}, expected {128 + case.signum}{shown}"
    assert one_line(stderr) == INTERRUPTED, shown
    problems = difference(before, snapshot(folder))
    assert not problems, f"the case's folder changed: {'; '.join(problems)}{shown}"
    assert not left, f"processes left running: {left}{shown}"
