"""`python -m kvspec.conformance.cli`: the kvspec command."""

from kvspec.conformance.core.streams import sound_streams

sound_streams()

from kvspec.conformance.cli import main  # noqa: E402 (the streams come first, as for the console script)

raise SystemExit(main())
