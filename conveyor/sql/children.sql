-- Statements about families of tasks (docs/children.md), loaded by conveyor/sql/__init__.py
-- like queue.sql. The spawn is written by conveyor_end_attempts() with the outcome that
-- ends the parent's attempt; the fan-in by the trigger of functions/children.sql.

-- name: children_check
-- What a spawn needs the database for, in one round trip: the agents nobody registered,
-- the parent's depth, and the children that would repeat the task itself or one of its
-- ancestors (same agent and key): a tree that would grow without end.
WITH RECURSIVE wanted AS (
    SELECT * FROM unnest(%(agents)s::text[], %(keys)s::text[]) AS w(agent, key)
), ancestors AS (
    SELECT id, parent_id, agent, child_key, depth FROM tasks WHERE id = %(id)s
    UNION ALL
    -- Up to rows less deep than the one it comes from: it ends within tasks.depth's bound.
    SELECT t.id, t.parent_id, t.agent, t.child_key, t.depth
    FROM tasks t
    JOIN ancestors a ON t.id = a.parent_id AND t.depth < a.depth
)
SELECT t.depth,
       ARRAY(SELECT DISTINCT w.agent FROM wanted w
             WHERE NOT EXISTS (SELECT 1 FROM agents g WHERE g.name = w.agent)
             ORDER BY w.agent) AS unknown,
       ARRAY(SELECT ARRAY[w.agent, w.key] FROM wanted w
             JOIN ancestors a ON a.agent = w.agent AND a.child_key = w.key) AS cycles
FROM tasks t
WHERE t.id = %(id)s;

-- name: children_of_task
-- A parent's children in spawn order (ids follow it), by tasks_children_idx.
SELECT id, child_key, agent, status, result, error
FROM tasks
WHERE parent_id = %(id)s
ORDER BY id;

-- name: children_summary
-- A task's place in its family, its children's progress, and the usage and cost of its
-- whole tree (its own attempts and all its descendants'): a document's cost is the sum
-- of its chunks' and its own. Read at request time, down the tree by parent_id
-- (conveyor_tree(), tasks_children_idx).
WITH usage AS (
    SELECT coalesce(sum(a.input_tokens), 0)::bigint AS input_tokens,
           coalesce(sum(a.output_tokens), 0)::bigint AS output_tokens,
           coalesce(sum(a.llm_cost_usd), 0) AS llm_cost_usd,
           coalesce(sum(a.compute_cost_usd), 0) AS compute_cost_usd
    FROM conveyor_tree(%(id)s) tree
    JOIN task_attempts a ON a.task_id = tree.id
), kids AS (
    SELECT count(*)::int AS total,
           count(*) FILTER (WHERE status = 'completed')::int AS done,
           count(*) FILTER (WHERE status IN ('failed', 'cancelled'))::int AS failed,
           count(*) FILTER (WHERE status = 'processing')::int AS running,
           count(*) FILTER (WHERE status = 'enqueued')::int AS queued
    FROM tasks
    WHERE parent_id = %(id)s
)
SELECT t.parent_id, t.child_key AS key, t.depth, t.waiting_since IS NOT NULL AS waiting,
       k.total, k.done, k.failed, k.running, k.queued,
       u.input_tokens, u.output_tokens, u.llm_cost_usd, u.compute_cost_usd
FROM tasks t, kids k, usage u
WHERE t.id = %(id)s;

-- name: tasks_cancel_tree_waiting
-- Cancel a task and its unfinished descendants that no attempt runs: queued ones, and
-- parents waiting for their children. Locked children first (ids descending: a child's id
-- is above its parent's), the order in which a worker ending a child locks the child and
-- then its parent, so a cancel and an outcome never deadlock. FOR UPDATE hands back each
-- row as it is once locked: a task that started or ended meanwhile is judged as it is now.
-- But the walk of the tree is this statement's snapshot: children that a spawn inserted
-- and committed while this waited for a row are not in it; cancel_tree() walks again.
WITH locked AS MATERIALIZED (
    SELECT x.id, x.status, x.waiting_since
    FROM tasks x
    JOIN conveyor_tree(%(id)s) tree USING (id)
    WHERE x.status IN ('enqueued', 'processing')
    ORDER BY x.id DESC
    FOR UPDATE OF x
)
UPDATE tasks t
SET status = 'cancelled',
    error = 'cancelled',
    waiting_since = NULL,
    finished_at = clock_timestamp()
FROM locked l
WHERE t.id = l.id
  AND (l.status = 'enqueued' OR l.waiting_since IS NOT NULL)
RETURNING t.id;

-- name: tasks_cancel_tree_running
-- Then the attempts running in the tree end 'cancelled', through conveyor_end_attempts()
-- like every end of an attempt: the NOTIFY of the change stops their agents, and what
-- they still report is fenced off. (The rows are locked by the statement before.)
WITH running AS MATERIALIZED (
    SELECT x.id, x.attempts, x.claim_token
    FROM tasks x
    JOIN conveyor_tree(%(id)s) tree USING (id)
    WHERE x.status = 'processing' AND x.waiting_since IS NULL
    ORDER BY x.id DESC
    FOR UPDATE OF x
), batch AS (
    -- All NULL when nothing runs: then the function ends nothing.
    SELECT array_agg(id) AS ids, array_agg(attempts) AS attempts,
           array_agg('cancelled'::text) AS outcomes, array_agg('cancelled'::text) AS errors,
           array_agg(claim_token) AS claim_tokens
    FROM running
)
SELECT e.task_id AS id
FROM batch b
CROSS JOIN LATERAL conveyor_end_attempts(
    b.ids, b.attempts, b.outcomes, NULL, b.errors, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, p_claim_tokens => b.claim_tokens) e
WHERE e.applied;
