"""kvspec's conformance tooling and the ``kvspec`` command line."""
