"""A FIFO prefix cache that speaks kvspec's adapter protocol: the program of the tutorial in
spec/adapter-protocol.md. Python's standard library only; run it as
    kvspec certify --adapter 'cmd:python3 examples/tutorial-fifo/fifo.py'
"""

import json
import sys

arrival: dict[int, None] = {}  # the resident hash ids, oldest first (FIFO-CAP-1)
capacity = block_size = 0


def reply(seq: int, **fields: object) -> None:
    print(json.dumps({"seq": seq, **fields}), flush=True)  # one line a reply, flushed (PROTO-1)


for line in sys.stdin:
    request = json.loads(line)  # Python's ints are exact: hash ids span all of int64 (PROTO-3)
    seq, cmd = request["seq"], request["cmd"]
    if cmd == "start":
        reply(seq, protocol=1, implementation={"name": "tutorial-fifo", "language": "python", "version": "1"},
              level="results", policies=["fifo"])
    elif cmd == "configure":
        config = request["config"]
        arrival.clear()  # configure always starts from an empty cache (PROTO-7)
        if not (1 <= config["capacity"] < 2**63 and 1 <= config["block_size"] < 2**63):
            reply(seq, ok=False, refused="REPLAY-CONF-1, REPLAY-CONF-2: capacity and block_size must be in [1, 2^63 - 1]")
        else:
            capacity, block_size = config["capacity"], config["block_size"]
            reply(seq, ok=True)
    elif cmd == "hit_tokens":
        blocks = 0
        for hash_id in request["hash_ids"]:  # the longest resident prefix; the cache is left as it is
            if hash_id not in arrival:
                break
            blocks += 1
        reply(seq, hit_tokens=min(blocks * block_size, request["input_length"]))
    elif cmd == "access":
        for hash_id in request["hash_ids"]:
            if hash_id not in arrival:  # a resident block changes nothing (FIFO-ACCESS-1)
                if len(arrival) == capacity:
                    del arrival[next(iter(arrival))]  # FIFO-EVICT-1: the head goes first
                arrival[hash_id] = None  # FIFO-ADMIT-1
        reply(seq, ok=True)
    elif cmd == "resident_count":
        reply(seq, resident_count=len(arrival))
    elif cmd == "stop":
        break  # exit 0 at once (PROTO-13)
