"""The tutorial's FIFO with requests in flight (step 4 of the tutorial in spec/adapter-protocol.md):
one pool of `capacity` slots shared by the requests running and the cache, as spec/lifecycle.md
says. Python's standard library only; run it as
    kvspec certify --adapter 'cmd:python3 examples/tutorial-fifo/fifo_in_flight.py'
"""

import json
import sys


class Request:
    def __init__(self, hash_ids: list[int], input_length: int) -> None:
        self.blocks, self.input_length = hash_ids, input_length
        self.computed = 0  # its blocks [0, computed) are computed (LIFE-COMPUTE-1)
        self.referenced: set[int] = set()  # each block once, while it runs (LIFE-ALLOC-2)
        self.held: set[int] = set()  # the blocks it holds outside the cache (LIFE-ALLOC-3)
        self.decoded = 0  # the blocks its decoding added, held too (LIFE-DECODE-1)
        self.hit_tokens: int | None = None  # set by its first allocation made (LIFE-HIT-1)
        self.recomputed_tokens = self.computed_before = 0  # LIFE-HIT-2


arrival: dict[int, None] = {}  # the resident hash ids, oldest first (FIFO-CAP-1)
refs: dict[int, int] = {}  # each referenced block's reference count, present only above 0 (LIFE-POOL-2)
pending: set[int] = set()  # the resident blocks not yet computed (LIFE-POOL-3)
requests: dict[int, Request] = {}  # the requests in flight, by id
capacity = block_size = 0


def held() -> int:
    return sum(len(r.held) + r.decoded for r in requests.values())  # the slots outside the cache (LIFE-POOL-1)


def evict() -> bool:
    """FIFO-LIFE-1, FIFO-LIFE-2: the evictable block nearest the head leaves; False when every block is referenced."""
    victim = next((h for h in arrival if h not in refs), None)  # a referenced block is never a victim (LIFE-EVICT-1)
    if victim is None:
        return False
    del arrival[victim]
    pending.discard(victim)
    return True


def admit(h: int) -> bool:
    """FIFO-ACCESS-1, FIFO-LIFE-1, FIFO-ADMIT-1: one access; whether h is resident after it."""
    if h not in arrival and (len(arrival) < capacity or evict()):
        arrival[h] = None
        pending.add(h)  # resident, not computed (LIFE-ALLOC-1)
    return h in arrival


def usable_prefix(hash_ids: list[int]) -> int:
    """LIFE-LOOKUP-1: k, the longest prefix of usable blocks (resident and computed)."""
    k = 0
    while k < len(hash_ids) and hash_ids[k] in arrival and hash_ids[k] not in pending:
        k += 1
    return k


def fits(request: Request) -> bool:
    """LIFE-ALLOC-4: its blocks that no other request references, each once, fit beside the blocks in use, or none is."""
    in_use = len(refs) + held()  # a waiting request references and holds nothing
    return not in_use or len(set(request.blocks) - refs.keys()) <= capacity - in_use


def count_hits(request: Request, k: int) -> None:
    tokens = min(k * block_size, request.input_length)
    if request.hit_tokens is None:
        request.hit_tokens = tokens  # LIFE-HIT-1: counted once, by the first allocation made
    else:  # LIFE-HIT-2: resumed after a preemption
        request.recomputed_tokens += max(0, min(request.computed_before * block_size, request.input_length) - tokens)


def allocate(request: Request) -> bool:
    """LIFE-ALLOC-1 to LIFE-ALLOC-4: whether the allocation is made."""
    k = usable_prefix(request.blocks)
    if not fits(request):
        return False  # the request goes on waiting; nothing changes, and no hit is counted (LIFE-HIT-1)
    count_hits(request, k)
    for h in request.blocks:
        if h not in request.held and not admit(h):
            request.held.add(h)  # LIFE-ALLOC-3: every block in the queue is referenced
        while len(arrival) + held() > capacity:
            evict()  # LIFE-ALLOC-3, LIFE-EVICT-2: LIFE-ALLOC-4's fit leaves a block to evict
    request.referenced = {h for h in request.blocks if h in arrival}  # LIFE-ALLOC-2
    for h in request.referenced:
        refs[h] = refs.get(h, 0) + 1
    return True


def release(request: Request) -> None:
    """LIFE-FINISH-1, LIFE-PREEMPT-1: its references dropped, its held blocks freed."""
    for h in request.referenced:
        refs[h] -= 1
        if not refs[h]:
            del refs[h]
    request.referenced, request.held, request.decoded = set(), set(), 0


def reply(seq: int, **fields: object) -> None:
    print(json.dumps({"seq": seq, **fields}), flush=True)  # one line a reply, flushed (PROTO-1)


for line in sys.stdin:
    message = json.loads(line)
    seq, cmd = message["seq"], message["cmd"]
    request = requests.get(message.get("id", -1))  # the request a lifecycle message names
    if cmd == "start":
        reply(seq, protocol=1, implementation={"name": "tutorial-fifo-in-flight", "language": "python", "version": "1"},
              level="results", policies=["fifo"], lifecycle=True)  # PROTO-35
    elif cmd == "configure":
        for part in (arrival, refs, pending, requests):
            part.clear()  # an empty pool, no request in flight (PROTO-7, LIFE-POOL-1)
        capacity, block_size = message["config"]["capacity"], message["config"]["block_size"]
        if 1 <= capacity < 2**63 and 1 <= block_size < 2**63:
            reply(seq, ok=True)
        else:
            reply(seq, ok=False, refused="REPLAY-CONF-1, REPLAY-CONF-2: capacity and block_size must be in [1, 2^63 - 1]")
    elif cmd == "hit_tokens":  # one request at a time, nothing pending: the replay (LIFE-LIMIT-1)
        reply(seq, hit_tokens=min(usable_prefix(message["hash_ids"]) * block_size, message["input_length"]))
    elif cmd == "access":
        for hash_id in message["hash_ids"]:
            admit(hash_id)
        pending.clear()  # the replay computes every block it serves
        reply(seq, ok=True)
    elif cmd == "resident_count":
        reply(seq, resident_count=len(arrival))
    elif cmd == "arrive":  # it waits; the cache is unchanged (LIFE-ARRIVE-1)
        requests[message["id"]] = Request(message["hash_ids"], message["input_length"])
        reply(seq, ok=True)
    elif cmd == "lookup":
        reply(seq, k=usable_prefix(request.blocks))
    elif cmd == "allocate":
        reply(seq, made=allocate(request))
    elif cmd == "compute":  # a block it does not reference is not its to compute (LIFE-COMPUTE-1)
        pending.difference_update(request.referenced.intersection(request.blocks[request.computed:message["upto"]]))
        request.computed = message["upto"]
        reply(seq, ok=True)
    elif cmd == "decode":  # LIFE-DECODE-1: a slot freed first when the pool is full, refused when none can be
        made = len(arrival) + held() < capacity or evict()
        request.decoded += made
        reply(seq, made=made)
    elif cmd == "finish":
        release(requests.pop(message["id"]))
        reply(seq, hit_tokens=request.hit_tokens, recomputed_tokens=request.recomputed_tokens)
    elif cmd == "preempt":  # LIFE-PREEMPT-1, LIFE-EVICT-3: its blocks no one is left to compute leave the cache
        uncomputed = request.referenced & pending
        release(request)
        for h in uncomputed - refs.keys():
            del arrival[h]
            pending.discard(h)
        request.computed_before, request.computed = request.computed, 0
        reply(seq, ok=True)
    elif cmd == "stop":
        break  # exit 0 at once (PROTO-13)
