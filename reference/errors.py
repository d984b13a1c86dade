"""The two ways input is refused: a config that breaks a clause, a trace line that breaks one."""


class KvspecError(Exception):
    """Bad input, reported to the user as one line, never as a traceback."""


class ConfigError(KvspecError):
    """A configuration that a clause refuses."""

    def __init__(self, clause: str, message: str) -> None:
        super().__init__(f"{clause}: {message}")
        self.clause = clause


class TraceError(KvspecError):
    """A trace line that a clause refuses, located by file, line number and field."""

    def __init__(self, path: str, line: int, field: str, clause: str, message: str) -> None:
        super().__init__(f"{path}:{line}: field {field}: {clause}: {message}")
        self.path = path
        self.line = line
        self.field = field
        self.clause = clause
