"""The benefit-per-exclusive-byte policy of spec/benefit.md, its LRU baseline, its seeded traces
and the comparison between them. One module per group of sections:

- config: BEN-CONF-*, BEN-KEY-1, BEN-COST-*
- ledger: the shared-segment ledger, BEN-LEDGER-*
- score: BEN-ENTRY-*, BEN-SCORE-*
- policy: the clock, admission, hits and misses, grace, decay, ghosts, removal
- selection: the probation cap and victim selection, BEN-CAP-*, BEN-VICTIM-*
- lru: the LRU byte-budget baseline, BEN-LRU-*
- traces: the seeded traces, BEN-TRACE-*
- compare: the comparison, BEN-CMP-* (imported from its own module: its pydantic models took 0.06 s of
  every `kvspec replay --serve`, whose service model needs the model alone)
"""

from .config import BenefitConfig, CostSample
from .lru import LRUBaseline
from .policy import BenefitPolicy, Decision
from .selection import CapRepair, Victims
from .traces import TRACES, Access

__all__ = [
    "Access", "BenefitConfig", "BenefitPolicy", "CapRepair", "CostSample", "Decision", "LRUBaseline", "TRACES",
    "Victims",
]
