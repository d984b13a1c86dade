"""A correct LRU (spec/lru.md) over the adapter protocol that breaks the protocol in one chosen
way at request N, counted from the last configure, so that every replay of an example fails alike:

    python tests/fakes/faulty.py FAULT N

FAULT is one of FAULTS below; N >= 1 (ignored by the stop faults). It needs nothing but Python,
so that kvspec restarts it in a few milliseconds after each failure.
"""

import json
import sys
import time
from collections import OrderedDict

# What the reply to the Nth request's hit_tokens (access, for "error") is instead of a correct one.
WRONG_HIT_TOKENS = {"big": "2**70", "nan": "NaN", "negative": "-1", "float": "3.0", "string": '"0"', "bool": "true", "null": "null"}
FAULTS = (*WRONG_HIT_TOKENS, "error", "exit", "hang", "seq", "stop-hang", "stop-status")


class LRU:
    def __init__(self, capacity: int, block_size: int) -> None:
        self.capacity, self.block_size = capacity, block_size
        self.recency: OrderedDict[int, None] = OrderedDict()

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        k = 0
        while k < len(hash_ids) and hash_ids[k] in self.recency:
            k += 1
        return min(k * self.block_size, input_length)

    def access(self, hash_ids: list[int]) -> None:
        for h in hash_ids:
            if h in self.recency:
                self.recency.move_to_end(h)
                continue
            if len(self.recency) >= self.capacity:
                self.recency.popitem(last=False)
            self.recency[h] = None


def reply(request: dict, cache: LRU | None) -> dict:
    cmd, seq = request["cmd"], request["seq"]
    if cmd == "start":
        return {"seq": seq, "protocol": 1, "implementation": {"name": "faulty", "language": "python", "version": "0"}, "level": "state",
                "policies": ["lru"]}
    assert cache is not None
    if cmd == "hit_tokens":
        return {"seq": seq, "hit_tokens": cache.hit_tokens(request["hash_ids"], request["input_length"])}
    if cmd == "access":
        cache.access(request["hash_ids"])
        return {"seq": seq, "ok": True}
    if cmd == "resident_count":
        return {"seq": seq, "resident_count": len(cache.recency)}
    return {"seq": seq, "small": [], "main": [[h, 0] for h in cache.recency], "ghost": []}


def main(fault: str, n: int) -> None:
    cache: LRU | None = None
    requests = 0
    for line in sys.stdin:
        request = json.loads(line)
        cmd, seq = request["cmd"], request["seq"]
        if cmd == "stop":
            if fault == "stop-hang":
                time.sleep(3600)
            sys.exit(1 if fault == "stop-status" else 0)
        if cmd == "configure":
            config = request["config"]
            if config["capacity"] < 1 or config["block_size"] < 1:
                print(json.dumps({"seq": seq, "ok": False, "refused": "REPLAY-CONF-1, REPLAY-CONF-2"}), flush=True)
                continue
            cache, requests = LRU(config["capacity"], config["block_size"]), 0
            print(json.dumps({"seq": seq, "ok": True}), flush=True)
            continue
        requests += cmd == "hit_tokens"
        if requests == n and fault != "stop-hang" and fault != "stop-status":
            if cmd == "hit_tokens" and fault in WRONG_HIT_TOKENS:
                print(f'{{"seq": {seq}, "hit_tokens": {WRONG_HIT_TOKENS[fault]}}}'.replace("2**70", str(2**70)), flush=True)
                continue
            if cmd == "hit_tokens" and fault == "exit":
                print("faulty: leaving at request", n, file=sys.stderr, flush=True)
                sys.exit(0)
            if cmd == "hit_tokens" and fault == "hang":
                time.sleep(3600)
            if cmd == "hit_tokens" and fault == "seq":
                print(json.dumps({"seq": seq + 1, "hit_tokens": 0}), flush=True)
                continue
            if cmd == "access" and fault == "error":
                print(json.dumps({"seq": seq, "error": f"faulty: out of blocks at request {n}"}), flush=True)
                continue
        print(json.dumps(reply(request, cache)), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in FAULTS:
        sys.exit(f"usage: faulty.py {{{','.join(FAULTS)}}} N")
    main(sys.argv[1], int(sys.argv[2]))
