-- The review queue's statements (conveyor/reviews/), one named block each. Tables:
-- reviews, result_versions, review_fields (migration 0011); the trigger that marks a task
-- for review is conveyor/sql/functions/reviews.sql.

-- name: agents_register_review_below
-- The thresholds an App declares in code. They are the agent's threshold unless an
-- operator set one (then the operator's wins, as with the limits). Only rows that would
-- change are locked, in name order (the order claims lock agents in), so an App that
-- registers again, as every process does at start, writes nothing.
WITH wanted AS (
    SELECT * FROM unnest(%(names)s::text[], %(review_below)s::float8[]) AS w(name, review_below)
), locked AS MATERIALIZED (
    SELECT a.name, w.review_below
    FROM agents a
    JOIN wanted w USING (name)
    WHERE a.code_review_below <> w.review_below
       OR (a.review_source = 'code' AND a.review_below <> w.review_below)
    ORDER BY a.name
    FOR UPDATE OF a
)
UPDATE agents a
SET code_review_below = l.review_below,
    review_below = CASE WHEN a.review_source = 'code' THEN l.review_below ELSE a.review_below END
FROM locked l
WHERE a.name = l.name;

-- name: agents_set_review_below
-- An operator's threshold: it wins over the code's from now on.
UPDATE agents
SET review_below = %(review_below)s, review_source = 'operator'
WHERE name = %(name)s
RETURNING name, review_below, code_review_below, review_source;

-- name: agents_reset_review_below
-- Back to the threshold declared in code.
UPDATE agents
SET review_below = code_review_below, review_source = 'code'
WHERE name = %(name)s
RETURNING name, review_below, code_review_below, review_source;

-- name: agents_review_below
-- Every agent's threshold and where it comes from.
SELECT name, review_below, code_review_below, review_source
FROM agents
ORDER BY name;

-- The backlog, oldest first. Four statements rather than one with optional filters, so
-- that each is planned on the partial index that serves it (a generic plan of
-- "agent = $1 OR $1 IS NULL" can use none). The cursor is the last row's
-- (created_at, task_id); the first page starts from '-infinity'.

-- name: reviews_pending
SELECT task_id, agent, tenant, confidence, review_below, version, created_at
FROM reviews
WHERE status = 'pending'
  AND (created_at, task_id) > (%(after_at)s::timestamptz, %(after_id)s::bigint)
ORDER BY created_at, task_id
LIMIT %(limit)s;

-- name: reviews_pending_agent
SELECT task_id, agent, tenant, confidence, review_below, version, created_at
FROM reviews
WHERE status = 'pending' AND agent = %(agent)s
  AND (created_at, task_id) > (%(after_at)s::timestamptz, %(after_id)s::bigint)
ORDER BY created_at, task_id
LIMIT %(limit)s;

-- name: reviews_pending_tenant
SELECT task_id, agent, tenant, confidence, review_below, version, created_at
FROM reviews
WHERE status = 'pending' AND tenant = %(tenant)s
  AND (created_at, task_id) > (%(after_at)s::timestamptz, %(after_id)s::bigint)
ORDER BY created_at, task_id
LIMIT %(limit)s;

-- name: reviews_pending_agent_tenant
-- The agent's index, the tenant filtered on it: an agent's backlog is walked in order and
-- the other tenants' rows skipped.
SELECT task_id, agent, tenant, confidence, review_below, version, created_at
FROM reviews
WHERE status = 'pending' AND agent = %(agent)s AND tenant = %(tenant)s
  AND (created_at, task_id) > (%(after_at)s::timestamptz, %(after_id)s::bigint)
ORDER BY created_at, task_id
LIMIT %(limit)s;

-- name: reviews_backlog
-- Pending reviews by agent and tenant, the oldest backlog first: the Review page's
-- summary. The counts are review_backlog's (kept by triggers: a few rows, not a count of
-- the whole backlog); each group's oldest is the first entry of its range in
-- reviews_pending_group_idx.
SELECT c.agent, c.tenant, c.pending,
       (SELECT min(r.created_at) FROM reviews r
        WHERE r.status = 'pending' AND r.agent = c.agent AND r.tenant = c.tenant) AS oldest
FROM (SELECT agent, tenant, sum(pending)::bigint AS pending
      FROM review_backlog
      GROUP BY agent, tenant
      HAVING sum(pending) > 0) c
ORDER BY oldest, agent, tenant;

-- name: reviews_get
-- One task's review with what the review screen shows of the task.
SELECT r.task_id, r.agent, r.tenant, r.status, r.confidence, r.review_below, r.version,
       r.created_at, r.reviewed_at, r.reviewed_by, r.fields_corrected,
       t.result, t.payload, t.status AS task_status, t.finished_at
FROM reviews r
JOIN tasks t ON t.id = r.task_id
WHERE r.task_id = %(task_id)s;

-- name: reviews_task_result
-- A task without a review: is it there at all, and what is its status (for the error).
SELECT id, status, result FROM tasks WHERE id = %(task_id)s;

-- name: reviews_decide
-- The review itself, guarded: only a pending review of the version the reviewer read is
-- decided. Of two reviewers who read the same version, the second finds no row (the
-- first one's update holds the row until it commits, then this re-checks the WHERE on the
-- new row) and is told of the conflict; so a decision is never applied twice, nor lost.
UPDATE reviews
SET status = %(status)s,
    version = version + %(new_versions)s,
    reviewed_at = now(),
    reviewed_by = %(who)s,
    fields_corrected = %(fields_corrected)s
WHERE task_id = %(task_id)s AND status = 'pending' AND version = %(version)s
RETURNING task_id, agent, tenant, status, version, reviewed_at, reviewed_by;

-- name: result_versions_keep_machine
-- The machine's result, as version 1, before anything replaces it in tasks.result; made
-- when the task finished.
INSERT INTO result_versions (task_id, version, result, made_by, made_at, action)
SELECT t.id, 1, t.result, 'machine', coalesce(t.finished_at, now()), 'machine'
FROM tasks t
WHERE t.id = %(task_id)s
ON CONFLICT (task_id, version) DO NOTHING;

-- name: result_versions_add
INSERT INTO result_versions (task_id, version, result, made_by, action, corrections)
VALUES (%(task_id)s, %(version)s, %(result)s, %(who)s, %(action)s, %(corrections)s);

-- name: tasks_set_reviewed_result
-- The corrected version becomes the task's result (what every reader of the task sees);
-- the status does not change, so no task event and no state-machine transition.
UPDATE tasks SET result = %(result)s WHERE id = %(task_id)s AND status = 'completed';

-- name: review_fields_add
INSERT INTO review_fields (task_id, field, agent, confidence, corrected)
SELECT %(task_id)s, f.field, %(agent)s, f.confidence, f.corrected
FROM unnest(%(fields)s::text[], %(confidences)s::float8[], %(corrected)s::boolean[])
     AS f(field, confidence, corrected);

-- name: reviews_notify
-- The `review` event of the live stream, sent at the commit of the decision.
SELECT pg_notify('conveyor', %(payload)s);

-- name: result_versions_of
SELECT version, result, made_by, made_at, action, corrections
FROM result_versions
WHERE task_id = %(task_id)s
ORDER BY version;

-- name: reviews_metrics
-- Per agent: the backlog and its oldest, and of the reviews decided in the range, how
-- many, how long they waited (median and 90th percentile, seconds) and how many fields
-- they corrected.
WITH pending AS (
    SELECT b.agent, sum(b.pending)::bigint AS pending,
           (SELECT min(r.created_at) FROM reviews r
            WHERE r.status = 'pending' AND r.agent = b.agent) AS oldest
    FROM review_backlog b
    GROUP BY b.agent
    HAVING sum(b.pending) > 0
), done AS (
    SELECT agent,
           count(*) AS reviewed,
           count(*) FILTER (WHERE status = 'corrected') AS corrected,
           sum(fields_corrected) AS fields_corrected,
           percentile_cont(0.5) WITHIN GROUP
               (ORDER BY extract(epoch FROM reviewed_at - created_at)) AS p50_seconds,
           percentile_cont(0.9) WITHIN GROUP
               (ORDER BY extract(epoch FROM reviewed_at - created_at)) AS p90_seconds
    FROM reviews
    WHERE status <> 'pending'
      AND reviewed_at >= coalesce(%(since)s::timestamptz, '-infinity')
      AND reviewed_at < coalesce(%(until)s::timestamptz, 'infinity')
    GROUP BY agent
)
SELECT coalesce(p.agent, d.agent) AS agent,
       coalesce(p.pending, 0) AS pending, p.oldest,
       coalesce(d.reviewed, 0) AS reviewed, coalesce(d.corrected, 0) AS corrected,
       coalesce(d.fields_corrected, 0) AS fields_corrected,
       d.p50_seconds, d.p90_seconds
FROM pending p
FULL JOIN done d USING (agent)
ORDER BY 1;

-- name: review_fields_accuracy
-- "Accuracy as reviewed": per agent and field, how often the machine's value was right,
-- with the mean confidence it gave the field, over the reviews decided in the range.
SELECT agent, field,
       count(*) AS reviewed,
       count(*) FILTER (WHERE NOT corrected) AS right,
       avg(confidence) AS mean_confidence
FROM review_fields
WHERE reviewed_at >= coalesce(%(since)s::timestamptz, '-infinity')
  AND reviewed_at < coalesce(%(until)s::timestamptz, 'infinity')
GROUP BY agent, field
ORDER BY agent, field;
