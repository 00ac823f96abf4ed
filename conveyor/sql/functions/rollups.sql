-- Metrics rollups of finished tasks: the statement-level triggers on tasks and task_attempts
-- that append each statement's changes as deltas, the fold that moves the deltas into the
-- rollups (run by every worker, conveyor/worker/rollup_fold.py), and the rebuild. The
-- tables, and what is and is not rolled up, are described in
-- conveyor/db/migrations/0006_metrics.sql, 0014_rollup_deltas.sql and docs/metrics.md.
-- The live text; migrate() applies this file whenever it changes.
--
-- The trigger functions carry planner settings (SET ... in their definitions): transition
-- tables have no statistics and plpgsql keeps a statement's first plan (see notify.sql), so
-- the plans that would be disastrous for a different size are forbidden. Lookups of a task's
-- row and attempts are then index probes whatever the statement's size, and the join of old
-- and new attempt rows is a hash join, linear in the rows. The penalty these settings add to
-- a plan's cost would make it look expensive enough to JIT-compile, which takes half a second
-- each time: no JIT either.

CREATE OR REPLACE FUNCTION conveyor_log_bucket(v double precision) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN v IS NULL OR v < 1 THEN 0
                ELSE least(1 + floor(10 * log(v)), 32767)::smallint END
$$;

CREATE OR REPLACE FUNCTION conveyor_confidence(result jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(result -> 'confidence') = 'number'
                THEN (result ->> 'confidence')::double precision END
$$;

-- Move the committed deltas into the rollups, in one statement: delete the deltas this
-- statement's snapshot sees, sum them per key and upsert the sums at both grains. A delta
-- is folded exactly once: two folders never delete the same row (the second waits for
-- the first's row locks, then finds the rows gone), and a delta committed while a fold
-- runs is not in its snapshot, so it is left for the next. One folder at a time, by a
-- transaction's advisory lock, which the others do not wait for: they return 0 at once
-- (they would only wait for the first's row locks). Rows are upserted in key order and
-- at shard 0 (one writer: the shards that spread the finishing statements' upserts are
-- not needed; rows written before migration 0014 keep theirs, readers sum them).
-- Returns how many delta rows it folded.
CREATE OR REPLACE FUNCTION conveyor_rollup_fold() RETURNS bigint
LANGUAGE plpgsql
SET jit = off
AS $$
DECLARE
    folded bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('conveyor.rollup_fold')) THEN
        RETURN 0;
    END IF;
    WITH moved AS (
        DELETE FROM task_rollup_deltas RETURNING *
    ), rollups AS (
        INSERT INTO task_rollups AS r (grain, period, agent, tenant, status, shard, tasks,
                                       attempts, throttled, input_tokens, output_tokens,
                                       llm_usd, compute_usd, confidence_sum, confidence_n)
        SELECT g.grain, date_trunc(g.unit, m.period, 'UTC'), m.agent, m.tenant, m.status, 0,
               sum(m.tasks), sum(m.attempts), sum(m.throttled), sum(m.input_tokens),
               sum(m.output_tokens), sum(m.llm_usd), sum(m.compute_usd),
               sum(m.confidence_sum), sum(m.confidence_n)
        FROM moved m
        CROSS JOIN (VALUES ('h'::"char", 'hour'), ('d'::"char", 'day')) AS g(grain, unit)
        GROUP BY 1, 2, 3, 4, 5
        HAVING sum(m.tasks) <> 0 OR sum(m.attempts) <> 0 OR sum(m.throttled) <> 0
            OR sum(m.input_tokens) <> 0 OR sum(m.output_tokens) <> 0 OR sum(m.llm_usd) <> 0
            OR sum(m.compute_usd) <> 0 OR sum(m.confidence_n) <> 0
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (grain, period, agent, tenant, status, shard) DO UPDATE
        SET tasks = r.tasks + excluded.tasks,
            attempts = r.attempts + excluded.attempts,
            throttled = r.throttled + excluded.throttled,
            input_tokens = r.input_tokens + excluded.input_tokens,
            output_tokens = r.output_tokens + excluded.output_tokens,
            llm_usd = r.llm_usd + excluded.llm_usd,
            compute_usd = r.compute_usd + excluded.compute_usd,
            confidence_sum = r.confidence_sum + excluded.confidence_sum,
            confidence_n = r.confidence_n + excluded.confidence_n
    ), entries AS (
        DELETE FROM task_histogram_deltas RETURNING *
    ), histograms AS (
        INSERT INTO task_histograms AS h (grain, kind, period, agent, tenant, status, bucket,
                                          shard, tasks)
        SELECT g.grain, e.kind, date_trunc(g.unit, e.period, 'UTC'), e.agent, e.tenant,
               e.status, e.bucket, 0, sum(e.tasks)
        FROM entries e
        CROSS JOIN (VALUES ('h'::"char", 'hour'), ('d'::"char", 'day')) AS g(grain, unit)
        GROUP BY 1, 2, 3, 4, 5, 6, 7
        HAVING sum(e.tasks) <> 0
        ORDER BY 1, 2, 3, 4, 5, 6, 7
        ON CONFLICT (grain, kind, period, agent, tenant, status, bucket, shard) DO UPDATE
        SET tasks = h.tasks + excluded.tasks
    ), by_agent AS (
        INSERT INTO task_histograms_by_agent AS h (grain, kind, period, agent, bucket, shard,
                                                   tasks)
        SELECT g.grain, e.kind, date_trunc(g.unit, e.period, 'UTC'), e.agent, e.bucket, 0,
               sum(e.tasks)
        FROM entries e
        CROSS JOIN (VALUES ('h'::"char", 'hour'), ('d'::"char", 'day')) AS g(grain, unit)
        GROUP BY 1, 2, 3, 4, 5
        HAVING sum(e.tasks) <> 0
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (grain, kind, period, agent, bucket, shard) DO UPDATE
        SET tasks = h.tasks + excluded.tasks
    )
    SELECT (SELECT count(*) FROM moved) + (SELECT count(*) FROM entries) INTO folded;
    RETURN folded;
END $$;

-- Finished tasks counted in (sign 1) or out (sign -1) of the rollups, with their attempts'
-- usage as it is now, less the less_* arrays' usage if given (NULL: nothing less): the
-- task triggers below call it with the changed rows as arrays, and
-- conveyor_rollup_attempt_changes() with a task counted out with its usage before the
-- change and in with its usage after it.
--
-- The one writer of the deltas, in ONE statement (each statement a trigger runs costs the
-- finishing statement time on the queue's hot path): appended to the insert-only delta
-- tables (migration 0014), summed per key of this statement, at the hour grain;
-- conveyor_rollup_fold() below moves them into the rollups at both grains. No upsert here,
-- so no row that another worker's finish shares is locked, and no index is written. Each
-- task counts in its rollup row and in the buckets of its response time in ms and of its
-- cost in dollars (in millionths). Changes that cancel out write nothing. Straight from the
-- rows: passing them on as twenty arrays to a function that unnested them again (until
-- this text) cost a finish of 150 tasks 0.35 ms more of its 1.4 ms of rollup work
-- (benchmarks/trigger_cost.py).
CREATE OR REPLACE FUNCTION conveyor_rollup_finished(
    signs bigint[], ids bigint[], created timestamptz[], agents text[], tenants text[],
    statuses text[], finished timestamptz[], results jsonb[],
    less_attempts bigint[] DEFAULT NULL, less_throttled bigint[] DEFAULT NULL,
    less_input bigint[] DEFAULT NULL, less_output bigint[] DEFAULT NULL,
    less_llm numeric[] DEFAULT NULL, less_compute numeric[] DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off
-- A task's attempts are one or two rows: a plain index scan, not a bitmap built per task.
SET enable_bitmapscan = off
SET jit = off
AS $$
BEGIN
    WITH t AS MATERIALIZED (
        SELECT ch.sign, date_trunc('hour', ch.created_at, 'UTC') AS period, ch.agent,
               coalesce(ch.tenant, '') AS tenant, ch.status,
               extract(epoch FROM ch.finished_at - ch.created_at)::float8 * 1000 AS ms,
               conveyor_confidence(ch.result) AS confidence, u.*
        FROM unnest(signs, ids, created, agents, tenants, statuses, finished, results,
                    less_attempts, less_throttled, less_input, less_output, less_llm,
                    less_compute)
             AS ch(sign, id, created_at, agent, tenant, status, finished_at, result,
                   less_attempts, less_throttled, less_input, less_output, less_llm,
                   less_compute)
        CROSS JOIN LATERAL (
            SELECT count(*) - coalesce(ch.less_attempts, 0) AS attempts,
                   count(*) FILTER (WHERE a.status = 'throttled')
                       - coalesce(ch.less_throttled, 0) AS throttled,
                   coalesce(sum(a.input_tokens), 0)::bigint - coalesce(ch.less_input, 0) AS input,
                   coalesce(sum(a.output_tokens), 0)::bigint
                       - coalesce(ch.less_output, 0) AS output,
                   coalesce(sum(a.llm_cost_usd), 0) - coalesce(ch.less_llm, 0) AS llm,
                   coalesce(sum(a.compute_cost_usd), 0) - coalesce(ch.less_compute, 0) AS compute
            FROM task_attempts a
            WHERE a.task_id = ch.id
        ) u
    ), rollups AS (
        INSERT INTO task_rollup_deltas (period, agent, tenant, status, tasks, attempts,
                                        throttled, input_tokens, output_tokens, llm_usd,
                                        compute_usd, confidence_sum, confidence_n)
        SELECT t.period, t.agent, t.tenant, t.status, sum(t.sign), sum(t.sign * t.attempts),
               sum(t.sign * t.throttled), sum(t.sign * t.input), sum(t.sign * t.output),
               sum(t.sign * t.llm), sum(t.sign * t.compute),
               sum(t.sign * coalesce(t.confidence, 0)),
               sum(t.sign * (t.confidence IS NOT NULL)::int)
        FROM t
        GROUP BY 1, 2, 3, 4
        HAVING sum(t.sign) <> 0 OR sum(t.sign * t.attempts) <> 0
            OR sum(t.sign * t.throttled) <> 0 OR sum(t.sign * t.input) <> 0
            OR sum(t.sign * t.output) <> 0 OR sum(t.sign * t.llm) <> 0
            OR sum(t.sign * t.compute) <> 0 OR sum(t.sign * (t.confidence IS NOT NULL)::int) <> 0
    )
    INSERT INTO task_histogram_deltas (kind, period, agent, tenant, status, bucket, tasks)
    SELECT v.kind, t.period, t.agent, t.tenant, t.status, conveyor_log_bucket(v.value),
           sum(t.sign)
    FROM t
    CROSS JOIN LATERAL (VALUES ('latency', t.ms), ('cost', (t.llm + t.compute) * 1e6))
         AS v(kind, value)
    WHERE v.value IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5, 6
    HAVING sum(t.sign) <> 0;
END $$;

-- Tasks that enter a finished status, or are updated while finished: the statement
-- trigger of tasks' updates, which names its transition table `changed_rows`; the rows as
-- they are (NEW TABLE) count in. The rows as they were count out, by the row trigger
-- below, conveyor_rollup_task_replaced(); inserted rows by conveyor_rollup_task_inserted().
-- The old and new rows are never joined (transition tables have no index and no
-- statistics): a finished row updated without a change of status is taken away and added
-- back, which nets to nothing (or to the right change, if its finished_at or result was
-- edited). The usage of a task's attempts is read as it is at the end of the statement;
-- conveyor_rollup_attempts() explains why that adds up.
-- A statement none of whose rows is finished (every claim) calls nothing: without a row,
-- the aggregate's HAVING leaves no row to call conveyor_rollup_finished() with. No SET
-- clauses: this one scans its transition table only (conveyor_rollup_finished carries
-- the settings its lookups need).
CREATE OR REPLACE FUNCTION conveyor_rollup_tasks() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM conveyor_rollup_finished(
                array_fill(1::bigint, ARRAY[count(*)::int]), array_agg(c.id),
                array_agg(c.created_at), array_agg(c.agent), array_agg(c.tenant),
                array_agg(c.status), array_agg(c.finished_at), array_agg(c.result))
    FROM changed_rows c
    WHERE c.status IN ('completed', 'failed', 'cancelled')
    HAVING count(*) > 0;
    RETURN NULL;
END $$;

-- Attempts whose usage changes while their task is finished: an outcome reported late (its
-- lease was lost, or the task cancelled), or usage recorded afterwards (a compute cost).
--
-- The rollups hold a finished task's usage as it is at the end of the statement that
-- finished it. A statement that changes both a task and its attempts (the claim, the end of
-- an attempt, the sweep, a cancel) is counted by the task trigger alone, which reads the
-- usage at the end of the statement; this trigger must then add what changed in that
-- statement only if the task was ALREADY finished before it. It knows that from the
-- attempt, by the queue's invariant that an attempt is 'running' exactly while its task is
-- 'processing' in that attempt:
--   * an attempt inserted 'running' is a claim (its task was enqueued): nothing to add;
--   * an attempt that was 'running' belonged to a processing task: nothing to add;
--   * any other attempt's task did not change in this statement: its change is added to
--     the task's rollup row if the task is finished.
-- (The one case this misses is a batch of outcomes holding both a late outcome for one
-- attempt and the applied outcome of a later attempt of the same task; the late usage is
-- then counted twice. conveyor_rebuild_rollups() recomputes everything from the rows.)
--
-- Such a change can race with another transaction finishing (or retrying) the same task:
-- if each ran before the other committed, the finishing statement would read the usage
-- without this change while this trigger still saw the task live, and the change would be
-- lost. So the tasks are locked first (FOR NO KEY UPDATE, in id order, only on this rare
-- path: a finishing statement's attempts were 'running'), and their status and usage are
-- read by the next statement, whose snapshot sees whatever committed meanwhile.
--
-- The counting, given the attempt rows whose change may count as they were (gone) and as
-- they are (came): an insert is an update from no rows. Called by the triggers below only
-- when there are such rows, which the claim and the finish never have.
CREATE OR REPLACE FUNCTION conveyor_rollup_attempt_changes(
    gone task_attempts[], came task_attempts[]
) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_nestloop = off
SET jit = off
AS $$
DECLARE
    d record;
    c record;
BEGIN
    -- Per task, what changed: the rows that came count in, the rows that went count out (an
    -- updated row is both, so it adds no attempt; an inserted one adds one).
    SELECT array_agg(x.task_id ORDER BY x.task_id) AS ids,
           array_agg(x.attempts ORDER BY x.task_id) AS attempts,
           array_agg(x.throttled ORDER BY x.task_id) AS throttled,
           array_agg(x.input ORDER BY x.task_id) AS input,
           array_agg(x.output ORDER BY x.task_id) AS output,
           array_agg(x.llm ORDER BY x.task_id) AS llm,
           array_agg(x.compute ORDER BY x.task_id) AS compute
    INTO d
    FROM (
        SELECT r.task_id, sum(r.sign)::bigint AS attempts,
               sum(r.sign * (r.status = 'throttled')::int)::bigint AS throttled,
               sum(r.sign * coalesce(r.input_tokens, 0))::bigint AS input,
               sum(r.sign * coalesce(r.output_tokens, 0))::bigint AS output,
               sum(r.sign * coalesce(r.llm_cost_usd, 0)) AS llm,
               sum(r.sign * coalesce(r.compute_cost_usd, 0)) AS compute
        FROM (
            SELECT -1 AS sign, g.task_id, g.status, g.input_tokens, g.output_tokens,
                   g.llm_cost_usd, g.compute_cost_usd
            FROM unnest(gone) g
            UNION ALL
            SELECT 1, n.task_id, n.status, n.input_tokens, n.output_tokens, n.llm_cost_usd,
                   n.compute_cost_usd
            FROM unnest(came) n
        ) r
        GROUP BY r.task_id
    ) x
    WHERE x.attempts <> 0 OR x.throttled <> 0 OR x.input <> 0 OR x.output <> 0
       OR x.llm <> 0 OR x.compute <> 0;
    IF d.ids IS NULL THEN
        RETURN;
    END IF;

    PERFORM 1 FROM tasks t WHERE t.id = ANY(d.ids) ORDER BY t.id FOR NO KEY UPDATE;

    -- Each finished task counted out with its usage before this statement's change (now
    -- less the change) and in with its usage now: its rollup row gains the change, its
    -- cost moves from the bucket of its total before to the one after, and the rest (the
    -- task itself, its response time, its confidence) cancels out.
    SELECT array_agg(t.id) AS ids, array_agg(t.created_at) AS created,
           array_agg(t.agent) AS agent, array_agg(t.tenant) AS tenant,
           array_agg(t.status) AS status, array_agg(t.finished_at) AS finished,
           array_agg(t.result) AS result, array_agg(x.attempts) AS attempts,
           array_agg(x.throttled) AS throttled, array_agg(x.input) AS input,
           array_agg(x.output) AS output, array_agg(x.llm) AS llm,
           array_agg(x.compute) AS compute
    INTO c
    FROM unnest(d.ids, d.attempts, d.throttled, d.input, d.output, d.llm, d.compute)
         AS x(task_id, attempts, throttled, input, output, llm, compute)
    CROSS JOIN LATERAL (
        SELECT t.id, t.created_at, t.agent, t.tenant, t.status, t.finished_at, t.result
        FROM tasks t
        WHERE t.id = x.task_id
          AND t.status IN ('completed', 'failed', 'cancelled')
        OFFSET 0  -- a parameterised index lookup per task, never a join over all tasks
    ) t;

    IF c.ids IS NOT NULL THEN
        PERFORM conveyor_rollup_finished(
            array_fill(-1::bigint, ARRAY[cardinality(c.ids)])
                || array_fill(1::bigint, ARRAY[cardinality(c.ids)]),
            c.ids || c.ids, c.created || c.created, c.agent || c.agent,
            c.tenant || c.tenant, c.status || c.status, c.finished || c.finished,
            c.result || c.result,
            c.attempts || array_fill(0::bigint, ARRAY[cardinality(c.ids)]),
            c.throttled || array_fill(0::bigint, ARRAY[cardinality(c.ids)]),
            c.input || array_fill(0::bigint, ARRAY[cardinality(c.ids)]),
            c.output || array_fill(0::bigint, ARRAY[cardinality(c.ids)]),
            c.llm || array_fill(0::numeric, ARRAY[cardinality(c.ids)]),
            c.compute || array_fill(0::numeric, ARRAY[cardinality(c.ids)]));
    END IF;
END $$;

-- The triggers of task_attempts: only the rows that were not 'running' may count (above).
-- A claim inserts its attempts running, and a finishing statement's attempts all were
-- running: one scan of the new (or old) rows finds none, and the old and new rows are not
-- joined. The join (the rare path) is a hash join, linear in the rows, whatever plan the
-- connection's first firing left (see notify.sql). Statement triggers, not row triggers
-- with a WHEN: a row trigger fires after the statement, when the attempts it did not
-- insert yet are there too, and the cost a task had before a statement that inserts two
-- of its attempts could not be told from its rows.
CREATE OR REPLACE FUNCTION conveyor_rollup_attempts() RETURNS trigger
LANGUAGE plpgsql
SET enable_nestloop = off
AS $$
DECLARE
    gone task_attempts[];
    came task_attempts[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(n) INTO came FROM new_rows n WHERE n.status <> 'running';
    ELSIF EXISTS (SELECT 1 FROM old_rows o WHERE o.status <> 'running') THEN
        SELECT array_agg(o), array_agg(n) INTO gone, came
        FROM old_rows o
        JOIN new_rows n USING (id)
        WHERE o.status <> 'running';
    END IF;
    IF came IS NOT NULL THEN
        PERFORM conveyor_rollup_attempt_changes(gone, came);
    END IF;
    RETURN NULL;
END $$;

-- An inserted task is counted in only if it is inserted finished, which Conveyor never
-- does (an enqueue inserts 'enqueued'; a child spawned again is an update), and an updated
-- task is counted out as it was only if it was finished (a retry, a child spawned again, a
-- review's correction of a result): row triggers whose WHEN PostgreSQL checks per row
-- without calling any function, instead of statement triggers that ran a query over the
-- statement's rows at every enqueue, claim and finish to find none (~0.03 ms of a single
-- enqueue's ~0.25 ms of statement time). A finished task inserted by hand (an import) is
-- still counted, one call per such row, as is every finished task updated.
CREATE OR REPLACE FUNCTION conveyor_rollup_task_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM conveyor_rollup_finished(ARRAY[1::bigint], ARRAY[NEW.id], ARRAY[NEW.created_at],
                                     ARRAY[NEW.agent], ARRAY[NEW.tenant], ARRAY[NEW.status],
                                     ARRAY[NEW.finished_at], ARRAY[NEW.result]);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION conveyor_rollup_task_replaced() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM conveyor_rollup_finished(ARRAY[-1::bigint], ARRAY[OLD.id], ARRAY[OLD.created_at],
                                     ARRAY[OLD.agent], ARRAY[OLD.tenant], ARRAY[OLD.status],
                                     ARRAY[OLD.finished_at], ARRAY[OLD.result]);
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER tasks_rollup_inserted
    AFTER INSERT ON tasks
    FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION conveyor_rollup_task_inserted();

CREATE OR REPLACE TRIGGER tasks_rollup_replaced
    AFTER UPDATE ON tasks
    FOR EACH ROW
    WHEN (OLD.status IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION conveyor_rollup_task_replaced();

CREATE OR REPLACE TRIGGER tasks_rollup_updated
    AFTER UPDATE ON tasks
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_rollup_tasks();

CREATE OR REPLACE TRIGGER task_attempts_rollup_inserted
    AFTER INSERT ON task_attempts
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_rollup_attempts();

CREATE OR REPLACE TRIGGER task_attempts_rollup_updated
    AFTER UPDATE ON task_attempts
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_rollup_attempts();

-- Recompute both tables from the rows as they are: after a bulk load that bypassed the
-- triggers, or to repair them. The history of pruned tasks is lost (their rows are gone).
-- Writers wait for it (SHARE locks), so the result is one consistent picture.
CREATE OR REPLACE FUNCTION conveyor_rebuild_rollups() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    LOCK TABLE tasks, task_attempts IN SHARE MODE;
    -- A fold running now would add deltas to rollups this deletes: wait for it, and keep
    -- the next one out until this commits. The deltas are the rows' too, recomputed below.
    PERFORM pg_advisory_xact_lock(hashtext('conveyor.rollup_fold'));
    DELETE FROM task_rollup_deltas;
    DELETE FROM task_histogram_deltas;
    DELETE FROM task_rollups;
    DELETE FROM task_histograms;
    DELETE FROM task_histograms_by_agent;
    CREATE TEMPORARY TABLE conveyor_rebuild ON COMMIT DROP AS
    SELECT t.created_at, t.agent, coalesce(t.tenant, '') AS tenant, t.status,
           extract(epoch FROM t.finished_at - t.created_at)::float8 * 1000 AS ms,
           conveyor_confidence(t.result) AS confidence,
           coalesce(u.attempts, 0) AS attempts, coalesce(u.throttled, 0) AS throttled,
           coalesce(u.input, 0) AS input, coalesce(u.output, 0) AS output,
           coalesce(u.llm, 0) AS llm, coalesce(u.compute, 0) AS compute
    FROM tasks t
    LEFT JOIN (
        SELECT a.task_id, count(*) AS attempts,
               count(*) FILTER (WHERE a.status = 'throttled') AS throttled,
               coalesce(sum(a.input_tokens), 0)::bigint AS input,
               coalesce(sum(a.output_tokens), 0)::bigint AS output,
               coalesce(sum(a.llm_cost_usd), 0) AS llm,
               coalesce(sum(a.compute_cost_usd), 0) AS compute
        FROM task_attempts a
        GROUP BY a.task_id
    ) u ON u.task_id = t.id
    WHERE t.status IN ('completed', 'failed', 'cancelled');

    INSERT INTO task_rollups (grain, period, agent, tenant, status, shard, tasks, attempts,
                              throttled, input_tokens, output_tokens, llm_usd, compute_usd,
                              confidence_sum, confidence_n)
    SELECT g.grain, date_trunc(g.unit, r.created_at, 'UTC'), r.agent, r.tenant, r.status, 0,
           count(*), sum(r.attempts), sum(r.throttled), sum(r.input), sum(r.output),
           sum(r.llm), sum(r.compute), coalesce(sum(r.confidence), 0), count(r.confidence)
    FROM conveyor_rebuild r
    CROSS JOIN (VALUES ('h'::"char", 'hour'), ('d'::"char", 'day')) AS g(grain, unit)
    GROUP BY 1, 2, 3, 4, 5;

    INSERT INTO task_histograms (grain, kind, period, agent, tenant, status, bucket, shard,
                                 tasks)
    SELECT g.grain, v.kind, date_trunc(g.unit, r.created_at, 'UTC'), r.agent, r.tenant,
           r.status, conveyor_log_bucket(v.value), 0, count(*)
    FROM conveyor_rebuild r
    CROSS JOIN LATERAL (VALUES ('latency', r.ms), ('cost', (r.llm + r.compute) * 1e6))
         AS v(kind, value)
    CROSS JOIN (VALUES ('h'::"char", 'hour'), ('d'::"char", 'day')) AS g(grain, unit)
    WHERE v.value IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5, 6, 7;

    INSERT INTO task_histograms_by_agent (grain, kind, period, agent, bucket, shard, tasks)
    SELECT grain, kind, period, agent, bucket, 0, sum(tasks)
    FROM task_histograms
    GROUP BY 1, 2, 3, 4, 5;
    DROP TABLE conveyor_rebuild;
END $$;
