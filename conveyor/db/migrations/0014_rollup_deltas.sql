-- Rollups off the queue's hot path (#16). The statement that finishes tasks used to upsert
-- the rollups itself: three tables at two grains, INSERT ... ON CONFLICT DO UPDATE on rows
-- that every worker finishing the same agent's tasks shares, each row lock held until the
-- finish commits; that was a fifth of PostgreSQL's CPU per task of a drain. Now it appends
-- what it changed, already summed per key of the statement, to the two insert-only tables
-- below: no index, no conflict, no lock on a shared row. A folder that every worker runs,
-- one at a time (conveyor_rollup_fold() in conveyor/sql/functions/rollups.sql, called by
-- conveyor/worker/rollup_fold.py), moves them into the rollups in one statement: it
-- deletes the deltas it sees, sums them and upserts the sums at both grains, so a delta
-- is folded exactly once, and a finish that commits while it runs is folded the next time.
--
-- Readers read the *_exact views: the rollups plus the deltas not yet folded, in one
-- statement and so one snapshot, in which a fold either happened entirely (the deltas gone,
-- the rollups added to) or not at all. The numbers are exact the moment a finish commits,
-- whether the folder ran a second ago or stopped an hour ago; what the folder bounds is
-- only how many delta rows a reader also sums (docs/benchmarks.md measures that).

-- A change to task_rollups, at the hour grain only (the folder adds the day row): period is
-- the hour of the tasks' created_at (UTC), the measures are task_rollups', signed.
CREATE TABLE task_rollup_deltas (
    period         timestamptz NOT NULL,
    agent          text NOT NULL,
    tenant         text NOT NULL,
    status         text NOT NULL,
    tasks          bigint NOT NULL,
    attempts       bigint NOT NULL,
    throttled      bigint NOT NULL,
    input_tokens   bigint NOT NULL,
    output_tokens  bigint NOT NULL,
    llm_usd        numeric NOT NULL,
    compute_usd    numeric NOT NULL,
    confidence_sum double precision NOT NULL,
    confidence_n   bigint NOT NULL
);

-- A change to task_histograms (and so to task_histograms_by_agent, which is the same
-- without tenant and status), at the hour grain: a signed count of tasks in one bucket.
CREATE TABLE task_histogram_deltas (
    kind    text NOT NULL,
    period  timestamptz NOT NULL,
    agent   text NOT NULL,
    tenant  text NOT NULL,
    status  text NOT NULL,
    bucket  smallint NOT NULL,
    tasks   bigint NOT NULL
);

-- The rollups as they are once every committed delta is folded. The deltas appear at both
-- grains, so a reader's conditions on grain and period are the same as on the tables; they
-- are pushed down into each branch, and the tables' branches keep their indexes.
CREATE VIEW task_rollups_exact AS
SELECT grain, period, agent, tenant, status, tasks, attempts, throttled, input_tokens,
       output_tokens, llm_usd, compute_usd, confidence_sum, confidence_n
FROM task_rollups
UNION ALL
SELECT g.grain, date_trunc(g.unit, d.period, 'UTC'), d.agent, d.tenant, d.status, d.tasks,
       d.attempts, d.throttled, d.input_tokens, d.output_tokens, d.llm_usd, d.compute_usd,
       d.confidence_sum, d.confidence_n
FROM task_rollup_deltas d
CROSS JOIN (VALUES ('h'::"char", 'hour'), ('d'::"char", 'day')) AS g(grain, unit);

CREATE VIEW task_histograms_exact AS
SELECT grain, kind, period, agent, tenant, status, bucket, tasks
FROM task_histograms
UNION ALL
SELECT g.grain, d.kind, date_trunc(g.unit, d.period, 'UTC'), d.agent, d.tenant, d.status,
       d.bucket, d.tasks
FROM task_histogram_deltas d
CROSS JOIN (VALUES ('h'::"char", 'hour'), ('d'::"char", 'day')) AS g(grain, unit);

CREATE VIEW task_histograms_by_agent_exact AS
SELECT grain, kind, period, agent, bucket, tasks
FROM task_histograms_by_agent
UNION ALL
SELECT g.grain, d.kind, date_trunc(g.unit, d.period, 'UTC'), d.agent, d.bucket, d.tasks
FROM task_histogram_deltas d
CROSS JOIN (VALUES ('h'::"char", 'hour'), ('d'::"char", 'day')) AS g(grain, unit);
