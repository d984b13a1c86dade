"""The probation charge of spec/benefit.md (BEN-LEDGER-5, BEN-ARITH-2, BEN-ARITH-3), decided from an
exact sum kept incrementally and a rigorous bound on how far the literal double sum can be from it.

The literal charge is one ceiling of a sum of doubles in a fixed order (reference/benefit/selection.py
probation_charge): over the probation entries in ascending key order, each entry's term
``float(exclusive_bytes) + fractional_bytes``, where fractional_bytes sums, in the order offered,
the share ``size / refs`` of each of its segments (refs: the entries that reference the segment).
Recomputing it is O(probation entries x segments). The indexed policy keeps instead, as entries and
references come and go, three integers:

- ``total``: S, the exact sum of the leaves of that computation, times 2**SCALE. The leaves are the
  doubles ``float(exclusive_bytes)`` (one per probation entry) and ``fl(size / refs)`` (one per
  probation entry and segment it references; as a segment's share is the same for each of its
  references, the segment adds ``p * fl(size / refs)``, p its probation references);
- ``additions``: A, the number of double additions the literal computation performs: per probation
  entry, one per segment (from 0.0), one for its exclusive bytes, one into the total (from 0.0);
- ``inexact``: how many leaves are not whole numbers.

Claim: with T the literal sum (before its ceiling), |T - S| <= gamma_A * S, gamma_A = A*u / (1 - A*u),
u = 2**-53; and T = S when no leaf is inexact and S <= 2**53.

Proof. Every leaf is a double x >= 0 and x * 2**SCALE is an integer: float(n) of an integer is an
integer; fl(size / refs) with size >= 1 and refs <= 2**64 (refs are distinct 64-bit keys,
BEN-KEY-1) is at least 2**-64, a normal double whose last bit is worth at least 2**(-64 - 52) =
2**-116 >= 2**-SCALE (a size of 0 gives 0). So S is an exact integer, each leaf converted exactly
(math.ldexp by a power of two and int() of a whole double are exact). In IEEE-754 binary64 with
round to nearest (BEN-ARITH-1), for doubles a, b >= 0 whose sum does not overflow (every sum here
is at most about 2**53), fl(a + b) = (a + b)(1 + d) with |d| <= u. Unrolling the literal
computation, T = sum of x_i * prod_{k <= h_i} (1 + d_ik), where h_i is the number of additions
leaf i goes through on its way to the total; h_i <= A. By Higham (Accuracy and Stability of
Numerical Algorithms, Lemma 3.1), |prod (1 + d_ik) - 1| <= gamma_{h_i} <= gamma_A when A*u < 1, so
|T - S| <= sum x_i * gamma_A = gamma_A * S, the leaves being non-negative. When every leaf is a
whole number and S <= 2**53, every partial sum, at either level, is a sum of some leaves: a whole
number in [0, 2**53], which a double represents, so every addition is exact and T = S.

So T lies in [S - E, S + E], E = ceil(A * S / (2**53 - A)) (in units of 2**-SCALE; E = 0 in the
exact case), and the charge ceil(T) in [ceil(S - E), ceil(S + E)], ceil being monotone. The
policy decides ``charge <= budget`` from these bounds when both agree, and knows the charge when
they are equal; otherwise it computes the literal charge (the fallback, counted).
"""

from functools import lru_cache
from math import ldexp

from kvspec.reference.benefit.ledger import Ledger

SCALE = 128  # every leaf times 2**SCALE is a whole number (the proof above needs 116)
EXACT_LIMIT = 2**53 << SCALE  # up to S = 2**53, a sum of whole leaves is computed exactly
DOUBLE_UNITS = 2**53  # 1 / u

# A segment's part of the probation charge: its probation references p, and its share (as
# share_terms gives it) and whether it is inexact, which each of the p counts once.
Shares = tuple[int, int, int]
# The cap walk's view of a segment it released references of: references, size, then as Shares.
Released = tuple[int, int, int, int, int]


def whole(exclusive_bytes: int) -> int:
    """The leaf float(exclusive_bytes), times 2**SCALE: a whole number, never inexact."""
    return int(float(exclusive_bytes)) << SCALE


@lru_cache(maxsize=1 << 16)  # a trace's segments mostly have one size, and few reference counts
def share_terms(size: int, refs: int) -> tuple[int, int]:
    """The leaf fl(size / refs) (BEN-LEDGER-3, the same int / int division as the reference's),
    times 2**SCALE, and 1 when it is not a whole number."""
    share = size / refs
    return int(ldexp(share, SCALE)), 0 if share.is_integer() else 1


def ceiling(scaled: int) -> int:
    """ceil(scaled / 2**SCALE), exactly."""
    return -((-scaled) >> SCALE)


def charge_bounds(total: int, additions: int, inexact: int) -> tuple[int, int]:
    """The least and the greatest value the probation charge ceil(T) can have, given S (``total``),
    A (``additions``) and the count of inexact leaves: equal when the charge is known."""
    if not inexact and total <= EXACT_LIMIT:
        exact = ceiling(total)
        return exact, exact
    error = -(-additions * total // (DOUBLE_UNITS - additions))
    return ceiling(total - error), ceiling(total + error)


def released_charge(segment_ids: list[int], ledger: Ledger, shares: dict[int, Shares],
                    released: dict[int, Released]) -> tuple[int, int]:
    """BEN-CAP-3: what one more cap victim's segments change of the charge (S and the inexact
    leaves), its references released in ``released``, the walk's scratch view of the segments it
    touches; the ledger itself untouched."""
    total = inexact = 0
    for segment_id in segment_ids:
        segment = ledger[segment_id]
        if len(segment.refs) == 1:  # the victim's alone, so no earlier victim's: it goes
            _, share, partial = shares[segment_id]
            total -= share
            inexact -= partial
            continue
        seen = released.get(segment_id)
        if seen is None:
            probation, share, partial = shares[segment_id]
            refs, size = len(segment.refs) - 1, segment.size
        else:
            refs, size, probation, share, partial = seen
            refs -= 1
        total -= probation * share
        inexact -= probation * partial
        probation -= 1
        if refs:  # the shares of the others rise
            if probation:
                share, partial = share_terms(size, refs)
                total += probation * share
                inexact += probation * partial
            released[segment_id] = (refs, size, probation, share, partial)
    return total, inexact
