"""kvspec's conformance tooling and the ``kvspec`` command line."""

import sys


def main() -> int:
    """The ``kvspec`` command. Importing it installs the reference's contracts, as KVSPEC_CONTRACTS
    asks: a value they refuse (or a broken install) is one line on stderr, like any bad input."""
    from kvspec.conformance.core.streams import sound_streams

    sound_streams()  # first: even that line needs a standard error
    try:
        from kvspec.conformance.cli import main as run
    except ImportError as error:
        print(f"kvspec: error: {error}", file=sys.stderr)
        return 1
    return run()
