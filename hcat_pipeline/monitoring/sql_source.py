"""Traffic kept in a database (issue 60 item 3): a SQL query whose rows are log records, read like a file's.

``SqlSource``: the connection URL comes from an environment variable (``url_env_var``; never written in the campaign
file), ``query`` selects one day's requests with the bind parameters ``:day_start`` and ``:day_end`` (UTC timestamps,
the end excluded), ``days_query`` lists the days the table holds (one column, a date or ISO text). Each row is a record
for ``logs.normalise_record`` (the campaign file's ``fields:`` name its columns); a row that cannot be used is rejected
as ``sql:row <n>`` with the reason, like a file's line. SQLAlchemy runs the queries (any database it reaches; tested
on PostgreSQL).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SqlSource:
    query: str = field(metadata={"description": "selects one day's rows: WHERE <time column> >= :day_start AND < :day_end"})
    days_query: str = field(default="", metadata={"description": "one column: the days the table holds (date or YYYY-MM-DD)"})
    url_env_var: str = field(default="HCAT_MONITOR_SQL_URL", metadata={"description": "the environment variable holding the "
                                                                                  "SQLAlchemy URL (postgresql://…)"})

    def url(self) -> str:
        url = os.environ.get(self.url_env_var)
        if not url:
            raise ValueError(f"monitoring sql: no connection URL in ${self.url_env_var}")
        return url

    def _run(self, sql: str, params: dict | None = None) -> list[dict]:
        import sqlalchemy as sa

        engine = sa.create_engine(self.url())
        try:
            with engine.connect() as conn:
                result = conn.execute(sa.text(sql), params or {})
                return [dict(r._mapping) for r in result]
        except sa.exc.SQLAlchemyError as e:
            raise ValueError(f"monitoring sql: the query failed: {str(e).splitlines()[0]}") from e
        finally:
            engine.dispose()

    def records(self, day: str) -> list[tuple[str, dict, str]]:
        """(where, record, '') per row of ``day``; values made JSON-like (timestamps as ISO text)."""
        start = dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC)
        rows = self._run(self.query, {"day_start": start, "day_end": start + dt.timedelta(days=1)})
        return [(f"sql:row {i}", {k: _plain(v) for k, v in r.items()}, "") for i, r in enumerate(rows, 1)]

    def days(self) -> list[str]:
        if not self.days_query:
            return []
        return sorted({str(_plain(next(iter(r.values()))))[:10] for r in self._run(self.days_query) if r})


def _plain(v):
    if isinstance(v, dt.datetime):
        return (v if v.tzinfo else v.replace(tzinfo=dt.UTC)).isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    return v
