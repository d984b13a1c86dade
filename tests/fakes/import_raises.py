"""An in-process implementation whose module fails as it is imported (PROTO-29)."""

raise ImportError("libkvcache.so: cannot open shared object file")


def make() -> None:  # never reached: the factory the adapter spec names
    pass
