"""The query-type mix of the happy path (HCAT §2 step 5.3: simple, multi-hop, inference, yes/no, multiple choice) in
the shares the campaign file sets (``generation.type_shares``).

``type_shares`` normalises what the campaign asks for: the listed ``query_types``, each with its share (absent: the
default share of ``DEFAULT_SHARES``, or an equal share for a type without one). ``type_sequence`` is the order in
which a stratum's request slots are handed out: a smooth weighted round-robin over the seeded type rotation, so any
run of ``SEQUENCE_LENGTH`` slots holds each type in proportion to its share (0.35 of 20 slots: 7). A slot whose type
does not fit its sentence (no partner chunk for multi-hop, no answer term or no distractors for multiple choice, no
causal clause for inference) asks a simple question instead, and a type's cases can fail validity more often than
another's: the kept mix is reported beside the target (``mix_report``), not assumed. No Dagster import.
"""

from __future__ import annotations

from hcat_pipeline.golden.generation import QUERY_TYPES, type_rotation

# yes/no at most a third of a stratum (golden.yes_no); multi-hop and multiple choice a tenth each: their cases cost two
# chunks / a distractor search and were the least often sound in the developers' reading (docs/golden_set.md); multi-hop
# is not in grounded.DEFAULT_TYPES (asked only when the campaign file lists it), its share applies when it is listed
DEFAULT_SHARES = {"simple": 0.35, "inference": 0.15, "yes_no": 0.30, "multi_hop": 0.10, "multiple_choice": 0.10}
SEQUENCE_LENGTH = 20


def type_shares(query_types, shares: dict[str, float] | None = None) -> dict[str, float]:
    """{type: share} over ``query_types`` (in their order), summing to 1. Raises on a share for a type not asked for, an
    unknown type or a negative share; every share 0 is an error too (nothing would be asked)."""
    types = list(dict.fromkeys(query_types))
    bad = [t for t in types if t not in QUERY_TYPES]
    if bad:
        raise ValueError(f"unknown query type(s) {bad}; expected some of {list(QUERY_TYPES)}")
    given = dict(shares or {})
    stray = sorted(set(given) - set(types))
    if stray:
        raise ValueError(f"type_shares names {stray}, which query_types does not list ({types})")
    if any(v < 0 for v in given.values()):
        raise ValueError(f"type_shares must not be negative: {given}")
    fallback = sum(DEFAULT_SHARES.values()) / len(DEFAULT_SHARES)
    raw = {t: float(given.get(t, DEFAULT_SHARES.get(t, fallback) if not given else 0.0)) for t in types}
    total = sum(raw.values())
    if total <= 0:
        raise ValueError(f"type_shares sum to 0 over {types}: nothing would be asked")
    return {t: v / total for t, v in raw.items()}


def type_sequence(shares: dict[str, float], seed: int, length: int = SEQUENCE_LENGTH) -> list[str]:
    """``length`` slots, each type about ``share × length`` times, interleaved (smooth weighted round-robin; ties in
    the seeded rotation's order). Types with share 0 never appear."""
    order = [t for t in type_rotation(list(shares), seed) if shares[t] > 0]
    credit = dict.fromkeys(order, 0.0)
    out = []
    for _ in range(length):
        for t in order:
            credit[t] += shares[t]
        pick = max(order, key=lambda t: (credit[t], -order.index(t)))
        credit[pick] -= 1.0
        out.append(pick)
    return out


def mix_report(kept_types: list[str], shares: dict[str, float]) -> dict:
    """{type: {target, kept, share}} of the kept happy-path cases against the target shares, plus ``off_target``: the
    types more than 10 points away from their share (a short type says so, with its count)."""
    n = len(kept_types)
    out: dict = {}
    off = []
    for t, share in shares.items():
        k = kept_types.count(t)
        got = k / n if n else 0.0
        out[t] = {"target": round(share, 3), "kept": k, "share": round(got, 3)}
        if n and abs(got - share) > 0.10:
            off.append(f"{t}: {k} of {n} ({got:.0%}) vs {share:.0%}")
    return {"by_type": out, "kept": n, "off_target": off}
