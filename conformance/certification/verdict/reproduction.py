"""How a finding is reached again: the command that replays a shrunk counterexample through the
implementation as the certification reached it (PROTO-18, PROTO-15, DIALECT-7), and the file beside
the report that holds it. The same command on the console, in report.md and in report.json."""

import json
from dataclasses import dataclass
from pathlib import Path

from kvspec.adapters.interface import AdapterConfig
from kvspec.conformance.certification.findings.divergence import Divergence
from kvspec.conformance.core.commands import reaching, shell_command
from kvspec.reference import ReplayConfig
from kvspec.reference.constants import REPLY_TIMEOUT, START_TIMEOUT
from kvspec.reference.dialects import CANONICAL, Dialect, in_catalogue_order

DEFAULTS = ReplayConfig()  # the knobs `kvspec replay` takes without an option


@dataclass(frozen=True)
class Reproduction:
    """What a printed command needs to reach the implementation as the certification did: its
    adapter spec (PROTO-18), the dialect the finding was made against (DIALECT-7) and the deadlines
    it was held to (PROTO-15), so that the command gives the same finding again."""

    adapter: str
    dialect: Dialect = CANONICAL
    reply_timeout: float = REPLY_TIMEOUT
    start_timeout: float = START_TIMEOUT

    def replay_command(self, config: AdapterConfig, trace_file: Path) -> str:
        """The trace through the implementation in lockstep with the reference, in the finding's
        dialect: it stops at the divergence. Every knob the configuration gave goes with it, an
        LRU's or FIFO's S3FIFO knobs too where they are not the defaults (REPLAY-CONF-3 says they
        are ignored: an implementation that reads them shows it)."""
        # Each value joined to its option, for argparse takes -1.5e+308 (or -1) alone for an option
        words = ["kvspec", "replay", str(trace_file), *reaching(self.adapter, self.reply_timeout, self.start_timeout), "--policy",
                 config.policy, f"--capacity={config.capacity}", f"--block-size={config.block_size}"]
        if config.policy == "s3fifo" or config.small_ratio != DEFAULTS.small_ratio:
            words.append(f"--small-ratio={config.small_ratio!r}")
        if config.policy == "s3fifo" or config.max_freq != DEFAULTS.max_freq:
            words.append(f"--max-freq={config.max_freq}")
        if self.dialect:
            words += ["--variation", ",".join(in_catalogue_order(self.dialect))]
        return shell_command(words)

    def verify_command(self, case_file: Path) -> str:
        """The benefit or lifecycle operations' case through the implementation: `kvspec fixtures verify` replays it."""
        return shell_command(["kvspec", "fixtures", "verify", str(case_file), *reaching(self.adapter, self.reply_timeout, self.start_timeout)])


def counterexample_file(directory: Path, policy: str, number: int, divergence: Divergence) -> Path:
    """Where the report saves a finding's shrunk counterexample: a fixture case for the benefit
    operations and for the lifecycle's (requests in flight), a Mooncake trace for the requests."""
    if divergence.lifecycle is not None:
        return directory / f"{policy}-in-flight-counterexample-{number}.json"
    return directory / f"{policy}-counterexample-{number}.{'json' if divergence.benefit is not None else 'jsonl'}"


def trace_lines(trace: list[tuple[list[int], int]]) -> str:
    """The requests as a Mooncake trace, the JSON lines `kvspec replay` reads."""
    return "".join(
        json.dumps({"timestamp": 0, "input_length": length, "output_length": 0, "hash_ids": hashes}) + "\n" for hashes, length in trace
    )
