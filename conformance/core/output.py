"""Output files are written whole or not at all (REPLAY-TRACE-7), where the user asked, as the
user's other files are: with the umask's mode (or the mode of the file replaced), through a
symbolic link, and straight into a pipe or a terminal. Every path is checked before the work
starts, so that a run writes all its outputs or none, and a mistake names the option and the
path as given. What is written is UTF-8 whatever the locale, and any string can be written: a
path's bytes that the locale cannot decode, which Python holds as lone surrogates, are written
as the backslash escapes Python's stderr shows for them."""

from __future__ import annotations

import os
import shlex
import signal
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvspec.reference import KvspecError

if TYPE_CHECKING:
    from pydantic import BaseModel


def refused(option: str, given: Path | str, why: str) -> KvspecError:
    return KvspecError(f"{option + ' ' if option else ''}{shlex.quote(str(given))}: {why}")


def is_stream(given: Path) -> bool:
    """A pipe, a terminal or another device (/dev/stdout among them): neither a file nor a folder."""
    return given.exists() and not given.is_file() and not given.is_dir()


def check_output(given: Path, option: str = "") -> None:
    """Before any work: ``given`` can be written (a file in a folder that exists and takes a new
    file, or a pipe or device), or a KvspecError names ``option`` and the path."""
    with naming(option, given):
        if is_stream(given):
            if not os.access(given, os.W_OK):
                raise refused(option, given, "cannot be written")
            return
        target = resolved(given, option)
        if target.is_dir():
            raise refused(option, given, "is a folder, not a file")
        if not target.parent.is_dir():
            raise refused(option, given, f"no such folder: {shlex.quote(str(Path(given).parent))}")
        if not os.access(target.parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
            raise refused(option, given, "permission denied")
    with naming(option, given, "cannot be written: "), interruptions_held():
        handle, temporary = tempfile.mkstemp(prefix=temporary_prefix(target), suffix=target.suffix, dir=target.parent)
        os.close(handle)
        os.unlink(temporary)


def check_folder(given: Path, option: str = "") -> None:
    """Before any work: ``given`` is a folder that can be written, or one that can be made, or a
    KvspecError names ``option`` and the path. As for a file, whether it can be made is known by
    making it (and removing what was made): no test of its ancestors tells that /proc refuses a
    folder, or that a name is too long for its file system."""
    with naming(option, given):
        target = resolved(given, option)
        if target.exists() and not target.is_dir():
            raise refused(option, given, "is a file, not a folder")
        existing = next(folder for folder in (target, *target.parents) if folder.exists())
        if not existing.is_dir():
            raise refused(option, given, f"{shlex.quote(str(existing))} is a file, not a folder")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise refused(option, given, "permission denied")
        missing = [folder for folder in (target, *target.parents) if not folder.exists()]
    made: list[Path] = []
    with naming(option, given, "cannot be made: "), interruptions_held():
        try:
            for folder in reversed(missing):
                folder.mkdir()
                made.append(folder)
        finally:
            for folder in reversed(made):
                folder.rmdir()


@contextmanager
def naming(option: str, given: Path, what: str = "") -> Iterator[None]:
    """An OSError inside (a name too long for the file system, a folder that refuses one) as a KvspecError naming ``option`` and the path."""
    try:
        yield
    except OSError as error:
        raise refused(option, given, f"{what}{error.strerror or error}") from None


@contextmanager
def interruptions_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait while the block runs, so that nothing it makes is left behind; one that arrived is delivered after."""
    unmasked = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTIONS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, unmasked)


def temporary_prefix(target: Path) -> str:
    """The start of the name of a temporary file beside ``target``: hidden, and short enough that
    the temporary name fits where ``target``'s does (255 bytes on most file systems)."""
    return f".{target.name[:64]}."


WORKING_FOLDER_GONE = "the working folder no longer exists (removed while a shell was in it?): cd to one that does"


def working_folder_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


def resolved(given: Path, option: str) -> Path:
    """``given`` with its links resolved; a relative path in a working folder that is gone is refused, naming that."""
    if not given.is_absolute() and working_folder_gone():
        raise refused(option, given, WORKING_FOLDER_GONE)
    return Path(os.path.realpath(given))


def umask_mode() -> int:
    """The mode a new file gets under the process's umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


INTERRUPTIONS = {signal.SIGINT, signal.SIGTERM}


@contextmanager
def written_whole(given: Path, option: str = "") -> Iterator[Path]:
    """A temporary path beside the file ``given`` names (same suffix), renamed over it only if the
    block succeeds: a reader never sees a partial file, and a failure, an interruption included,
    leaves the file as it was. A symbolic link is written through; a pipe or a device is written
    directly (it has no partial state to hide)."""
    check_output(given, option)
    if is_stream(given):  # by its own name: /dev/stdout resolves to a pipe's, which no path opens
        try:
            yield given
        except OSError as error:  # a full device, a pipe closed by its reader
            raise refused(option, given, error.strerror or "cannot be written") from None
        return
    target = Path(os.path.realpath(given))
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else umask_mode()
    # SIGINT and SIGTERM wait while the temporary file is made: one arriving between its creation
    # and the try that owns it would leave it behind. A pending one is delivered inside the try.
    unmasked = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTIONS)
    try:
        handle, temporary = tempfile.mkstemp(prefix=temporary_prefix(target), suffix=target.suffix, dir=target.parent)
    except OSError as error:
        signal.pthread_sigmask(signal.SIG_SETMASK, unmasked)
        raise refused(option, given, error.strerror or "cannot be written") from None
    try:
        os.close(handle)
        signal.pthread_sigmask(signal.SIG_SETMASK, unmasked)
        yield Path(temporary)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        signal.pthread_sigmask(signal.SIG_SETMASK, unmasked)  # if the close failed, before the mask was put back
        raise refused(option, given, error.strerror or "cannot be written") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        signal.pthread_sigmask(signal.SIG_SETMASK, unmasked)
        raise


def plural(count: int, noun: str) -> str:
    """``count`` of ``noun``, as kvspec's messages give a count: "1 case", "1,024 blocks"."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def printable(text: str) -> str:
    """``text`` with each lone surrogate as its backslash escape (\\udcc3), as stderr writes it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def write_text(path: Path, text: str) -> None:
    """``text`` to ``path`` in UTF-8, whatever the locale, each lone surrogate as its escape."""
    path.write_text(text, encoding="utf-8", errors="backslashreplace")


def model_json(model: BaseModel, **options: Any) -> str:
    """``model.model_dump_json(**options)``, which refuses a lone surrogate (a path given in bytes
    the locale cannot decode); then that of a copy whose strings are printable."""
    from pydantic_core import PydanticSerializationError

    try:
        return model.model_dump_json(**options)
    except PydanticSerializationError:
        return printable_copy(model).model_dump_json(**options)


def printable_copy(value: Any) -> Any:
    """``value`` with every string in it printable: models, lists, tuples and dicts copied, the rest as it is."""
    from pydantic import BaseModel

    if isinstance(value, str):
        return printable(value)
    if isinstance(value, BaseModel):
        return value.model_copy(update={name: printable_copy(getattr(value, name)) for name in type(value).model_fields})
    if isinstance(value, list | tuple):
        return type(value)(printable_copy(item) for item in value)
    if isinstance(value, dict):
        return {printable_copy(key): printable_copy(item) for key, item in value.items()}
    return value
