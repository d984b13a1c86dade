"""spec/benefit.md section 19: what a prefix costs to prefill cold and to restore."""

from dataclasses import dataclass

from ..errors import ConfigError
from .config import CostSample


@dataclass(frozen=True)
class Model:
    """BEN-MODEL-1: Llama-3.1-8B, bf16 KV, 400 TFLOP/s prefill, 25 GB/s restore, by default."""

    name: str = "Llama-3.1-8B"
    layers: int = 32
    hidden: int = 4096
    kv_heads: int = 8
    head_dim: int = 128
    bytes_per_element: int = 2
    parameters: int = 8_030_000_000
    prefill_flops_per_second: int = 400 * 10**12
    restore_bytes_per_second: int = 25 * 10**9

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if name != "name" and (type(value) is not int or value < 1):
                raise ConfigError("BEN-MODEL-1", f"{name} must be a positive integer, not {value!r}")

    def kv_bytes_per_token(self) -> int:
        """BEN-MODEL-2."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.bytes_per_element

    def block_bytes(self, block_size: int) -> int:
        """BEN-MODEL-2: a whole page, filled or not."""
        return block_size * self.kv_bytes_per_token()

    def prefill_flops(self, tokens: int) -> int:
        """BEN-MODEL-3: the sum over positions 0..tokens-1 of 2 x parameters + 4 x layers x hidden x p."""
        return 2 * self.parameters * tokens + 2 * self.layers * self.hidden * tokens * (tokens - 1)

    def cost_of_prefix(self, blocks: int, block_size: int, input_length: int) -> CostSample:
        """BEN-MODEL-4: the first ``blocks`` blocks of a request of ``input_length`` tokens, in milliseconds."""
        tokens = min(blocks * block_size, input_length)
        cold = float(self.prefill_flops(tokens)) / (self.prefill_flops_per_second / 1000)
        restore = float(blocks * self.block_bytes(block_size)) / (self.restore_bytes_per_second / 1000)
        return CostSample(cold, restore)
