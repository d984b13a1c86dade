"""Serves a trace in vLLM's dialect (reference/dialects/in_flight.py, spec/dialects.md section 9) and
mirrors every pool operation of it into vLLM's real KVCacheManager, request by request and operation
by operation, and prints the first operation where they differ.

    $V/python docs/certifications/vllm/check_served.py [--random N]

Run it in the venv holding vLLM ($V of README.md's "Installing it"), with kvspec installed there too
(pip install -e). The manager is adapter.py's (capacity + 1 blocks, block 0 the null block; the
block at position i with hash id h holds the token ids [h] * block_size), with vLLM's max_model_len
= capacity x block_size (LIFE-VLLM-1). One vLLM Request a kvspec request, kept across its preemptions; the tokens it
generates are appended to it as it generates them, each an id no prompt holds and no other request or
position generates, so that its output blocks hash apart (LIFE-VLLM-2). The operations, as vLLM's
scheduler makes them (vllm/v1/core/sched/scheduler.py):

- each chunk (LIFE-VLLM-6): its tokens, as the scheduler counts them (what is left of the request's
  tokens, at most the budget left: :1306, :1346; :839-848), the budget spent in the running
  requests' order (:794), against kvspec's chunk; and each slot request's place in the step, which
  must follow the running requests' order, a new request's last;
- admission (LIFE-VLLM-4, LIFE-VLLM-5): get_computed_blocks, its hit against the pool's lookup; then,
  where kvspec takes the first chunk's slots, one allocate_slots(request, chunk, hit, blocks,
  full_sequence_must_fit=True) (:1435-1449), which must succeed exactly when kvspec's admission and
  its chunk's slots are made; a refused admission, the same call, which must refuse too;
- each later chunk or decoding slot (LIFE-VLLM-6): allocate_slots(request, tokens - computed) (:914),
  made or refused as kvspec's;
- finish and preemption (LIFE-VLLM-8): free(request) (:3089); a preemption also resets the request as
  _preempt_request does (:1799-1850: status PREEMPTED, num_computed_tokens 0).

vLLM calls allocate_slots for each decoding request at every step, caching its blocks as they fill;
kvspec, when the request next needs a slot or ends (LIFE-VLLM-7), one step later, where only the
request itself could look them up. So the script makes those calls at kvspec's moments: before a
decoding request's free, the call its last step made (allocate_slots(request, 1) from one token
back), which takes no block. After every operation it compares the free block count, the cached
blocks (a multiset: each vLLM block hash named by the kvspec block at the same position of the same
request, one name a hash and one hash a name, else the naming differs) and the free queue, head to
tail. Both bundled traces at block size 512 and capacities 256, 1,024 and 4,096 under the default
service model; then N random small traces (capacities 2 to 16, block sizes 1 to 4, small step
budgets, long outputs, close arrivals) that preempt often. Exit status 1 if any operation differs.
"""

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

from vllm.sampling_params import SamplingParams
from vllm.v1.core.kv_cache_utils import get_block_hash
from vllm.v1.request import Request, RequestStatus

from kvspec.reference import ReplayConfig
from kvspec.reference.dialects import dialect_for
from kvspec.reference.dialects.in_flight import VllmRequest, VllmServer
from kvspec.reference.serve import InService
from kvspec.reference.service import ServiceModel
from kvspec.reference.trace import Request as TraceRequest
from kvspec.reference.trace import TraceFile, bundled_trace_path

sys.path.insert(0, str(Path(__file__).parent))
from adapter import kv_cache_manager  # noqa: E402  (beside this script, not a package)

TRACES = ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz")
CAPACITIES = (256, 1024, 4096)
MOONCAKE_BLOCK_SIZE = 512
OUTPUT_IDS = 10**15  # above every prompt's hash ids: request r's token at position p is OUTPUT_IDS + r * 2**32 + p
UNNAMED = "a block kvspec never named"


class Disagreement(Exception):
    """The first operation where vLLM and kvspec differ."""


# What a run counts, a tally (a Counter of these names): runs, requests, operations, preemptions, refused (LIFE-VLLM-3);
# admissions_refused (LIFE-VLLM-5) and slots_refused (LIFE-VLLM-6, each preempting a request) by the pool;
# own_output_hits, a resumed request's hit past its prompt's whole blocks (LIFE-VLLM-2); uncomputed_tokens,
# hits on blocks their step computes (LIFE-VLLM-7); held_twice, operations leaving a block cached in two slots.
class CheckedServer(VllmServer):
    """VllmServer with each pool operation mirrored into vLLM's KVCacheManager and the two pools compared."""

    def __init__(self, config: ReplayConfig, service: ServiceModel) -> None:
        super().__init__(config, service, None)
        self.manager, self.hasher = kv_cache_manager(config.capacity, config.block_size, self.max_model_len)
        self.vllm: dict[int, Request] = {}
        self.pending: dict[int, tuple] = {}  # an admission made, before its first chunk's slots: get_computed_blocks' answer
        self.decoding: set[int] = set()  # the requests that have decoded since their admission
        self.name_of: dict[bytes, int] = {}  # vLLM block hash -> kvspec block
        self.hash_of: dict[int, bytes] = {}
        self.paired: dict[int, int] = {}  # per request: the positions whose names are compared
        self.operations = 0
        self.last_place = (-1, 0)  # the step and running index of the last slot request
        self.counts = Counter()

    # the operations --------------------------------------------------------------------------

    def arrive(self, number: int, line: int, record) -> None:
        super().arrive(number, line, record)
        if number in self.in_service:  # LIFE-VLLM-3: vLLM's input processor refuses the others before the scheduler
            tokens = [h for h in record.hash_ids for _ in range(self.block_size)][:record.input_length]
            params = SamplingParams(max_tokens=self.in_service[number].output_length)
            self.vllm[number] = Request(str(number), tokens, params, None, block_hasher=self.hasher)
            self.paired[number] = 0

    def admit(self, rid: int) -> bool:
        request, state = self.synced(rid), self.in_service[rid]
        blocks, hit, _ = self.manager.get_computed_blocks(request)
        k = self.pool.lookup(rid, state.prefill_end)
        # kvspec's admission touches its hit blocks, vLLM's not until the chunk's allocate_slots: pools compared after it
        self.operation("get_computed_blocks", rid, hit, k * self.block_size, compare_pools=False)
        self.counts["own_output_hits"] += k > self.pool.requests[rid].whole
        made = super().admit(rid)
        self.counts["admissions_refused"] += not made
        if made:
            self.pending[rid] = (blocks, hit)
            return True
        chunk = min(state.prefill_end - hit, self.budget())
        refused = self.manager.allocate_slots(request, chunk, hit, blocks, full_sequence_must_fit=True) is None
        self.operation("allocate_slots (admission refused by kvspec)", rid, "refused" if refused else "made", "refused")
        return False

    def take_chunk(self, rid: int, chunks: list[tuple[int, int]]) -> None:
        """The chunk's tokens, as vLLM's scheduler counts them: all the request's tokens past those computed,
        at most the budget left (scheduler.py:1306, :1346 for an admission; :839-848 for a running request)."""
        state, request = self.in_service[rid], self.synced(rid)
        budget = self.budget()
        # vLLM's loop over the running requests (:794) spends the budget in their order: the decoders after this
        # one have not yet taken their tokens from it (LIFE-SERVE-3 gives every decoder its token first)
        later = self.running[self.running.index(rid) + 1:] if rid in self.running else []
        theirs = budget + sum(self.in_service[other].decoding_since >= 0 for other in later)
        self.operation("the chunk's tokens", rid, min(request.num_tokens - state.position, theirs), self.chunk(state, budget),
                       compare_pools=False)
        super().take_chunk(rid, chunks)

    def take_slots(self, rid: int, tokens: int) -> bool:
        request, computed = self.synced(rid), computed_tokens(self.in_service[rid], self.steps)
        # vLLM allocates a step's slots in the running requests' order (:794, :912), a new one's last (:1435)
        place = (self.steps, self.running.index(rid))
        self.operation("the order of the step's slot requests", rid, max(place, self.last_place), place, compare_pools=False)
        self.last_place = place
        if rid in self.pending:
            blocks, hit = self.pending[rid]
            what = "allocate_slots (admission and first chunk)"
            allocated = self.manager.allocate_slots(request, tokens - hit, hit, blocks, full_sequence_must_fit=True)
        else:
            what = "allocate_slots"
            request.num_computed_tokens = computed
            allocated = self.manager.allocate_slots(request, tokens - computed)
        took = super().take_slots(rid, tokens)
        self.counts["slots_refused"] += not took
        self.operation(f"{what} for {tokens} tokens", rid, allocated is not None, took)
        if took:
            self.pending.pop(rid, None)
        return took

    def start_decoding(self, rid: int, state: InService) -> None:
        self.decoding.add(rid)
        super().start_decoding(rid, state)

    def preempt(self, rid: int) -> None:
        request, state = self.synced(rid), self.in_service[rid]
        self.last_decoding_step(rid, request, computed_tokens(state, self.steps))
        self.manager.free(request)
        request.status, request.num_computed_tokens = RequestStatus.PREEMPTED, 0  # scheduler.py:1818-1819
        request.num_preemptions += 1
        super().preempt(rid)
        self.operation("free (preempted)", rid, None, None)

    def finish(self, rid: int, state: InService) -> None:
        request, kvspec_request = self.synced(rid), self.pool.requests[rid]
        self.last_decoding_step(rid, request, state.position)
        self.manager.free(request)
        super().finish(rid, state)
        self.operation("free (finished)", rid, None, None, kvspec_request)
        del self.vllm[rid], self.paired[rid]

    def last_decoding_step(self, rid: int, request: Request, computed: int) -> None:
        """The allocate_slots call of the request's last step, if it decoded: it caches the blocks its decoding
        filled, and takes no block (its slot was given at kvspec's slot request). Its pools are compared
        after the free, once kvspec has cached them too."""
        if rid not in self.decoding:
            return
        self.decoding.discard(rid)
        free = self.manager.block_pool.get_num_free_blocks()
        request.num_computed_tokens = computed - 1
        allocated = self.manager.allocate_slots(request, 1)
        taken = free - self.manager.block_pool.get_num_free_blocks()
        self.operation("allocate_slots (the last decoding step's)", rid, (allocated is not None, taken), (True, 0), compare_pools=False)

    def synced(self, rid: int) -> Request:
        """The vLLM request, holding every token kvspec's request has generated by this step."""
        request, state = self.vllm[rid], self.in_service[rid]
        generated = state.generated + (self.steps - state.decoding_since if state.decoding_since >= 0 else 0)
        have = request.num_output_tokens
        if generated > have:
            base = OUTPUT_IDS + rid * 2**32 + state.input_length
            request.append_output_token_ids([base + position for position in range(have, generated)])
        return request

    # the comparisons -------------------------------------------------------------------------

    def operation(self, what: str, rid: int, vllm: object, kvspec: object, kvspec_request: VllmRequest | None = None,
                  compare_pools: bool = True) -> None:
        """One operation made by both: its answers, the blocks it named, then the two pools."""
        self.operations += 1
        where = f"operation {self.operations}, {what} of request {rid} at step {self.steps}"
        if vllm != kvspec:
            raise Disagreement(f"{where}: vLLM {vllm}, kvspec {kvspec}")
        if not compare_pools:
            return
        self.pair(where, rid, kvspec_request or self.pool.requests[rid])
        self.counts["held_twice"] += len(self.pool.block_of) > len(self.pool.slots_of)
        for part, (theirs, ours) in self.pools().items():
            if theirs != ours:
                raise Disagreement(f"{where}: {part} differ: vLLM {theirs}, kvspec {ours}")

    def pair(self, where: str, rid: int, kvspec_request: VllmRequest) -> None:
        """LIFE-VLLM-2: the request's blocks named by both so far, position by position, one name one hash."""
        hashes, blocks = self.vllm[rid].block_hashes, kvspec_request.blocks
        for position in range(self.paired[rid], min(len(hashes), len(blocks))):
            block_hash, block = hashes[position], blocks[position]
            if self.name_of.setdefault(block_hash, block) != block or self.hash_of.setdefault(block, block_hash) != block_hash:
                raise Disagreement(f"{where}: position {position} is kvspec's block {block}, and vLLM's hash names "
                                   f"{self.name_of[block_hash]} (kvspec's block {block} hashes as {self.name_of.get(self.hash_of[block])})")
        self.paired[rid] = max(self.paired[rid], min(len(hashes), len(blocks)))

    def pools(self) -> dict[str, tuple[object, object]]:
        """(vLLM's, kvspec's): the free blocks, the cached blocks and the free queue, head first (None: a block holding no hash)."""
        block_pool, pool = self.manager.block_pool, self.pool
        queue = [self.named(block.block_hash) for block in block_pool.free_block_queue.get_all_free_blocks()]
        cached = Counter(self.named(block.block_hash) for block in block_pool.blocks if block.block_hash is not None)
        return {"free blocks": (block_pool.get_num_free_blocks(), pool.free()),
                "cached blocks": (cached, Counter(pool.block_of.values())),
                "free queues": (queue, [None] * pool.empty + [pool.block_of[slot] for slot in pool.queue])}

    def named(self, block_hash: bytes | None) -> int | str | None:
        return None if block_hash is None else self.name_of.get(get_block_hash(block_hash), UNNAMED)


def computed_tokens(state: InService, step: int) -> int:
    """The tokens whose KV the request has computed by this step (LIFE-SERVE-4), its decoding brought up to it."""
    return state.position + (step - state.decoding_since if state.decoding_since >= 0 else 0)


def run(name: str, records, config: ReplayConfig, service: ServiceModel) -> Counter[str]:
    server = CheckedServer(config, service)
    tally = server.counts
    try:
        result = server.serve(records, name)
        tally.update(requests=result.requests, preemptions=result.preemptions, refused=result.refused or 0,
                     uncomputed_tokens=result.uncomputed_tokens)
    except Disagreement as disagreement:
        print(f"  DIFFERENT {name}: {disagreement}")
        tally["disagreements"] = 1
    tally.update(runs=1, operations=server.operations)
    return tally


def described(tally: Counter[str]) -> str:
    return (f"{tally['requests']} requests ({tally['refused']} refused), {tally['preemptions']} preemptions, {tally['admissions_refused']} "
            f"admissions and {tally['slots_refused']} slots refused by the pool, {tally['own_output_hits']} resumed hits on their own "
            f"output, {tally['uncomputed_tokens']} tokens hit while their step computed them, {tally['held_twice']} operations leaving a "
            f"block cached twice; {tally['operations']} operations compared, {tally['disagreements']} disagreeing")


def mooncake(total: Counter[str]) -> None:
    for trace in TRACES:
        for capacity in CAPACITIES:
            start = time.monotonic()
            config = ReplayConfig("lru", capacity, MOONCAKE_BLOCK_SIZE, dialect=dialect_for("lru", "vllm"))
            tally = run(f"{trace} capacity {capacity}", TraceFile(bundled_trace_path(trace)).requests(), config, ServiceModel())
            total.update(tally)
            print(f"{trace} capacity {capacity}: {described(tally)}, {time.monotonic() - start:.0f} s")


def random_traces(total: Counter[str], examples: int) -> None:
    start, tally = time.monotonic(), Counter()
    for example, (records, capacity, block_size, service) in enumerate(random_runs(examples)):
        config = ReplayConfig("lru", capacity, block_size, dialect=dialect_for("lru", "vllm"))
        tally.update(run(f"random example {example} (capacity {capacity}, block size {block_size}, {service.step_tokens} "
                      f"tokens a step, at most {service.max_running} running)", records, config, service))
    total.update(tally)
    print(f"random: {tally['runs']} traces, {described(tally)}, {time.monotonic() - start:.0f} s")


def random_runs(examples: int):
    """(records, capacity, block size, service model) of each random trace: short alphabets of hash ids and
    shared prefixes, requests arriving 0 to 3 ms apart, outputs up to the pool's tokens, small step budgets."""
    rng = random.Random(9)
    for _ in range(examples):
        capacity, block_size = rng.randint(2, 16), rng.randint(1, 4)
        max_running = rng.randint(1, 8)
        service = ServiceModel(max_running=max_running, step_tokens=rng.randint(max_running, 8 * block_size + max_running))
        yield random_records(rng, capacity, block_size), capacity, block_size, service


def random_records(rng: random.Random, capacity: int, block_size: int) -> list[tuple[int, TraceRequest]]:
    alphabet, prompts, records, now = rng.randint(1, 4), [], [], 0
    for line in range(1, rng.randint(2, 30) + 1):
        blocks = rng.randint(1, capacity)
        if prompts and rng.random() < 0.6:  # a prefix of an earlier prompt, then anything
            earlier = rng.choice(prompts)
            hash_ids = earlier[:rng.randint(1, len(earlier))]
            hash_ids += [rng.randrange(alphabet) for _ in range(max(0, blocks - len(hash_ids)))]
        else:
            hash_ids = [rng.randrange(alphabet) for _ in range(blocks)]
        prompts.append(hash_ids)
        now += rng.choice((0, 0, 1, 3))
        length = (len(hash_ids) - 1) * block_size + rng.randint(1, block_size)
        records.append((line, TraceRequest(now, length, rng.randint(1, capacity * block_size), hash_ids)))
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=2000, help="random small traces (default 2000)")
    parser.add_argument("--no-mooncake", action="store_true", help="the random traces only")
    arguments = parser.parse_args()
    total = Counter()
    if not arguments.no_mooncake:
        mooncake(total)
    random_traces(total, arguments.random)
    print(f"{total['runs']} served replays: {described(total)}")
    return 1 if total['disagreements'] else 0


if __name__ == "__main__":
    sys.exit(main())
