"""Issue 60 item 3: traffic kept in PostgreSQL read by `hcat monitor`'s reader — the project's own cluster
(scripts/postgres.sh), a query per day with :day_start / :day_end, the URL from an env var, bad rows named."""

import pytest

from hcat_pipeline.monitoring.logs import LogFields, read_sql_day
from hcat_pipeline.monitoring.sql_source import SqlSource
from hcat_pipeline_tests.ops_servers import have_postgres, postgres_cluster

pytestmark = pytest.mark.skipif(not have_postgres(), reason="PostgreSQL server not installed (scripts/setup.sh installs it)")


def test_a_postgres_table_is_read_day_by_day_and_bad_rows_are_named(monkeypatch):
    import sqlalchemy as sa

    with postgres_cluster() as url:
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE traffic (id text, asked_at timestamptz, q text, a text, ms double precision)"))
            conn.execute(sa.text("INSERT INTO traffic VALUES "
                                 "('r1', '2026-11-20 09:00+00', 'How do I reset my PIN?', 'In the app settings.', 850),"
                                 "('r2', '2026-11-20 23:59+00', 'What is the daily limit?', '£500.', 1200),"
                                 "('r3', '2026-11-20 12:00+00', '', 'an answer to nothing', 300),"
                                 "('r4', '2026-11-21 08:00+00', 'Next day?', 'Yes.', 400)"))  # fmt: skip
        engine.dispose()
        monkeypatch.setenv("HCAT_TEST_SQL_URL", url)
        source = SqlSource(query="SELECT id, asked_at, q, a, ms FROM traffic WHERE asked_at >= :day_start AND asked_at < :day_end ORDER BY id",
                           days_query="SELECT DISTINCT asked_at::date FROM traffic", url_env_var="HCAT_TEST_SQL_URL")  # fmt: skip
        fields = LogFields(question_path="q", answer_path="a", timestamp_path="asked_at", request_id_path="id", latency_ms_path="ms")
        assert source.days() == ["2026-11-20", "2026-11-21"]
        read = read_sql_day(source, "2026-11-20", fields)
        assert sorted(read.rows["request_id"].to_list()) == ["r1", "r2"] and read.rows["latency_ms"].to_list() == [850.0, 1200.0]
        assert read.rejected.to_dicts() == [{"source": "sql:row 3", "reason": "no question at 'q'"}]
        bad = SqlSource(query="SELECT nope FROM traffic", url_env_var="HCAT_TEST_SQL_URL")
        with pytest.raises(ValueError, match="the query failed"):
            read_sql_day(bad, "2026-11-20", fields)
    monkeypatch.delenv("HCAT_TEST_SQL_URL")
    with pytest.raises(ValueError, match=r"no connection URL in \$HCAT_TEST_SQL_URL"):
        source.days()
