"""The commands kvspec prints, for a user to paste into a shell: each word quoted as a POSIX shell
reads it, a word whose bytes are not printable text (a path in bytes the locale cannot decode, a
control character) written as bash's $'...' with escapes; and the options that reach an
implementation as the run that printed the command reached it (PROTO-18, PROTO-15)."""

import os
import shlex

from kvspec.reference.constants import REPLY_TIMEOUT, START_TIMEOUT


def shell_word(word: str) -> str:
    """``word`` quoted for the shell, its own bytes whatever the locale."""
    if word.isprintable() and word.encode("utf-8", "surrogateescape").decode("utf-8", "replace") == word:
        return shlex.quote(word)
    raw = os.fsencode(word)
    return "$'" + "".join(chr(b) if 0x20 <= b < 0x7F and chr(b) not in "'\\" else f"\\x{b:02x}" for b in raw) + "'"


def shell_command(words: list[str]) -> str:
    return " ".join(shell_word(word) for word in words)


def reaching(adapter: str, reply_timeout: float = REPLY_TIMEOUT, start_timeout: float = START_TIMEOUT) -> list[str]:
    """``--adapter`` and, where the run was given others than the defaults, its deadlines."""
    words = ["--adapter", adapter]
    if reply_timeout != REPLY_TIMEOUT:
        words += ["--reply-timeout", repr(reply_timeout)]
    if start_timeout != START_TIMEOUT:
        words += ["--start-timeout", repr(start_timeout)]
    return words
