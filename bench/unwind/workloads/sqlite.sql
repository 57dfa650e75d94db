-- sqlite.sql: bench/unwind's SQLite workload (the sqlite3 shell reads it with .read): 500k
-- rows inserted in one transaction, three indexes built, an update, a
-- self-join, scans, sorts and aggregates.
CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL);
BEGIN;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 500000)
INSERT INTO t(a, b, c) SELECT (i * 7919) % 100003, printf('row-%d-%x', i, i * 31), i * 0.5 FROM s;
COMMIT;
CREATE INDEX t_a ON t(a);
CREATE INDEX t_b ON t(b);
SELECT count(*), sum(a) FROM t WHERE a BETWEEN 1000 AND 50000;
SELECT b FROM t ORDER BY c DESC LIMIT 3;
SELECT a % 100, count(*) FROM t GROUP BY 1 ORDER BY 2 DESC LIMIT 3;
SELECT count(*) FROM t AS x JOIN t AS y ON x.a = y.a WHERE x.id < 200000;
UPDATE t SET c = c + 1, b = upper(b) WHERE a % 3 = 0;
CREATE INDEX t_cb ON t(c, b);
SELECT count(DISTINCT b), max(length(b)) FROM t;
SELECT sum(length(b)) FROM (SELECT b FROM t ORDER BY b DESC);
