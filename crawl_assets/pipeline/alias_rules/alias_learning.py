"""URL aliases learnt per host from the crawl's own fetches (crawler/url_policy/url_aliases.py
applies them): written each day beside the host quality, as url_aliases[D], read the next
day by the fetch batch and the frontier, and by the priorities step of the day.

Evidence comes in classes of URLs that differ only in the way a rule would fold: a parameter
(its value, or its presence), a whole query at one path (or its presence), `index.html` at a
directory. A class agrees when its URLs' latest answers carry the same content (change digest:
the payload less its per-request values) and contradicts when two of them answered the same
day with different content. A rule is learnt when its classes agree ALIAS_MIN_PAIRS times
(a class of k URLs that agree counts k - 1) and none ever contradicted:

- PARAMETER, INDEX_PAGE: in at least ALIAS_MIN_CLASSES classes of different content (two
  pages each seen under two URLs: not a host that answers everything with one page);
- QUERY: with the URL without a query among the class (the page itself was fetched).

A learnt rule stays until a fetch contradicts it; then it is dropped for good (kept in the
table with the day). A rule learnt once, or with ALIAS_MIN_PAIRS agreeing pairs, is a row
(active or not), so the catalog shows why it holds or does not. Everything runs in DuckDB
over the fetch logs up to D.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from ...crawler.url_policy.url_aliases import AliasKind, AliasRules
from ...storage.layout import latest_before, url_aliases_file
from ...storage.shared_root import query_connection, read_table

ALIAS_MIN_PAIRS = 2
ALIAS_MIN_CLASSES = 2

URL_ALIASES_SCHEMA = pa.schema([
    ("host", pa.string()),
    ("kind", pa.string()),  # url_aliases.AliasKind
    ("name", pa.string()),  # the parameter, the path, or "" (index_page)
    ("active", pa.bool_()),  # folding the host's URLs now
    ("agreeing_pairs", pa.int64()),
    ("classes", pa.int64()),  # classes of URLs that agreed
    ("example", pa.string()),  # one alias URL ...
    ("folds_to", pa.string()),  # ... and the URL it is an alias of
    ("learnt_on", pa.date32()),
    ("contradicted_on", pa.date32()),  # the last day two of its URLs answered differently
    ("dropped_on", pa.date32()),
])

# Every answer with content, and the classes its URL belongs to (one a parameter of its query,
# one for its query, one for an index.html); each class with the URL it folds to ("target"),
# which belongs to it too when it was fetched.
EVIDENCE_SQL = """
WITH fetches AS (
    SELECT url, host, change_digest AS digest, fetched_at, CAST(fetched_at AS DATE) AS day
    FROM read_parquet($fetch_logs, union_by_name = true)
    WHERE status = 200 AND change_digest IS NOT NULL
),
urls AS (SELECT DISTINCT url, host FROM fetches),
parts AS (
    SELECT url, host, split_part(url, '?', 1) AS bare, nullif(split_part(url, '?', 2), '') AS query FROM urls
),
classes AS (
    -- a parameter: the URL without it
    SELECT url, host, 'parameter' AS kind, split_part(kv, '=', 1) AS name,
           bare || coalesce('?' || nullif(array_to_string(list_filter(string_split(query, '&'), lambda x: x <> kv), '&'), ''),
                            '') AS target
    FROM (SELECT url, host, bare, query, unnest(string_split(query, '&')) AS kv FROM parts WHERE query IS NOT NULL)
    UNION ALL  -- the query at its path
    SELECT url, host, 'query', coalesce(nullif(regexp_extract(bare, '^[^:]+://[^/]*(/.*)$', 1), ''), '/'), bare
    FROM parts WHERE query IS NOT NULL
    UNION ALL  -- index.html at its directory
    SELECT url, host, 'index_page', '', regexp_replace(bare, 'index[.]html$', '') || coalesce('?' || query, '')
    FROM parts WHERE bare LIKE '%/index.html'
),
members AS (  -- each class's URLs: its aliases, and the URL they fold to where it was fetched
    SELECT host, kind, name, target, url FROM classes
    UNION
    SELECT c.host, c.kind, c.name, c.target, c.target FROM (SELECT DISTINCT host, kind, name, target FROM classes) c
    SEMI JOIN urls u ON u.url = c.target
),
latest AS (SELECT url, arg_max(digest, fetched_at) AS digest FROM fetches GROUP BY url),
per_class AS (
    SELECT m.host, m.kind, m.name, m.target, count(*) AS urls, count(DISTINCT l.digest) AS contents,
           any_value(l.digest) AS content, bool_or(m.url = m.target) AS with_target,
           min(m.url) FILTER (m.url <> m.target) AS example
    FROM members m JOIN latest l USING (url) GROUP BY ALL HAVING count(*) >= 2
),
contradictions AS (  -- two URLs of a class that answered the same day with different content
    SELECT m.host, m.kind, m.name, max(f.day) AS contradicted_on
    FROM members m JOIN fetches f USING (url)
    GROUP BY m.host, m.kind, m.name, m.target, f.day HAVING count(DISTINCT f.digest) > 1
)
SELECT p.host, p.kind, p.name,
       sum(p.urls - 1) FILTER (p.contents = 1)::BIGINT AS agreeing_pairs,
       count(*) FILTER (p.contents = 1) AS classes,
       count(DISTINCT p.content) FILTER (p.contents = 1) AS class_contents,
       bool_or(p.with_target) FILTER (p.contents = 1) AS with_target,
       min(p.example) FILTER (p.contents = 1) AS example,
       arg_min(p.target, p.example) FILTER (p.contents = 1) AS folds_to,
       max(c.contradicted_on) AS contradicted_on
FROM per_class p LEFT JOIN (SELECT host, kind, name, max(contradicted_on) AS contradicted_on
                            FROM contradictions GROUP BY ALL) c USING (host, kind, name)
GROUP BY p.host, p.kind, p.name
"""

# The day's rules: the evidence judged (the module docstring), against the day before's table.
RULES_SQL = """
SELECT e.host, e.kind, e.name,
       coalesce(b.dropped_on IS NULL AND e.contradicted_on IS NULL AND e.learnt, false) AS active,
       coalesce(e.agreeing_pairs, 0) AS agreeing_pairs, e.classes, e.example, e.folds_to,
       CASE WHEN b.learnt_on IS NOT NULL THEN b.learnt_on
            WHEN e.learnt AND e.contradicted_on IS NULL THEN $day::DATE END AS learnt_on,
       e.contradicted_on,
       coalesce(b.dropped_on, CASE WHEN b.learnt_on IS NOT NULL AND e.contradicted_on IS NOT NULL THEN $day::DATE END)
         AS dropped_on
FROM (SELECT *, coalesce(agreeing_pairs >= $min_pairs AND CASE WHEN kind = $query THEN with_target
                                                             ELSE class_contents >= $min_classes END, false) AS learnt
      FROM evidence) e
LEFT JOIN before b USING (host, kind, name)
WHERE e.learnt OR b.learnt_on IS NOT NULL OR e.agreeing_pairs >= $min_pairs  -- (not every lone pair: a row)
ORDER BY e.host, e.kind, e.name
"""


def learn_url_aliases(fetch_logs: list[str], day: str, before: pa.Table | None) -> pa.Table:
    """The url_aliases table of `day` (URL_ALIASES_SCHEMA) from every fetch up to it and the
    table of the day before (`before`: None on the first day)."""
    if not fetch_logs:
        return URL_ALIASES_SCHEMA.empty_table()
    con = query_connection()
    con.execute("CREATE OR REPLACE TEMP TABLE evidence AS " + EVIDENCE_SQL, {"fetch_logs": fetch_logs})
    con.register("before", before if before is not None else URL_ALIASES_SCHEMA.empty_table())
    rules = con.sql(RULES_SQL, params={"day": day, "min_pairs": ALIAS_MIN_PAIRS, "min_classes": ALIAS_MIN_CLASSES,
                                       "query": AliasKind.QUERY}).to_arrow_table()
    con.unregister("before")
    return rules.cast(URL_ALIASES_SCHEMA)


def previous_aliases(root: Path, date: str) -> pa.Table | None:
    """The url_aliases table of the last day before `date` (None: none yet)."""
    path = latest_before(root, "url_aliases", date)
    return read_table(path) if path is not None else None


def load_alias_rules(path: Path | None) -> AliasRules:
    """The active rules of a url_aliases file (none without one)."""
    if path is None or not path.exists():  # a local Path or an S3Path: both know exists()
        return AliasRules()
    return AliasRules.from_table(read_table(path))


def alias_rules_before(root: Path, date: str) -> AliasRules:
    """The rules the fetch batch and the frontier of `date` fold with: the last day before's."""
    return load_alias_rules(latest_before(root, "url_aliases", date))


def alias_rules_through(root: Path, date: str) -> AliasRules:
    """The rules of `date` itself, or of the last day before (the priorities step of `date`)."""
    path = url_aliases_file(root, date)
    return load_alias_rules(path if path.exists() else latest_before(root, "url_aliases", date))
