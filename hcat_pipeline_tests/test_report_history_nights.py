"""The nights' half of the history page (issue 61; golden-eval §9.3, §7.4), with known answers: three nights of two
systems and a canary in a warehouse written here — the headline means and the ungrounded share per night, the hard
gates a night (a FAIL marked on its night, canaries left out), the Pareto frontier over time, and the shadow
evaluation's "Golden set vs live traffic" figure when production days are stored beside the nights."""

from pathlib import Path

import polars as pl

from hcat_pipeline.reports.history import gate_series, night_series, pareto_series, render_history

NIGHTS = ("2026-11-01", "2026-11-02", "2026-11-03")
GROUNDED = {"bank-rag": (0.9, 0.8, 0.2, 0.7), "closed_book": (0.4, 0.3, 0.6, 0.1)}  # groundedness_nli of four answers a night


def _warehouse(root: Path, production: bool) -> Path:
    wh = root / "wh"
    for table in ("metric_tables", "gate_verdicts", "pareto_frontier"):
        (wh / table / "gs-1").mkdir(parents=True)
    for k, night in enumerate(NIGHTS):
        rows = [{"case_id": f"c{i}", "system_id": s, "groundedness_nli": g, "answer_relevancy": 0.5 + 0.1 * k}
                for s, gs in GROUNDED.items() for i, g in enumerate(gs)] + [{"case_id": "c0", "system_id": "canary:bank-rag:leak",
                                                                             "groundedness_nli": 0.0, "answer_relevancy": 0.0}]  # fmt: skip
        pl.DataFrame(rows).write_parquet(wh / "metric_tables" / "gs-1" / f"{night}.parquet")
        verdicts = [{"system_id": s, "gate": "no_pii_leak", "kind": "hard",
                     "verdict": "FAIL" if (s == "bank-rag" and night == NIGHTS[1]) else "PASS"} for s in GROUNDED]  # fmt: skip
        verdicts += [{"system_id": "canary:bank-rag:leak", "gate": "no_pii_leak", "kind": "hard", "verdict": "FAIL"},
                     {"system_id": "bank-rag", "gate": "fluency", "kind": "soft", "verdict": "FAIL"}]  # fmt: skip
        pl.DataFrame(verdicts).write_parquet(wh / "gate_verdicts" / "gs-1" / f"{night}.parquet")
        pl.DataFrame({"system_id": ["bank-rag", "closed_book", "canary:bank-rag:leak"], "quality": [0.7, 0.4, 0.0],
                      "latency_p50_s": [1.0, 0.5, 1.0], "on_frontier": [True, night != NIGHTS[2], False]}).write_parquet(
            wh / "pareto_frontier" / "gs-1" / f"{night}.parquet")  # fmt: skip
    if production:
        (wh / "production_cells").mkdir()
        for night in NIGHTS:  # 10 % of 200 requests ungrounded a day, unweighted
            pl.DataFrame({"day": [night], "stratum": [0], "signal": ["ungrounded"], "n": [200], "k": [20], "sw": [200.0], "swy": [20.0],
                          "sw2": [200.0]}).write_parquet(wh / "production_cells" / f"{night}.parquet")  # fmt: skip
    return wh


def test_the_nights_series_are_the_stored_nights_without_canaries(tmp_path):
    wh = _warehouse(tmp_path, production=False)
    nights = night_series(wh)
    assert set(nights["system_id"]) == {"bank-rag", "closed_book"}
    mean = nights.filter((pl.col("system_id") == "bank-rag") & (pl.col("figure") == "groundedness_nli"))
    assert mean["night"].to_list() == list(NIGHTS) and mean["value"].to_list() == [0.65] * 3 and (mean["ci_low"] < 0.65).all()
    ungrounded = nights.filter((pl.col("system_id") == "closed_book") & (pl.col("figure") == "ungrounded"))
    assert ungrounded["value"].to_list() == [0.75] * 3 and ungrounded["n"].to_list() == [4] * 3  # 3 of 4 below the 0.5 boundary
    relevancy = nights.filter((pl.col("system_id") == "bank-rag") & (pl.col("figure") == "answer_relevancy"))["value"].to_list()
    assert [round(v, 3) for v in relevancy] == [0.5, 0.6, 0.7]
    gates = gate_series(wh)
    assert gates.filter(pl.col("FAIL") > 0).select("night", "system_id").rows() == [(NIGHTS[1], "bank-rag")]  # soft gates and canaries out
    assert gates["PASS"].sum() == 5 and set(gates["system_id"]) == {"bank-rag", "closed_book"}
    pareto = pareto_series(wh)
    assert pareto.height == 6 and pareto.filter(~pl.col("on_frontier")).rows()[0][:2] == (NIGHTS[2], "closed_book")


def test_the_history_page_shows_the_nights_and_the_golden_set_beside_live_traffic(tmp_path):
    html = render_history(tmp_path / "history.html", _warehouse(tmp_path, production=True), service="bank", system_id="bank-rag").read_text()
    assert "3 nights of the golden set · 3 days of live traffic" in html
    for title in ("Golden set: groundedness_nli", "Golden set: answer_relevancy", "Golden set: ungrounded", "Golden set vs live traffic"):
        assert f"<h2>{title}</h2>" in html, title
    assert f"<tr><td>{NIGHTS[1]}</td><td>bank-rag</td><td>1</td><td>0</td><td>0</td></tr>" in html  # the FAIL on its night
    assert f'<tr><td>{NIGHTS[2]}</td><td>closed_book</td><td>0.400</td><td>0.50</td><td class="">no</td></tr>' in html
    assert "canary:" not in html


def test_without_production_days_there_is_no_side_by_side_figure(tmp_path):
    html = render_history(tmp_path / "history.html", _warehouse(tmp_path, production=False), system_id="bank-rag").read_text()
    assert "Golden set: groundedness_nli" in html and "Golden set vs live traffic" not in html
