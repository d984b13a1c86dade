"""Output files are written whole or not at all (REPLAY-TRACE-7)."""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def written_whole(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix), renamed to ``path`` only if the block
    succeeds: a reader never sees a partial file, and a failure leaves ``path`` as it was."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.close(handle)
    try:
        yield Path(temporary)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
