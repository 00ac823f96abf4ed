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
-- are pushed down into each branch, and the tables' branches keep their indexes. One
-- branch per grain with the grain a constant: a condition on the grain then drops a whole
-- branch when the plan is made (a join to a list of grains would compute both for every
-- delta row, twice the work of a reader over unfolded deltas).
CREATE VIEW task_rollups_exact AS
SELECT grain, period, agent, tenant, status, tasks, attempts, throttled, input_tokens,
       output_tokens, llm_usd, compute_usd, confidence_sum, confidence_n
FROM task_rollups
UNION ALL
SELECT 'h'::"char", period, agent, tenant, status, tasks, attempts, throttled, input_tokens,
       output_tokens, llm_usd, compute_usd, confidence_sum, confidence_n
FROM task_rollup_deltas
UNION ALL
SELECT 'd'::"char", date_trunc('day', period, 'UTC'), agent, tenant, status, tasks, attempts,
       throttled, input_tokens, output_tokens, llm_usd, compute_usd, confidence_sum,
       confidence_n
FROM task_rollup_deltas;

CREATE VIEW task_histograms_exact AS
SELECT grain, kind, period, agent, tenant, status, bucket, tasks
FROM task_histograms
UNION ALL
SELECT 'h'::"char", kind, period, agent, tenant, status, bucket, tasks
FROM task_histogram_deltas
UNION ALL
SELECT 'd'::"char", kind, date_trunc('day', period, 'UTC'), agent, tenant, status, bucket, tasks
FROM task_histogram_deltas;

CREATE VIEW task_histograms_by_agent_exact AS
SELECT grain, kind, period, agent, bucket, tasks
FROM task_histograms_by_agent
UNION ALL
SELECT 'h'::"char", kind, period, agent, bucket, tasks
FROM task_histogram_deltas
UNION ALL
SELECT 'd'::"char", kind, date_trunc('day', period, 'UTC'), agent, bucket, tasks
FROM task_histogram_deltas;
