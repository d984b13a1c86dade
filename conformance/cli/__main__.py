"""`python -m kvspec.conformance.cli`: the kvspec command."""

from kvspec.conformance.cli import main

raise SystemExit(main())
