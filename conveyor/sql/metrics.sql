-- Metrics and costs: the dashboard's numbers, cost breakdowns, Prometheus. Read from the
-- rollups of finished tasks (migration 0006) plus the live tasks, which are few and sit in
-- the partial indexes of the queue. The rollups are read through the *_exact views
-- (migration 0014): the folded rows plus the deltas of finishes not folded yet, so a
-- finish counts the moment it commits.
--
-- Every query takes the same range parameters, computed by conveyor/metrics.py (Span) from
-- the request's since/until rounded out to whole hours; the two fragments below say once
-- what they select, and a statement names them where they go: {in_span} for the rollup rows
-- of the range, {created_in_range} for the live tasks created in it. Filters are NULL when
-- not given. Grouping keys are chosen with boolean parameters (GROUP BY CASE WHEN ... END),
-- so the text never changes.

-- name: in_span
-- A fragment: the rows of a rollup table (task_rollups, task_histograms, ...) that make up
-- the range. Whole UTC days [d0, d1) from the day rows, when `days` (a NULL bound is open);
-- the partial days at either end, [ha0, ha1) and [hb0, hb1), from the hour rows (NULL
-- bounds: none). Unqualified names: each statement that uses it reads one rollup view.
((grain = 'd' AND %(days)s
  AND (%(d0)s::timestamptz IS NULL OR period >= %(d0)s)
  AND (%(d1)s::timestamptz IS NULL OR period < %(d1)s))
 OR (grain = 'h' AND period >= %(ha0)s AND period < %(ha1)s)
 OR (grain = 'h' AND period >= %(hb0)s AND period < %(hb1)s))

-- name: created_in_range
-- A fragment: tasks created in [h0, h1), the whole range rounded out to hours (a NULL bound
-- is open). Unqualified: the tasks are the only relation of its statement with created_at.
((%(h0)s::timestamptz IS NULL OR created_at >= %(h0)s)
 AND (%(h1)s::timestamptz IS NULL OR created_at < %(h1)s))

-- name: rollups_by_agent_status
-- Finished tasks in the range: counts, usage and confidence per agent and status.
SELECT r.agent, r.status, sum(r.tasks)::bigint AS tasks, sum(r.attempts)::bigint AS attempts,
       sum(r.throttled)::bigint AS throttled, sum(r.input_tokens)::bigint AS input_tokens,
       sum(r.output_tokens)::bigint AS output_tokens, sum(r.llm_usd) AS llm_usd,
       sum(r.compute_usd) AS compute_usd, sum(r.confidence_sum) AS confidence_sum,
       sum(r.confidence_n)::bigint AS confidence_n
FROM task_rollups_exact r
WHERE {in_span}
  AND (%(agent)s::text IS NULL OR r.agent = %(agent)s)
  AND (%(tenant)s::text IS NULL OR r.tenant = %(tenant)s)
  AND (%(status)s::text IS NULL OR r.status = %(status)s)
GROUP BY r.agent, r.status
HAVING sum(r.tasks) <> 0 OR sum(r.attempts) <> 0;

-- name: live_by_agent_status
-- Enqueued and processing tasks, exact, with the usage of the attempts they already had
-- (retries). One branch per status, so that each reads its partial index of the queue
-- (tasks_dequeue_idx, tasks_processing_idx): a condition `status IN (...)` matches
-- neither index's predicate and would scan the table. Attempts are looked up by
-- (task_id, attempt) only for tasks that have some.
SELECT t.agent, t.status, count(*) AS tasks, coalesce(sum(u.attempts), 0)::bigint AS attempts,
       coalesce(sum(u.throttled), 0)::bigint AS throttled,
       coalesce(sum(u.input_tokens), 0)::bigint AS input_tokens,
       coalesce(sum(u.output_tokens), 0)::bigint AS output_tokens,
       coalesce(sum(u.llm_usd), 0) AS llm_usd, coalesce(sum(u.compute_usd), 0) AS compute_usd
FROM (
    SELECT id, agent, status, attempts, tenant, created_at FROM tasks WHERE status = 'enqueued'
    UNION ALL
    SELECT id, agent, status, attempts, tenant, created_at FROM tasks WHERE status = 'processing'
) t
LEFT JOIN LATERAL (
    SELECT count(*) AS attempts, count(*) FILTER (WHERE a.status = 'throttled') AS throttled,
           sum(a.input_tokens) AS input_tokens, sum(a.output_tokens) AS output_tokens,
           sum(a.llm_cost_usd) AS llm_usd, sum(a.compute_cost_usd) AS compute_usd
    FROM task_attempts a
    WHERE a.task_id = t.id AND t.attempts > 0
) u ON true
WHERE {created_in_range}
  AND (%(agent)s::text IS NULL OR t.agent = %(agent)s)
  AND (%(tenant)s::text IS NULL OR coalesce(t.tenant, '') = %(tenant)s)
  AND (%(status)s::text IS NULL OR t.status = %(status)s)
GROUP BY t.agent, t.status;

-- name: histogram
-- One kind of histogram ('latency' or 'cost') of the finished tasks in the range, per
-- bucket, grouped by the keys asked for (NULL where not grouped).
SELECT CASE WHEN %(by_agent)s THEN h.agent END AS agent,
       CASE WHEN %(by_tenant)s THEN h.tenant END AS tenant,
       CASE WHEN %(by_day)s THEN date_trunc('day', h.period, 'UTC') END AS day,
       CASE WHEN %(by_status)s THEN h.status END AS status,
       h.bucket, sum(h.tasks)::bigint AS tasks
FROM task_histograms_exact h
WHERE h.kind = %(kind)s
  AND {in_span}
  AND (%(agent)s::text IS NULL OR h.agent = %(agent)s)
  AND (%(tenant)s::text IS NULL OR h.tenant = %(tenant)s)
  AND (%(status)s::text IS NULL OR h.status = %(status)s)
GROUP BY 1, 2, 3, 4, 5
HAVING sum(h.tasks) <> 0;

-- name: histogram_by_agent
-- The same from the histograms without tenant and status, for requests that filter and
-- group by neither (the dashboard's usual ones): a few hundred times fewer rows.
SELECT CASE WHEN %(by_agent)s THEN h.agent END AS agent,
       NULL::text AS tenant,
       CASE WHEN %(by_day)s THEN date_trunc('day', h.period, 'UTC') END AS day,
       NULL::text AS status,
       h.bucket, sum(h.tasks)::bigint AS tasks
FROM task_histograms_by_agent_exact h
WHERE h.kind = %(kind)s
  AND {in_span}
  AND (%(agent)s::text IS NULL OR h.agent = %(agent)s)
GROUP BY 1, 2, 3, 4, 5
HAVING sum(h.tasks) <> 0;

-- name: series
-- Finished tasks and their cost per period of creation (hour or day, %(unit)s).
SELECT date_trunc(%(unit)s, r.period, 'UTC') AS t,
       coalesce(sum(r.tasks) FILTER (WHERE r.status = 'completed'), 0)::bigint AS completed,
       coalesce(sum(r.tasks) FILTER (WHERE r.status = 'failed'), 0)::bigint AS failed,
       sum(r.llm_usd + r.compute_usd) AS cost_usd
FROM task_rollups_exact r
WHERE {in_span}
  AND (%(agent)s::text IS NULL OR r.agent = %(agent)s)
  AND (%(tenant)s::text IS NULL OR r.tenant = %(tenant)s)
  AND (%(status)s::text IS NULL OR r.status = %(status)s)
GROUP BY 1
ORDER BY 1;

-- name: costs_rollups
-- Costs of finished tasks, grouped by the keys asked for.
SELECT CASE WHEN %(by_agent)s THEN r.agent END AS agent,
       CASE WHEN %(by_tenant)s THEN r.tenant END AS tenant,
       CASE WHEN %(by_day)s THEN date_trunc('day', r.period, 'UTC') END AS day,
       CASE WHEN %(by_status)s THEN r.status END AS status,
       sum(r.tasks)::bigint AS tasks, sum(r.attempts)::bigint AS attempts,
       sum(r.input_tokens)::bigint AS input_tokens, sum(r.output_tokens)::bigint AS output_tokens,
       sum(r.llm_usd) AS llm_usd, sum(r.compute_usd) AS compute_usd
FROM task_rollups_exact r
WHERE {in_span}
  AND (%(agent)s::text IS NULL OR r.agent = %(agent)s)
  AND (%(tenant)s::text IS NULL OR r.tenant = %(tenant)s)
  AND (%(status)s::text IS NULL OR r.status = %(status)s)
GROUP BY 1, 2, 3, 4
HAVING sum(r.tasks) <> 0 OR sum(r.attempts) <> 0;

-- name: costs_live
-- Costs of enqueued and processing tasks (those retried), grouped the same way; read as in
-- live_by_agent_status.
SELECT CASE WHEN %(by_agent)s THEN t.agent END AS agent,
       CASE WHEN %(by_tenant)s THEN coalesce(t.tenant, '') END AS tenant,
       CASE WHEN %(by_day)s THEN date_trunc('day', t.created_at, 'UTC') END AS day,
       CASE WHEN %(by_status)s THEN t.status END AS status,
       count(*) AS tasks, coalesce(sum(u.attempts), 0)::bigint AS attempts,
       coalesce(sum(u.input_tokens), 0)::bigint AS input_tokens,
       coalesce(sum(u.output_tokens), 0)::bigint AS output_tokens,
       coalesce(sum(u.llm_usd), 0) AS llm_usd, coalesce(sum(u.compute_usd), 0) AS compute_usd
FROM (
    SELECT id, agent, status, attempts, tenant, created_at FROM tasks WHERE status = 'enqueued'
    UNION ALL
    SELECT id, agent, status, attempts, tenant, created_at FROM tasks WHERE status = 'processing'
) t
LEFT JOIN LATERAL (
    SELECT count(*) AS attempts, sum(a.input_tokens) AS input_tokens,
           sum(a.output_tokens) AS output_tokens, sum(a.llm_cost_usd) AS llm_usd,
           sum(a.compute_cost_usd) AS compute_usd
    FROM task_attempts a
    WHERE a.task_id = t.id AND t.attempts > 0
) u ON true
WHERE {created_in_range}
  AND (%(agent)s::text IS NULL OR t.agent = %(agent)s)
  AND (%(tenant)s::text IS NULL OR coalesce(t.tenant, '') = %(tenant)s)
  AND (%(status)s::text IS NULL OR t.status = %(status)s)
GROUP BY 1, 2, 3, 4;

-- name: cost_groups
-- A fragment: the end of a statement that costs tasks from their attempt rows, after a CTE
-- `chosen` of the tasks (with attempts) to cost. Costs per model are per attempt, which the
-- rollups do not keep. Each task's attempts come by (task_id, attempt) in a LATERAL
-- subquery: index probes for the chosen tasks, rather than a hash join that reads all the
-- attempts. A task counts once in each model's group it spent in; tasks without attempts
-- are in no group. The history of pruned tasks is not here. GROUPING SETS add the totals
-- row.
per_task AS (
    -- One row per task, or per task and model when grouped by model.
    SELECT CASE WHEN %(by_agent)s THEN t.agent END AS agent,
           CASE WHEN %(by_tenant)s THEN coalesce(t.tenant, '') END AS tenant,
           CASE WHEN %(by_day)s THEN date_trunc('day', t.created_at, 'UTC') END AS day,
           CASE WHEN %(by_status)s THEN t.status END AS status,
           u.model, u.attempts, u.input_tokens, u.output_tokens, u.llm_usd, u.compute_usd
    FROM chosen t
    CROSS JOIN LATERAL (
        SELECT CASE WHEN %(by_model)s THEN a.model END AS model, count(*) AS attempts,
               coalesce(sum(a.input_tokens), 0) AS input_tokens,
               coalesce(sum(a.output_tokens), 0) AS output_tokens,
               coalesce(sum(a.llm_cost_usd), 0) AS llm_usd,
               coalesce(sum(a.compute_cost_usd), 0) AS compute_usd
        FROM task_attempts a
        WHERE a.task_id = t.id
          AND (%(model)s::text IS NULL OR a.model = %(model)s)
        GROUP BY 1
    ) u
    WHERE {created_in_range}
      AND (%(agent)s::text IS NULL OR t.agent = %(agent)s)
      AND (%(tenant)s::text IS NULL OR coalesce(t.tenant, '') = %(tenant)s)
      AND (%(status)s::text IS NULL OR t.status = %(status)s)
)
SELECT agent, tenant, day, status, model, grouping(agent, tenant, day, status, model) <> 0
       AS is_total,
       count(*) AS tasks, sum(attempts)::bigint AS attempts,
       sum(input_tokens)::bigint AS input_tokens, sum(output_tokens)::bigint AS output_tokens,
       sum(llm_usd) AS llm_usd, sum(compute_usd) AS compute_usd,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY llm_usd + compute_usd) AS median_task_usd
FROM per_task
GROUP BY GROUPING SETS ((agent, tenant, day, status, model), ());

-- name: costs_by_model
-- Costs grouped or filtered by model: the tasks of the range, by the BRIN index on
-- created_at (the range is cost_groups' condition); `chosen` is inlined, not materialised.
WITH chosen AS (
    SELECT id, agent, tenant, status, created_at FROM tasks WHERE attempts > 0
), {cost_groups}

-- name: costs_of_tree
-- Costs of one tree (GET /api/costs?root=R): the root R and every task whose root_id is R
-- (tasks_root_idx), so a document's cost is its own attempts' and all its chunks', each
-- in the groups of its own agent, tenant and status. Two index lookups, not an OR that
-- no index serves.
WITH chosen AS (
    SELECT id, agent, tenant, status, created_at
    FROM tasks
    WHERE id = %(root)s AND attempts > 0
    UNION ALL
    SELECT id, agent, tenant, status, created_at
    FROM tasks
    WHERE root_id = %(root)s AND attempts > 0
), {cost_groups}

-- name: tree_root
-- Whether a task exists and, when it is a child, the root of its tree.
SELECT id, root_id FROM tasks WHERE id = %(id)s;

-- name: tasks_usage
-- For the tasks named (a page of GET /api/tasks: at most 500): the usage and cost of each
-- one's own attempts, its children's progress, and the usage of its descendants, whose sum
-- with its own is its tree's (a document's cost is its own and its chunks'). Index probes
-- only, per task: its attempts by (task_id, attempt), its children by tasks_children_idx,
-- and, only for a task with children, its descendants: by tasks_root_idx when it is a root
-- (the usual parent: a document and its chunks), by a walk down parent_id when it is a
-- child itself (a child's id is above its parent's, so the walk ends).
WITH page AS (
    SELECT DISTINCT unnest(%(ids)s::bigint[]) AS id
)
SELECT t.id, t.parent_id, t.root_id,
       kids.total, kids.done, kids.failed, kids.running, kids.queued,
       own.input_tokens, own.output_tokens, own.llm_usd, own.compute_usd,
       below.input_tokens AS below_input_tokens, below.output_tokens AS below_output_tokens,
       below.llm_usd AS below_llm_usd, below.compute_usd AS below_compute_usd
FROM page p
JOIN tasks t ON t.id = p.id
CROSS JOIN LATERAL (
    SELECT coalesce(sum(a.input_tokens), 0)::bigint AS input_tokens,
           coalesce(sum(a.output_tokens), 0)::bigint AS output_tokens,
           coalesce(sum(a.llm_cost_usd), 0) AS llm_usd,
           coalesce(sum(a.compute_cost_usd), 0) AS compute_usd
    FROM task_attempts a
    WHERE a.task_id = t.id AND t.attempts > 0
) own
CROSS JOIN LATERAL (
    SELECT count(*)::int AS total,
           count(*) FILTER (WHERE c.status = 'completed')::int AS done,
           count(*) FILTER (WHERE c.status IN ('failed', 'cancelled'))::int AS failed,
           count(*) FILTER (WHERE c.status = 'processing')::int AS running,
           count(*) FILTER (WHERE c.status = 'enqueued')::int AS queued
    FROM tasks c
    WHERE c.parent_id = t.id
) kids
CROSS JOIN LATERAL (
    SELECT coalesce(sum(u.input_tokens), 0)::bigint AS input_tokens,
           coalesce(sum(u.output_tokens), 0)::bigint AS output_tokens,
           coalesce(sum(u.llm_usd), 0) AS llm_usd,
           coalesce(sum(u.compute_usd), 0) AS compute_usd
    FROM (
        SELECT d.id FROM tasks d WHERE t.root_id IS NULL AND d.root_id = t.id
        UNION ALL
        SELECT w.id
        FROM (
            -- Each step stays within the tree's rows: a step is bounded by the tree's
            -- size (tasks_root_idx), never by all the children of every tree.
            WITH RECURSIVE down AS (
                SELECT c.id FROM tasks c WHERE t.root_id IS NOT NULL AND c.parent_id = t.id
                UNION ALL
                SELECT c.id
                FROM down
                JOIN tasks c ON c.parent_id = down.id
                WHERE c.root_id = t.root_id
            )
            SELECT id FROM down
        ) w
    ) d
    -- Per descendant, its attempts by (task_id, attempt): a join the planner could make a
    -- hash join over all the attempts when it overestimates the walk.
    CROSS JOIN LATERAL (
        SELECT sum(a.input_tokens) AS input_tokens, sum(a.output_tokens) AS output_tokens,
               sum(a.llm_cost_usd) AS llm_usd, sum(a.compute_cost_usd) AS compute_usd
        FROM task_attempts a
        WHERE a.task_id = d.id
    ) u
    WHERE kids.total > 0
) below;

-- name: prometheus_rollups
-- All history of finished tasks, per agent and status: the day rows only.
SELECT r.agent, r.status, sum(r.tasks)::bigint AS tasks, sum(r.attempts)::bigint AS attempts,
       sum(r.throttled)::bigint AS throttled, sum(r.input_tokens)::bigint AS input_tokens,
       sum(r.output_tokens)::bigint AS output_tokens, sum(r.llm_usd) AS llm_usd,
       sum(r.compute_usd) AS compute_usd
FROM task_rollups_exact r
WHERE r.grain = 'd'
GROUP BY r.agent, r.status;

-- name: prometheus_latency
SELECT h.agent, h.bucket, sum(h.tasks)::bigint AS tasks
FROM task_histograms_by_agent_exact h
WHERE h.grain = 'd' AND h.kind = 'latency'
GROUP BY h.agent, h.bucket
HAVING sum(h.tasks) <> 0
ORDER BY h.agent, h.bucket;
