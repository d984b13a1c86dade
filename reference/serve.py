"""spec/lifecycle.md section 6: a trace served as a server runs it, through a Pool (reference/lifecycle.py).

Requests arrive at their timestamps and wait; each step of the server decodes one token of every
request decoding, gives the rest of its token budget to the prefills in admission order, and admits
the requests waiting, first come first served, while they fit. Time is counted in ticks, 1/(F x B)
of a millisecond for the pool's FLOP rate F and memory bandwidth B, so that every step's time is an
integer (LIFE-SERVE-6) and a stretch of steps in which nothing but decoding happens is summed in
closed form, exactly what stepping through it one step at a time would give.
"""

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from math import isqrt

from .errors import KvspecError, TraceError
from .lifecycle import Pool
from .lifecycle import Request as PoolRequest
from .replay import ReplayConfig, check_block_count, checked_total, hit_tokens
from .request import prefix_hit_blocks
from .service import SERVICE_FIELDS, Served, ServedRequest, ServiceModel
from .trace import Request


@dataclass(slots=True, eq=False)
class InService:
    """A request of the trace in the server: where it is in its prefill and decoding (LIFE-SERVE-4,
    LIFE-SERVE-5) and what the result reports of it (LIFE-SERVE-7)."""

    number: int  # its place in the trace, from 1
    line: int
    input_length: int
    output_length: int
    joined: int  # when it last joined the waiting queue (ticks)
    position: int = 0  # the tokens whose KV it has computed
    prefill_end: int = 0  # the tokens its prefill computes: its prompt, and what it had generated before a preemption
    generated: int = 0
    decoding_since: int = -1  # the step from which it decodes, one token a step; -1 while it does not
    waiting_ticks: int = 0
    preemptions: int = 0
    epoch: int = 0  # its events in the heap are those of this epoch; a preemption or a slot given starts another


class Server:
    """LIFE-SERVE-2 to LIFE-SERVE-6: the scheduler and its clock over one Pool."""

    def __init__(self, config: ReplayConfig, service: ServiceModel, add: Callable[[ServedRequest], None] | None) -> None:
        self.pool, self.service, self.add = self.empty_pool(config), service, add
        self.block_size = config.block_size
        model = service.model
        self.flops_per_token = 2 * model.parameters  # BEN-MODEL-3: a token at position p costs this and 4 x layers x hidden x p
        self.flops_per_position = 4 * model.layers * model.hidden
        self.weight_bytes = model.parameters * model.bytes_per_element
        self.kv_bytes = model.kv_bytes_per_token()
        self.rate, self.bandwidth, self.ticks_per_ms = service.flop_rate(), service.bandwidth(), service.ticks_per_ms()
        self.now = self.steps = self.chunked = 0  # chunked: the prefill tokens of the step being scheduled
        self.preempted = False  # whether the step being scheduled has preempted a request
        self.waiting: deque[int] = deque()
        self.running: list[int] = []  # in admission order: the newest last (LIFE-SERVE-5 preempts it)
        self.in_service: dict[int, InService] = {}
        self.decoders = 0
        self.decoding_positions = 0  # the sum of the decoding requests' positions at this step
        self.events: list[tuple[int, int, int, int]] = []  # (step, 0 to finish or 1 for a slot, request, epoch)
        self.waited_ticks = self.max_waited = self.peak_referenced = self.peak_running = 0
        small = config.policy == "s3fifo"
        self.result = Served(config.policy, config.block_size, config.small_ratio if small else None, config.max_freq if small else None,
                             config.capacity, {name: getattr(service, name) for name in SERVICE_FIELDS})

    def empty_pool(self, config: ReplayConfig) -> Pool:
        return Pool.empty(config)

    # LIFE-SERVE-2, LIFE-SERVE-3: the server's loop ----------------------------------------------

    def serve(self, records: Iterable[tuple[int, Request]], path: str) -> Served:
        """Every request of ``records`` served, to the last one's finish."""
        result, ticks_per_ms = self.result, self.ticks_per_ms
        arrivals = arrivals_in_order(records, self.block_size, path, result)
        upcoming = next(arrivals, None)
        arrives = upcoming[2].timestamp * ticks_per_ms if upcoming is not None else None  # in ticks, once a request
        while upcoming is not None or self.running or self.waiting:
            while arrives is not None and arrives <= self.now:
                self.arrive(*upcoming)
                upcoming = next(arrivals, None)
                arrives = upcoming[2].timestamp * ticks_per_ms if upcoming is not None else None
            self.preempted = False
            self.due_events()
            chunks = self.schedule()
            if chunks:
                self.run_step(chunks)
            elif self.decoders:
                # decoding alone until an event; an arrival matters only when nothing waits before it, and a step
                # that preempted admits nothing, so the next may (LIFE-SERVE-3)
                self.decode_stretch(arrives if not self.waiting else None, one_step=self.preempted)
            elif self.preempted:
                continue  # a step that preempted, with nothing to run: the next one admits (LIFE-SERVE-3)
            elif self.running or self.waiting:
                raise KvspecError("LIFE-SERVE-3: requests wait or run, and no step can be made (a bug of the served replay)")
            elif arrives is not None:
                self.now = max(self.now, arrives)  # idle until the next arrival
        result.peak_referenced_blocks, result.peak_running, result.steps = self.peak_referenced, self.peak_running, self.steps
        result.served_ms = self.ms(self.now)
        result.mean_waiting_ms = round(self.waited_ticks / ticks_per_ms / result.requests, 3) if result.requests else 0.0
        result.max_waiting_ms = self.ms(self.max_waited)
        result.final_cache_blocks = self.pool.policy.resident_count()
        result.kept_in_main = getattr(self.pool.policy, "kept_in_main", None)  # S3FIFO's alone
        return result

    # LIFE-SERVE-2: arrivals and the waiting queue ----------------------------------------------

    def arrive(self, number: int, line: int, record: Request) -> None:
        rid, ticks = number, record.timestamp * self.ticks_per_ms
        self.pool.arrive(rid, record.hash_ids, record.input_length)
        self.in_service[rid] = InService(number, line, record.input_length, record.output_length, ticks,
                                         prefill_end=record.input_length)
        self.waiting.append(rid)

    # LIFE-SERVE-3: one step's schedule ---------------------------------------------------------

    def schedule(self) -> list[tuple[int, int]]:
        """The prefill chunks of this step, (request, tokens), after its decoders' slots (LIFE-SERVE-5) and admissions."""
        chunks: list[tuple[int, int]] = []
        self.chunked = 0
        # the running requests in their prefill, looked for only when some are (each running request not decoding is)
        prefills = [rid for rid in self.running if self.in_service[rid].decoding_since < 0] if len(self.running) > self.decoders else []
        for rid in prefills:
            request = self.pool.requests.get(rid)
            if request is None or not request.running:
                continue  # preempted, or cut short, for an earlier one's slot (LIFE-SERVE-5)
            if self.budget() <= 0:
                break
            self.take_chunk(rid, chunks)
        # vLLM 0.33.0 scheduler.py:1050: a step that preempted admits no waiting request
        while self.waiting and not self.preempted and self.budget() > 0 and len(self.running) < self.service.max_running:
            rid = self.waiting[0]
            if not self.admit(rid):
                break  # vLLM 0.33.0 vllm/v1/core/sched/scheduler.py:1454-1461: first come first served, none passes the head
            self.take_chunk(rid, chunks)
        return chunks

    def take_chunk(self, rid: int, chunks: list[tuple[int, int]]) -> None:
        """LIFE-SERVE-4, LIFE-SERVE-5: the request's chunk of the budget left, once it holds the slots for it."""
        state = self.in_service[rid]
        tokens = self.chunk(state, self.budget())
        if self.slots_for(rid, state.position + tokens):
            chunks.append((rid, tokens))
            self.chunked += tokens

    def budget(self) -> int:
        """LIFE-SERVE-3: the step's tokens left: a token for each request decoding (a decoder preempted
        gives its token back, as vLLM's scheduler.py:950-956 does), and the chunks taken so far."""
        return self.service.step_tokens - self.decoders - self.chunked

    def chunk(self, state: InService, budget: int) -> int:
        """LIFE-SERVE-4: a prefill's tokens this step, within its prompt until the prompt is computed."""
        end = state.input_length if state.position < state.input_length else state.prefill_end
        return min(end - state.position, budget)

    def admit(self, rid: int) -> bool:
        """LIFE-SERVE-3, LIFE-SERVE-4: the head's allocation; made, it runs from its hit tokens, its
        last prompt token computed whatever it hits. (Alone in the pool, the allocation is the replay's
        access of the request's blocks, LIFE-LIMIT-1: hence LIFE-SERVE-8.)"""
        pool, state = self.pool, self.in_service[rid]
        request = pool.requests[rid]
        counted = request.hit_tokens is None  # LIFE-HIT-1: this allocation, if made, counts its hits
        resident = prefix_hit_blocks(request.blocks, pool.policy.is_resident) if counted else 0
        if not pool.allocate(rid):
            return False
        self.waiting.popleft()
        if counted:  # LIFE-SERVE-7: the tokens its lookup found resident but not yet computed (LIFE-LOOKUP-1)
            self.result.uncomputed_tokens += hit_tokens(resident, self.block_size, state.input_length) - (request.hit_tokens or 0)
        k = request.hit_blocks
        if k:
            pool.compute(rid, k)  # LIFE-COMPUTE-1: its hit blocks, at no cost
        state.position = min(k * self.block_size, state.input_length - 1)
        state.waiting_ticks += self.now - state.joined
        self.running.append(rid)
        self.pool_peaks()
        return True

    def pool_peaks(self) -> None:
        """LIFE-SERVE-7: referenced blocks and running requests are most just after an allocation."""
        self.peak_referenced = max(self.peak_referenced, len(self.pool.policy.refs))
        self.peak_running = max(self.peak_running, len(self.running))

    # LIFE-SERVE-5: slots past the prompt, and preemption ----------------------------------------

    def slots_for(self, rid: int, tokens: int) -> bool:
        """LIFE-SERVE-5: the request holds slots for ``tokens`` tokens, taking each it lacks by
        LIFE-DECODE-1; each refusal preempts the newest running request. False if it is itself preempted."""
        while not self.take_slots(rid, tokens):
            if self.running == [rid]:
                self.cut_short(rid)
                return False
            newest = self.running[-1]
            self.preempt(newest)
            if newest == rid:
                return False
        return True

    def take_slots(self, rid: int, tokens: int) -> bool:
        """LIFE-DECODE-1: the slots the request lacks for ``tokens`` tokens, one at a time; False at the
        first refused (those taken before it are kept)."""
        request = self.pool.requests[rid]
        while slots_for_tokens(request) * self.block_size < tokens:
            if not self.pool.decode(rid):
                return False
        return True

    def slots_held(self, rid: int) -> int:
        return slots_for_tokens(self.pool.requests[rid])

    def cut_short(self, rid: int) -> None:
        """LIFE-SERVE-5: refused a slot with no other request running, it finishes with what it has generated."""
        state = self.in_service[rid]
        if state.decoding_since >= 0:
            self.stop_decoding(state)
        self.result.cut_short += 1
        self.finish(rid, state)

    def preempt(self, rid: int) -> None:
        """LIFE-PREEMPT-1, LIFE-SERVE-2: back to the waiting queue's head, keeping what it generated."""
        state = self.in_service[rid]
        if state.decoding_since >= 0:
            self.stop_decoding(state)
        self.pool.preempt(rid)
        self.running.remove(rid)
        state.position, state.prefill_end = 0, state.input_length + state.generated
        state.preemptions += 1
        self.preempted = True
        state.epoch += 1
        state.joined = self.now
        self.waiting.appendleft(rid)

    # LIFE-SERVE-4, LIFE-SERVE-5: decoding, in step with every decoder ---------------------------

    def start_decoding(self, rid: int, state: InService) -> None:
        state.decoding_since = self.steps
        self.decoders += 1
        self.decoding_positions += state.position
        self.next_event(rid, state)

    def stop_decoding(self, state: InService) -> None:
        """Its position and tokens brought up to this step, as it leaves the decoders."""
        done = self.steps - state.decoding_since
        state.position += done
        state.generated += done
        state.decoding_since = -1
        self.decoders -= 1
        self.decoding_positions -= state.position

    def next_event(self, rid: int, state: InService) -> None:
        """The step at which the decoder finishes (LIFE-SERVE-5) or needs its next slot, whichever comes first."""
        done = self.steps - state.decoding_since
        position, generated = state.position + done, state.generated + done
        to_finish = state.output_length - generated
        to_slot = self.slots_held(rid) * self.block_size - position  # steps until a token has no slot
        heapq.heappush(self.events, (self.steps + min(to_finish, to_slot), 0 if to_finish <= to_slot else 1, rid, state.epoch))

    def due_events(self) -> None:
        """The decoders' events of this step: finishes first, then the slots (LIFE-SERVE-5)."""
        events = self.events
        while events and events[0][0] <= self.steps:
            _, kind, rid, epoch = heapq.heappop(events)
            state = self.in_service.get(rid)
            if state is None or state.epoch != epoch or state.decoding_since < 0:
                continue  # preempted, or finished, since it was pushed
            if kind == 0:
                self.stop_decoding(state)
                self.finish(rid, state)
                continue
            done = self.steps - state.decoding_since
            if self.slots_for(rid, state.position + done + 1):
                state.epoch += 1
                self.next_event(rid, state)

    def finish(self, rid: int, state: InService) -> None:
        """LIFE-FINISH-1 and LIFE-SERVE-7: its line of the result."""
        request = self.pool.finish(rid)
        self.running.remove(rid)
        del self.in_service[rid]
        assert request.hit_tokens is not None  # set by its first allocation made
        result = self.result
        result.requests += 1
        result.total_hit_tokens += request.hit_tokens
        result.total_recomputed_tokens += request.recomputed_tokens
        result.preemptions += state.preemptions
        self.waited_ticks += state.waiting_ticks
        self.max_waited = max(self.max_waited, state.waiting_ticks)
        if self.add is not None:
            self.add(ServedRequest(state.number, state.line, request.hit_tokens, state.input_length, request.recomputed_tokens,
                                   self.ms(state.waiting_ticks), state.preemptions, state.generated, self.ms(self.now)))

    def ms(self, ticks: int) -> float:
        return round(ticks / self.ticks_per_ms, 3)

    # LIFE-SERVE-6: the time of a step ------------------------------------------------------------

    def step_ticks(self, chunks: list[tuple[int, int]]) -> int:
        """A step's time: its FLOPs at the FLOP rate and its bytes read at the bandwidth, in ticks."""
        per_token, per_position = self.flops_per_token, self.flops_per_position
        flops = self.decoders * per_token + per_position * self.decoding_positions
        read = self.weight_bytes + self.kv_bytes * (self.decoding_positions + self.decoders)
        for rid, tokens in chunks:
            start = self.in_service[rid].position
            end = start + tokens
            flops += per_token * tokens + per_position * (end * (end - 1) - start * (start - 1)) // 2
            read += self.kv_bytes * end
        return 1000 * (flops * self.bandwidth + read * self.rate)

    def run_step(self, chunks: list[tuple[int, int]]) -> None:
        """One step with prefill chunks: each request's chunk computed, its blocks computed as they
        fill, and a prefill that ends generates its first token of this service."""
        self.now += self.step_ticks(chunks)
        self.steps += 1
        self.decoding_positions += self.decoders
        for rid, tokens in chunks:
            state = self.in_service[rid]
            state.position += tokens
            self.chunk_computed(rid, state)
            if state.position == state.prefill_end:
                state.generated += 1
                if state.generated == state.output_length:
                    self.finish(rid, state)
                else:
                    self.start_decoding(rid, state)

    def chunk_computed(self, rid: int, state: InService) -> None:
        """LIFE-SERVE-4: after the step, the request's blocks wholly inside its computed tokens, and all
        its blocks once its prompt is computed, are computed (LIFE-COMPUTE-1)."""
        request = self.pool.requests[rid]
        blocks = len(request.blocks)
        done = min(state.position // self.block_size, blocks) if state.position < state.input_length else blocks
        if done > request.computed:
            self.pool.compute(rid, done)

    def decode_stretch(self, until: int | None, one_step: bool = False) -> None:
        """Steps of decoding alone, to the next decoder's event or to the first step that starts at
        or after ``until`` ticks (an arrival), whichever is first (or ``one_step``): summed in closed form."""
        steps = 1 if one_step else self.events[0][0] - self.steps
        first, growth = self.stretch_ticks()
        # the root only when the stretch's last step would start at or after the arrival: the event came first in 19,305 of the
        # conversation trace's 19,367 stretches at 4,096 blocks, where steps_to_reach took 4 to 6 % of the served replay's time
        if until is not None and stretch_sum(first, growth, steps - 1) >= until - self.now:
            steps = steps_to_reach(first, growth, until - self.now)
        self.now += stretch_sum(first, growth, steps)
        self.steps += steps
        self.decoding_positions += self.decoders * steps

    def stretch_ticks(self) -> tuple[int, int]:
        """The ticks of the first step of decoding alone, and what each step after adds (each decoder one position on)."""
        first = self.step_ticks([])
        growth = 1000 * self.decoders * (self.flops_per_position * self.bandwidth + self.kv_bytes * self.rate)
        return first, growth


def slots_for_tokens(request: PoolRequest) -> int:
    """LIFE-SERVE-5: the slots a request's tokens have: its blocks, then the blocks its decoding holds
    past them (LIFE-DECODE-1); a block of its own held since its allocation (LIFE-ALLOC-3) is one of its blocks."""
    return len(request.blocks) + request.held - len(request.held_blocks)


def stretch_sum(first: int, growth: int, steps: int) -> int:
    """The ticks of ``steps`` steps of ticks first, first + growth, ...: the closed form of LIFE-SERVE-6's sum."""
    return steps * first + growth * steps * (steps - 1) // 2


def steps_to_reach(first: int, growth: int, gap: int) -> int:
    """The fewest steps, at least one, of ticks first, first + growth, ... that last ``gap`` ticks or more."""
    if gap <= first:
        return 1
    if growth == 0:
        return -(-gap // first)
    # n x first + growth x n(n - 1) / 2 >= gap: the root of the quadratic, then the integer beside it
    half = 2 * first - growth
    n = max(1, (isqrt(half * half + 8 * growth * gap) - half) // (2 * growth))
    while stretch_sum(first, growth, n) < gap:
        n += 1
    while n > 1 and stretch_sum(first, growth, n - 1) >= gap:
        n -= 1
    return n


def served(records: Iterable[tuple[int, Request]], config: ReplayConfig, service: ServiceModel, *, path: str = "<trace>",
           add: Callable[[ServedRequest], None] | None = None, server: type[Server] = Server) -> Served:
    """LIFE-SERVE-1 to LIFE-SERVE-7: the trace's requests served at their timestamps; each finished
    request's line to ``add``, in the order they finish."""
    return server(config, service, add).serve(records, path)


def arrivals_in_order(records: Iterable[tuple[int, Request]], block_size: int, path: str, result: Served) -> Iterator[tuple[int, int, Request]]:
    """LIFE-SERVE-2: the trace's requests, numbered, each checked, in the order of their timestamps."""
    last = 0
    for number, (line_number, record) in enumerate(records, start=1):
        check_block_count(path, line_number, record, block_size)
        result.total_prompt_tokens = checked_total(path, line_number, result.total_prompt_tokens + record.input_length)
        if record.timestamp < last:
            raise TraceError(path, line_number, "timestamp", "LIFE-SERVE-2",
                             f"{record.timestamp} is before the line before's {last}: a served replay reads the requests in the order they arrive")
        if record.output_length < 1:
            raise TraceError(path, line_number, "output_length", "LIFE-SERVE-5", "a served request generates at least one token")
        last = record.timestamp
        yield number, line_number, record
