-- The claim as one statement, for a worker with no outcome to write (an idle worker woken by
-- a NOTIFY): `SELECT * FROM conveyor_claim(...)` in autocommit, one round trip, instead of
-- BEGIN / planner_index_only / tasks_claim / COMMIT (conveyor/queue/exchange.py).
-- The live text; migrate() applies this file whenever it changes (conveyor/db/migrate.py).
--
-- The body is conveyor/sql/queue.sql tasks_claim with the parameters named p_* and ONE
-- line more, the `t.id = ANY (ARRAY(...))` of the UPDATE (below: why). The busy worker's
-- claim (with outcomes to write, in the finish's transaction) keeps tasks_claim without it:
-- there the LIMIT is a number in the text, the plan knows it, and the extra condition cost
-- a 2 x 16 drain ~16 % of PostgreSQL's CPU per task (e3601bd). tests/test_claim_plan.py
-- checks that the two texts differ by that line only, and that both claim the same rows.
--
-- Its settings are those of planner_index_only, as SET clauses: they hold while the
-- function runs, so also whenever plpgsql plans the body again (after an ANALYZE of tasks
-- invalidates it). plpgsql keeps one plan of the body per connection, and with
-- force_generic_plan it is the generic plan from the first call: the LIMIT is then a
-- parameter the plan does not know (it guesses a tenth of the rows). That is safe because
-- the claim does not depend on that guess: picked walks tasks_dequeue_idx, and the UPDATE
-- fetches its rows by id from the array of picked ids, never merge- or hash-joining over
-- tasks.
-- jit is off: that guess puts the plan's cost past jit_above_cost once the queue is deep,
-- and at 1,000,000 tasks waiting each claim then spent 40 ms compiling (benchmarks/
-- claim_plan.py --function) for a plan that runs in 1 ms.
-- The claim alone may commit asynchronously (p_commit_async; the worker asks for it when
-- the claim is its own transaction, in autocommit): its commit returns without waiting
-- for the WAL flush, 1 ms or more on a plain disk, which an idle worker's task waited for
-- before it started. Nothing else is: the enqueue before it and every outcome after it
-- commit durably, and a durable commit flushes all the WAL before it, this claim's too.
-- What a crash can then undo is the claim alone, if PostgreSQL dies within
-- wal_writer_delay of its commit: the task is queued again as if never claimed, its
-- worker's agent runs on, and everything that worker writes for that claim is refused by
-- the claim's token (claim_token, a random uuid, migration 0016), which no later claim
-- draws again. tests/test_claim_tokens.py crashes a server to check it.
-- enable_mergejoin / enable_hashjoin are NOT set here: the settings also hold in the
-- triggers the UPDATE fires, whose joins of transition tables must stay hash joins (with
-- both off, a claim of 32 took 50-90 ms in those triggers).
CREATE OR REPLACE FUNCTION conveyor_claim(
    p_worker_id text, p_agents text[], p_limit int, p_limited_limit int,
    p_commit_async boolean DEFAULT false
) RETURNS TABLE (
    id bigint, agent text, payload jsonb, priority smallint, attempts int, max_attempts int,
    free_attempts int, estimated_tokens int, tenant text, labels jsonb,
    created_at timestamptz, lease_expires_at timestamptz, reserved int, attempt_id bigint,
    claim_token uuid
)
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
    -- For the rest of the transaction, not only this function: a set_config(..., true) of
    -- a setting the function's SET clauses do not name outlives the function's call.
    IF p_commit_async THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    RETURN QUERY
    WITH wanted AS (
        SELECT a.*
        FROM unnest(p_agents) WITH ORDINALITY AS n(name, ord)
        JOIN agents a ON a.name = n.name
        ORDER BY n.ord
    ), picked AS MATERIALIZED (
        SELECT task_id, reserved
        FROM (
            SELECT c.id AS task_id, coalesce(c.estimated_tokens, 0) AS reserved, c.priority,
                   c.created_at
            FROM wanted a
            CROSS JOIN LATERAL (
                SELECT t.id, t.priority, t.created_at, t.estimated_tokens
                FROM tasks t
                WHERE NOT conveyor_is_limited(a)
                  AND t.status = 'enqueued'
                  AND t.agent = a.name
                  AND t.run_after <= now()
                ORDER BY t.priority DESC, t.created_at, t.id
                LIMIT p_limit
                FOR UPDATE OF t SKIP LOCKED
            ) c
            UNION ALL
            SELECT c.task_id, c.reserved, c.priority, c.created_at
            FROM wanted a
            CROSS JOIN LATERAL conveyor_admit(a.name, p_limited_limit) c
            WHERE conveyor_is_limited(a) AND p_limited_limit > 0
        ) admitted
        ORDER BY priority DESC, created_at, task_id
        LIMIT p_limit
    ), claimed AS (
        UPDATE tasks t
        SET status = 'processing',
            attempts = t.attempts + 1,
            locked_by = p_worker_id,
            lease_expires_at = now() + make_interval(secs => a.lease_seconds),
            started_at = coalesce(t.started_at, clock_timestamp()),
            claim_token = gen_random_uuid()
        FROM picked p, agents a
        WHERE t.id = ANY (ARRAY(SELECT task_id FROM picked))
          AND t.id = p.task_id
          AND a.name = t.agent
        RETURNING t.id, t.agent, t.payload, t.priority, t.attempts, t.max_attempts,
                  t.free_attempts, t.estimated_tokens, t.tenant, t.labels, t.created_at,
                  t.lease_expires_at, p.reserved, t.claim_token
    ), attempt_rows AS (
        INSERT INTO task_attempts (task_id, attempt, agent, worker_id, status, reserved_tokens,
                                   claim_token)
        SELECT id, attempts, agent, p_worker_id, 'running', reserved, claim_token FROM claimed
        RETURNING id, task_id
    )
    SELECT c.id, c.agent, c.payload, c.priority, c.attempts, c.max_attempts, c.free_attempts,
           c.estimated_tokens, c.tenant, c.labels, c.created_at, c.lease_expires_at, c.reserved,
           r.id AS attempt_id, c.claim_token
    FROM claimed c
    JOIN attempt_rows r ON r.task_id = c.id
    ORDER BY c.priority DESC, c.created_at, c.id;
END
$$;
