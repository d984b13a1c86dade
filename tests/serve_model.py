"""An independent, literal model of spec/lifecycle.md section 6 (LIFE-SERVE-1 to LIFE-SERVE-8), the
served replay, written from the spec text alone (not from reference/serve.py).

One loop iteration is one step (or one wait for the next arrival); nothing is summed in closed form.
The cache is reference/lifecycle.py's Pool; only the scheduler and the clock are modelled here.

Readings of the text where it leaves a choice:

- LIFE-SERVE-4's "always its last prompt token" holds for a resumed request too.
- A step that preempted admits no request (LIFE-SERVE-3), and one with nothing to run then is no step.
- A request cut short finishes at the start of the step in which it is refused its slot.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kvspec.reference.benefit.model import Model
from kvspec.reference.lifecycle import Pool
from kvspec.reference.replay import ReplayConfig
from kvspec.reference.trace import Request


@dataclass
class Service:
    max_running: int = 1024
    step_tokens: int = 8192
    gpus: int = 8
    flops_per_second: int = 4 * 10**14
    memory_bytes_per_second: int = 335 * 10**10
    model: Model = field(default_factory=Model)


@dataclass
class Line:
    line: int
    hit_tokens: int = 0
    prompt_tokens: int = 0
    recomputed_tokens: int = 0
    waiting_ticks: int = 0
    preemptions: int = 0
    output_tokens: int = 0
    finished_ticks: int = 0
    cut_short: bool = False


@dataclass
class Result:
    lines: list[Line]  # in the order the requests finish
    steps: int = 0
    preemptions: int = 0
    cut_short: int = 0
    peak_referenced_blocks: int = 0
    peak_running: int = 0
    last_finish_ticks: int = 0
    final_cache_blocks: int = 0
    ticks_per_ms: int = 1


@dataclass
class Flight:
    """A request in flight, as the scheduler sees it."""

    rid: int
    line: int
    req: Request
    n: int  # its blocks
    generated: int = 0  # output tokens generated so far (kept across preemptions)
    computed_tokens: int = 0  # tokens computed in its current run
    computed_blocks: int = 0  # blocks computed in its current run (LIFE-COMPUTE-1)
    decode_held: int = 0  # held blocks past its n blocks (LIFE-DECODE-1)
    joined: int = 0  # tick it last joined the waiting queue
    counted: bool = False  # LIFE-HIT-1 counted
    computed_before: int = 0  # blocks computed when last preempted (LIFE-HIT-2)
    out: Line = None  # type: ignore[assignment]

    @property
    def L(self) -> int:
        return self.req.input_length

    prefill_to: int = 0  # the tokens its current prefill computes up to, fixed when it is allocated

    def target(self) -> int:
        """The tokens its prefill computes up to: its prompt and the tokens it had generated when allocated (LIFE-SERVE-4)."""
        return self.prefill_to

    def prefilling(self) -> bool:
        return self.computed_tokens < self.prefill_to


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def serve_model(records: list[tuple[int, Request]], config: ReplayConfig, service: Service) -> Result:
    bs = config.block_size
    model = service.model
    F = service.gpus * service.flops_per_second
    B = service.gpus * service.memory_bytes_per_second
    tpm = F * B  # ticks per millisecond (LIFE-SERVE-6)
    kv = model.kv_bytes_per_token()
    pool = Pool.empty(config)

    def token_flops(p: int) -> int:
        return 2 * model.parameters + 4 * model.layers * model.hidden * p

    arrivals = deque((rid, line, req) for rid, (line, req) in enumerate(records))
    waiting: deque[Flight] = deque()
    running: list[Flight] = []  # in the order admitted
    result = Result(lines=[], ticks_per_ms=tpm)
    now = 0
    preempted = [False]  # whether this step has preempted a request

    def preempt(f: Flight) -> None:
        pool.preempt(f.rid)
        running.remove(f)
        f.computed_before = f.computed_blocks
        f.computed_tokens = f.computed_blocks = f.decode_held = 0
        f.out.preemptions += 1
        result.preemptions += 1
        preempted[0] = True
        f.joined = now
        waiting.appendleft(f)  # LIFE-SERVE-2: back to the queue's head

    def finish(f: Flight, at: int) -> None:
        pool.finish(f.rid)
        running.remove(f)
        f.out.output_tokens = f.generated
        f.out.finished_ticks = at
        result.lines.append(f.out)
        result.last_finish_ticks = max(result.last_finish_ticks, at)

    def cut_short(f: Flight) -> None:
        """LIFE-SERVE-5: refused a slot with no other request running, it finishes now."""
        f.out.cut_short = True
        result.cut_short += 1
        finish(f, now)

    def take_slots(f: Flight, upto: int) -> str:
        """LIFE-SERVE-5: the slots for computing f's tokens up to ``upto``: 'ok', 'preempted' (f itself) or 'cut'."""
        need = max(0, ceil_div(upto, bs) - f.n)
        while f.decode_held < need:
            if pool.decode(f.rid):
                f.decode_held += 1
                continue
            if running == [f]:
                return "cut"
            victim = running[-1]
            preempt(victim)
            if victim is f:
                return "preempted"
        return "ok"

    while arrivals or waiting or running:
        # LIFE-SERVE-2: every request arrived by now has joined the back of the queue
        while arrivals and arrivals[0][2].timestamp * tpm <= now:
            rid, line, req = arrivals.popleft()
            pool.arrive(rid, list(req.hash_ids), req.input_length)
            f = Flight(rid, line, req, len(req.hash_ids), joined=req.timestamp * tpm)
            f.out = Line(line, prompt_tokens=req.input_length)
            waiting.append(f)

        budget = service.step_tokens
        preempted[0] = False
        batch: list[tuple[Flight, int, int]] = []  # (request, first token computed, end)

        # LIFE-SERVE-3: the decoding requests, their slots then a token each
        decoding = [f for f in running if not f.prefilling()]
        for f in decoding:
            if f not in running:
                continue  # preempted by an earlier one's slot
            status = take_slots(f, f.computed_tokens + 1)
            if status == "cut":
                cut_short(f)
                continue
            if status == "preempted":
                continue
            batch.append((f, f.computed_tokens, f.computed_tokens + 1))
            budget -= 1

        # the prefilling requests, in the order admitted, chunks of what is left
        def chunk(f: Flight, start: int) -> int:
            end = min(f.target(), start + budget)
            if start < f.L:
                end = min(end, f.L)  # a chunk ends at the end of the prompt while the prompt is not all computed
            return end

        for f in [f for f in running if f.prefilling()]:
            if budget < 1:
                break
            if f not in running or any(g is f for g, _, _ in batch):
                continue
            start = f.computed_tokens
            end = chunk(f, start)
            status = take_slots(f, end)
            # a request preempted for this slot leaves the step, and gives back its budget
            batch = [(g, s, e) for g, s, e in batch if g in running]
            budget = service.step_tokens - sum(e - s for _, s, e in batch)
            if status == "cut":
                cut_short(f)
                continue
            if status == "preempted":
                continue
            batch.append((f, start, end))  # sized before its slots were taken: a token given back goes to the chunks after
            budget -= end - start

        # admissions from the head of the waiting queue
        while not preempted[0] and budget > 0 and len(running) < service.max_running and waiting:
            f = waiting[0]
            k = pool.lookup(f.rid)
            if not pool.allocate(f.rid):
                break  # LIFE-ALLOC-4 refused: no request passes the head
            waiting.popleft()
            if k:
                pool.compute(f.rid, k)  # its hit blocks, computed when its allocation is made (LIFE-SERVE-4)
            f.computed_blocks = k
            hits = min(k * bs, f.L)
            if not f.counted:
                f.out.hit_tokens = hits
                f.counted = True
            else:  # LIFE-HIT-2
                c = f.computed_before
                f.out.recomputed_tokens += max(0, min(c * bs, f.L) - hits)
            f.out.waiting_ticks += now - f.joined
            running.append(f)
            result.peak_running = max(result.peak_running, len(running))
            result.peak_referenced_blocks = max(result.peak_referenced_blocks, len(pool.policy.refs))
            start = min(hits, f.L - 1)
            f.computed_tokens = start
            f.prefill_to = f.L + f.generated
            end = chunk(f, start)
            status = take_slots(f, end)
            if status != "ok":  # cannot happen under the literal reading: a first chunk ends within the prompt
                raise AssertionError(f"admission chunk needs slots: {status}")
            batch.append((f, start, end))
            budget -= end - start

        if not batch:
            # LIFE-SERVE-3: nothing to run: the next step at once if this one preempted, else wait for the next arrival
            if preempted[0]:
                continue
            if not arrivals:
                if waiting or running:
                    raise AssertionError("stuck: requests in flight, nothing runs, and nothing arrives")
                break
            now = max(now, arrivals[0][2].timestamp * tpm)
            continue

        # LIFE-SERVE-6: the step's time
        flops = sum(token_flops(p) for _, s, e in batch for p in range(s, e))
        read = model.parameters * model.bytes_per_element + sum(e * kv for _, s, e in batch)
        ticks = 1000 * (flops * B + read * F)
        end_time = now + ticks
        result.steps += 1

        # after the step: computed tokens and blocks, generated tokens, finishes
        done: list[Flight] = []
        for f, s, e in batch:
            f.computed_tokens = e
            blocks = f.n if e >= f.L else e // bs
            if blocks > f.computed_blocks:
                pool.compute(f.rid, blocks)
                f.computed_blocks = blocks
            if e == f.L + f.generated:  # a prefill's last step, or a decode step, generates a token
                f.generated += 1
                if f.generated >= f.req.output_length:
                    done.append(f)
        for f in running[:]:
            if f in done:
                finish(f, end_time)
        now = end_time

    result.final_cache_blocks = pool.policy.resident_count()
    return result

