"""spec/dialects.md section 9, LIFE-VLLM-10 to LIFE-VLLM-16: the adapter protocol's lifecycle operations
(spec/adapter-protocol.md section 7) on vLLM's pool in flight, reference/dialects/in_flight.py's VllmPool.

The methods are reference/lifecycle.py Pool's, by name and arguments, so that whatever drives the
canonical Pool drives this one (reference/caches.py ``pool_for``). The caller plays vLLM's scheduler:
each method is the manager's call its clause names, on VllmPool's slots, free queue and block names.
"""

from dataclasses import dataclass, field

from ..contracts import ensure
from ..errors import KvspecError
from ..lifecycle import may_arrive, running_in, waiting_in
from ..replay import ReplayConfig
from .in_flight import VllmPool, VllmRequest, count_admission

NO_STEP = 0  # VllmPool.cache's step: the lifecycle has no steps, and only the served replay's same-step hits read it (LIFE-VLLM-7)


@dataclass(slots=True)
class Flight:
    """What the lifecycle keeps of a request beside its VllmRequest (LIFE-VLLM-10)."""

    count: int  # n, its hash ids: PROTO-36's bound of compute
    tokens: int  # t: its input length and the tokens its decodes generated, kept across preemptions
    computed: int = 0  # the blocks its computes have reached since its allocation (PROTO-36)


def slots_taken(lifecycle: "VllmLifecycle", rid: int, made: bool) -> bool:
    """LIFE-VLLM-12: a made allocation holds a slot for each block of its t tokens."""
    return not made or len(lifecycle.pool.requests[rid].table) == -(-lifecycle.flights[rid].tokens // lifecycle.pool.block_size)


@dataclass(slots=True, eq=False)
class VllmLifecycle:
    """LIFE-VLLM-10: vLLM's pool (LIFE-VLLM-1) under the lifecycle's operations, no max_model_len."""

    pool: VllmPool
    flights: dict[int, Flight] = field(default_factory=dict)

    @classmethod
    def empty(cls, config: ReplayConfig) -> "VllmLifecycle":
        """LIFE-VLLM-1, LIFE-VLLM-10: ``capacity`` empty slots."""
        return cls(VllmPool(config.dialect, config.capacity, config.block_size, config.capacity))

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        """LIFE-VLLM-10, LIFE-ARRIVE-1: the request waits, its t its input length; the pool is unchanged."""
        may_arrive(self.pool.requests, rid, hash_ids, input_length)
        self.pool.arrive(rid, hash_ids, input_length)
        self.flights[rid] = Flight(len(hash_ids), input_length)

    def lookup(self, rid: int) -> int:
        """LIFE-VLLM-11: LIFE-VLLM-4's k over its t tokens (``get_computed_blocks``); it changes nothing."""
        waiting_in(self.pool.requests, rid)
        return self.pool.lookup(rid, self.flights[rid].tokens)

    @ensure(lambda self, rid, result: slots_taken(self, rid, result), "LIFE-VLLM-12: a made allocation holds its slots")
    def allocate(self, rid: int) -> bool:
        """LIFE-VLLM-12: the lookup's k; made when the whole sequence fits (LIFE-VLLM-5), its hits touched and
        the slots of all its tokens taken, nothing cached (``delay_cache_blocks``); LIFE-HIT-1, LIFE-VLLM-15."""
        k, flight = self.lookup(rid), self.flights[rid]
        if not self.pool.allocate(rid, k, flight.tokens):
            return False
        self.pool.take(rid, -(-flight.tokens // self.pool.block_size))  # LIFE-VLLM-5's test left room for them
        request = self.pool.requests[rid]
        count_admission(request, k, self.pool.block_size, request.input_length)
        request.computed_tokens = k * self.pool.block_size  # the scheduler's num_computed_tokens: its hit
        flight.computed = 0
        return True

    def compute(self, rid: int, upto: int) -> None:
        """LIFE-VLLM-13: its blocks wholly inside upto × block_size tokens cached, or inside its t tokens at
        upto = n (the prompt's end recomputes any output it had generated)."""
        running_in(self.pool.requests, rid)
        flight = self.flights[rid]
        if not flight.computed < upto <= flight.count:
            raise KvspecError(f"LIFE-VLLM-13: request {rid} has computed {flight.computed} of its {flight.count} blocks; "
                              f"a compute goes from the first not computed, to {upto}")
        self.cache(rid, upto * self.pool.block_size if upto < flight.count else flight.tokens)
        flight.computed = upto

    def cache(self, rid: int, tokens: int) -> None:
        """LIFE-VLLM-13: ``cache_blocks`` up to ``tokens``, which caches nothing at or below what the request
        has computed (its hit among it), whose computed tokens then do not fall."""
        if tokens > self.pool.requests[rid].computed_tokens:
            self.pool.cache(rid, tokens, NO_STEP)

    def decode(self, rid: int) -> bool:
        """LIFE-VLLM-14: block_size tokens more, with one slot more, the free queue's head; refused, changing
        nothing, when the free queue is empty. Made, its whole blocks are cached."""
        flight = self.computed_all(rid, "LIFE-VLLM-14")
        tokens = flight.tokens + self.pool.block_size
        if not self.pool.take(rid, -(-tokens // self.pool.block_size)):
            return False
        flight.tokens = tokens
        self.cache(rid, tokens)
        return True

    def finish(self, rid: int) -> VllmRequest:
        """LIFE-VLLM-15: released as LIFE-VLLM-8 says (``free``); the request, with its hit and recomputed tokens."""
        self.computed_all(rid, "LIFE-VLLM-15")
        del self.flights[rid]
        return self.pool.finish(rid)

    def preempt(self, rid: int) -> None:
        """LIFE-VLLM-15: released as LIFE-VLLM-8 says; it waits again with its tokens, its computed prompt tokens noted."""
        running_in(self.pool.requests, rid)
        self.pool.preempt(rid)
        self.flights[rid].computed = 0

    def computed_all(self, rid: int, clause: str) -> Flight:
        """The running request ``rid``'s flight, which has computed all its blocks (PROTO-36)."""
        running_in(self.pool.requests, rid)
        flight = self.flights[rid]
        if flight.computed < flight.count:
            raise KvspecError(f"{clause}: request {rid} has computed {flight.computed} of its {flight.count} blocks")
        return flight
