"""spec/lifecycle.md section 6: the service model of a served replay (LIFE-SERVE-1) and what it
reports (LIFE-SERVE-7); reference/serve.py is the server that runs it."""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import ConfigError
from .validation import INT64_MAX

if TYPE_CHECKING:
    from .benefit.model import Model


def llama_3_1_8b() -> "Model":
    """BEN-MODEL-1's model (imported when a server is made: reference/benefit loads pydantic, which `kvspec replay` does not)."""
    from .benefit.model import Model

    return Model()


SERVICE_FIELDS = ("max_running", "step_tokens", "gpus", "flops_per_second", "memory_bytes_per_second")


@dataclass(frozen=True, slots=True)
class ServiceModel:
    """LIFE-SERVE-1: the server's limits and speed, each default with its source."""

    max_running: int = 1024  # vLLM 0.33.0 vllm/engine/arg_utils.py:2995, max_num_seqs on an H100 (OpenAI server)
    step_tokens: int = 8192  # vLLM 0.33.0 vllm/engine/arg_utils.py:2991, max_num_batched_tokens there
    gpus: int = 8  # one node: a pool of 4,096 blocks of 64 MiB (BEN-MODEL-2) needs 256 GiB of HBM
    flops_per_second: int = 400 * 10**12  # each GPU's, BEN-MODEL-1
    memory_bytes_per_second: int = 3_350 * 10**9  # each GPU's: an H100 SXM's HBM3, 3.35 TB/s (NVIDIA's datasheet)
    model: "Model" = field(default_factory=llama_3_1_8b)

    def __post_init__(self) -> None:
        for name in SERVICE_FIELDS:
            value = getattr(self, name)
            if type(value) is not int or not 1 <= value <= INT64_MAX:
                raise ConfigError("LIFE-SERVE-1", f"{name} must be a positive integer of at most 2**63 - 1, not {value!r}")
        if self.max_running > self.step_tokens:  # vLLM 0.33.0 vllm/config/scheduler.py:331-335 refuses it too
            raise ConfigError("LIFE-SERVE-1", f"max_running {self.max_running} is more than step_tokens {self.step_tokens}: "
                                              "every request decoding takes a token of each step (give --max-running at most --step-tokens)")

    def flop_rate(self) -> int:
        return self.gpus * self.flops_per_second

    def bandwidth(self) -> int:
        return self.gpus * self.memory_bytes_per_second

    def ticks_per_ms(self) -> int:
        return self.flop_rate() * self.bandwidth()


@dataclass(slots=True)
class ServedRequest:
    """LIFE-SERVE-7: one request's line, in the order the requests finish."""

    request: int
    line: int
    hit_tokens: int
    prompt_tokens: int
    recomputed_tokens: int
    waiting_ms: float
    preemptions: int
    output_tokens: int
    finished_ms: float


@dataclass(slots=True)
class Served:
    """LIFE-SERVE-7: a served replay's result."""

    policy: str
    block_size: int
    small_ratio: float | None
    max_freq: int | None
    cache_capacity_blocks: int
    service: dict[str, int]
    dialect: list[str] | None = None  # DIALECT-6
    requests: int = 0
    total_hit_tokens: int = 0
    total_prompt_tokens: int = 0
    total_recomputed_tokens: int = 0
    preemptions: int = 0
    cut_short: int = 0
    refused: int | None = None  # LIFE-VLLM-3, LIFE-SGLANG-2, in an engine's dialect
    own_blocks: int | None = None  # LIFE-VLLM-2, LIFE-SGLANG-2: the requests' own blocks cached, in an engine's dialect
    uncomputed_tokens: int = 0
    kept_in_main: int | None = None
    peak_referenced_blocks: int = 0
    peak_running: int = 0
    mean_waiting_ms: float = 0.0
    max_waiting_ms: float = 0.0
    steps: int = 0
    served_ms: float = 0.0
    final_cache_blocks: int = 0
    per_request: list[ServedRequest] | None = None
