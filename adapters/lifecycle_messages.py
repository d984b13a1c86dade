"""The lifecycle's messages of the adapter protocol (spec/adapter-protocol.md section 7, PROTO-35 to
PROTO-44), one pydantic model each: a request's arrival, lookup, allocation, computation, decoding,
finish and preemption (spec/lifecycle.md section 2) and the pool's state, with the replies only they
have; adapters/protocol.py holds the other messages and every schema.
"""

from typing import Annotated, Literal

from pydantic import Field, create_model

from kvspec.reference.validation import INT64_MAX

from .wire_values import CMD, COUNT, INTEGER, Blocks, Count, Entries, HashId, Message, Seq

Positive = Annotated[int, Field(ge=1, le=INT64_MAX)]
RID = (f"PROTO-35: the request's id, its own among the requests in flight (LIFE-ARRIVE-1); a count, in [0, 2^63 − 1], which kvspec "
       f"chooses. {INTEGER}")

# Requests (kvspec -> implementation) -----------------------------------------------------------


class OfRequest(Message):
    """An operation on the request ``id`` in flight; each subclass names its ``cmd``."""

    cmd: str = Field(description=CMD)
    seq: Seq
    id: Count = Field(description=RID)


def id_request(cmd: str, doc: str) -> type[OfRequest]:
    """The request of the operation ``cmd`` on one request, which carries its id alone (PROTO-38, PROTO-39, PROTO-41 to PROTO-43)."""
    return create_model(f"{cmd.title()}Request", __base__=OfRequest, __doc__=doc, cmd=(Literal[cmd], Field(description=CMD)))  # type: ignore[valid-type]


class ArriveRequest(OfRequest):
    """PROTO-37: a request arrives and waits (LIFE-ARRIVE-1)."""

    cmd: Literal["arrive"] = Field(description=CMD)
    hash_ids: Blocks = Field(description="PROTO-37: the request's blocks, at least one, in order; an id may occur more than once "
                             "(REPLAY-TRACE-4).")
    input_length: Positive = Field(description=f"PROTO-37: the request's input length L ≥ 1, in tokens. {INTEGER}")


LookupRequest = id_request("lookup", "PROTO-38: a waiting request's lookup (LIFE-LOOKUP-1); it changes nothing.")
AllocateRequest = id_request("allocate", "PROTO-39: a waiting request's allocation (LIFE-ALLOC-1 to LIFE-ALLOC-4).")


class ComputeRequest(OfRequest):
    """PROTO-40: a running request computes its blocks up to ``upto`` (LIFE-COMPUTE-1)."""

    cmd: Literal["compute"] = Field(description=CMD)
    upto: Positive = Field(description="LIFE-COMPUTE-1: the step computes the request's blocks from the first it has not computed to "
                        f"upto, exclusive: then its blocks [0, upto) are computed. {INTEGER}")


DecodeRequest = id_request("decode", "PROTO-41: a running request that has computed all its blocks decodes one block (LIFE-DECODE-1).")
FinishRequest = id_request("finish", "PROTO-42: a running request that has computed all its blocks finishes (LIFE-FINISH-1).")
PreemptRequest = id_request("preempt", "PROTO-43: a running request is preempted and waits again (LIFE-PREEMPT-1).")


class LifecycleStateRequest(Message):
    """PROTO-44: only asked of a "state"-level implementation that offers the lifecycle."""

    cmd: Literal["lifecycle_state"] = Field(description=CMD)
    seq: Seq


# Replies (implementation -> kvspec) ------------------------------------------------------------


class LookupReply(Message):
    """PROTO-38: k, the hit blocks."""

    seq: Seq
    k: Count = Field(description=f"LIFE-LOOKUP-1: the longest prefix of the request's blocks that are all usable (resident and computed). "
                     f"{COUNT}")


class MadeReply(Message):
    """PROTO-39, PROTO-41: whether the allocation, or the decode block, is made."""

    seq: Seq
    made: bool = Field(description="LIFE-ALLOC-4, LIFE-DECODE-1: true when made; false when refused, which changes nothing. A JSON "
                       "boolean, never 1 or 0 (PROTO-16).")


class FinishReply(Message):
    """PROTO-42: the finished request's accounting (LIFE-HIT-1, LIFE-HIT-2)."""

    seq: Seq
    hit_tokens: Count = Field(description=f"LIFE-HIT-1: the request's hit tokens, counted once, at its first allocation made. {COUNT}")
    recomputed_tokens: Count = Field(description=f"LIFE-HIT-2: its recomputed tokens, summed over its preemptions. {COUNT}")


class LifecycleStateReply(Message):
    """PROTO-44: the pool, as a lifecycle case's ``state`` gives it (FIX-18)."""

    seq: Seq
    small: Entries = Field(description="PROTO-44: S3FIFO's small queue, head first, as [hash id, freq] pairs (PROTO-12); empty for LRU and "
                           "FIFO.")
    main: Entries = Field(description="PROTO-44: S3FIFO's main queue, LRU's recency queue or FIFO's arrival queue, head first, as [hash "
                          "id, freq] pairs (PROTO-12; freq 0 for LRU and FIFO).")
    ghost: list[HashId] = Field(description="PROTO-44: S3FIFO's ghost queue, head first, its hashes alone; empty for LRU and FIFO.")
    refs: list[tuple[HashId, Positive]] = Field(description="LIFE-POOL-2: each referenced block and its reference count (at least 1), as "
                                             "[hash id, count] pairs in ascending hash id order; a resident block absent is evictable. "
                                             f"{INTEGER}")
    pending: list[HashId] = Field(description="LIFE-POOL-3: the resident blocks not yet computed, in ascending hash id order.")
    held: Count = Field(description=f"LIFE-POOL-1: the blocks requests hold outside the cache. {COUNT}")


LIFECYCLE_REQUESTS = (ArriveRequest, LookupRequest, AllocateRequest, ComputeRequest, DecodeRequest, FinishRequest, PreemptRequest,
                      LifecycleStateRequest)
# PROTO-16: one schema file per message, by its file name's stem
LIFECYCLE_SCHEMAS: dict[str, type[Message]] = {
    "arrive-request": ArriveRequest, "lookup-request": LookupRequest, "allocate-request": AllocateRequest, "compute-request": ComputeRequest,
    "decode-request": DecodeRequest, "finish-request": FinishRequest, "preempt-request": PreemptRequest,
    "lifecycle_state-request": LifecycleStateRequest,
    "lookup-reply": LookupReply, "made-reply": MadeReply, "finish-reply": FinishReply, "lifecycle_state-reply": LifecycleStateReply,
}
