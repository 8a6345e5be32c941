"""Judges re-checked against people on a schedule (golden-eval §5.6: "a stratified sample of cases is dual-scored (judge +
human) on a recurring schedule … refuses to issue gate decisions when κ falls below a configurable floor"), pure core.

``recheck_due``: ``judge_validation`` is due again once ``min_new_labels`` new human labels have arrived since it last
ran, or ``max_interval_days`` have passed (``judge_recheck_sensor`` asks for it). ``stale_reason``: a validation older
than ``max_age_days`` no longer validates — the judge's rows stop deciding gates until it is re-run (and a re-run whose
κ fell below its rule leaves them undecided too). ``validation_note`` is what the report says of a validated judge:
κ with its CI, on how many labels, measured when.
"""

from __future__ import annotations

import datetime as dt

MIN_NEW_LABELS = 20
MAX_INTERVAL_DAYS = 7
MAX_AGE_DAYS = 30


def _age_days(at: str, now: dt.datetime) -> float:
    when = dt.datetime.fromisoformat(at)
    when = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    return (now - when).total_seconds() / 86400


def recheck_due(last_at: str | None, labels_then: int | None, labels_now: int, now: dt.datetime, min_new_labels: int = MIN_NEW_LABELS,
                max_interval_days: float = MAX_INTERVAL_DAYS) -> str | None:  # fmt: skip
    """Why ``judge_validation`` should run again now, or None."""
    if last_at is None:
        return "the judge was never validated"
    new = labels_now - (labels_then or 0)
    if new >= min_new_labels:
        return f"{new} new human label(s) since the last validation ({last_at[:10]}; at least {min_new_labels} re-check the judge)"
    age = _age_days(last_at, now)
    if age >= max_interval_days:
        return f"last validated {age:.0f} day(s) ago ({last_at[:10]}; re-checked every {max_interval_days:g} days)"
    return None


def stale_reason(validated_at: str | None, now: dt.datetime, max_age_days: float = MAX_AGE_DAYS) -> str | None:
    """Why a validation no longer validates, or None."""
    if not validated_at:
        return "no measurement date on the validation (run judge_validation again)"
    age = _age_days(validated_at, now)
    if age > max_age_days:
        return f"stale: κ last measured on {validated_at[:10]}, {age:.0f} days ago (> {max_age_days:g}): re-validate (judge_validation_job)"
    return None


def validation_note(row: dict) -> str:
    """κ [CI] on n labels, measured when (a validated dimension's ``validation_reason``)."""
    ci = f" [{row['kappa_ci_low']:.2f}, {row['kappa_ci_high']:.2f}]" if row.get("kappa_ci_low") is not None else ""
    return f"validated: κ {row['kappa']:.2f}{ci} on n={row['n']} labels, measured {str(row.get('validated_at') or '?')[:10]}"
