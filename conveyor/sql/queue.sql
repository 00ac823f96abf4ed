-- The queue's statements, one named block each, loaded by conveyor/sql/__init__.py.
-- Names are table first, then the action. Parameters are psycopg's %(name)s placeholders,
-- always bound, never formatted into the text. Batches travel as parallel arrays and are
-- turned back into rows with unnest(), so a batch of any size is one statement.

-- name: agents_register
-- Upsert the agents an App declares (names sorted by the caller, so that rows are locked in
-- the same order as claims lock them). Declaring again refreshes the code's settings; the
-- limits too, unless an operator has set them (`conveyor limits set`), which then win.
INSERT INTO agents AS a (name, max_attempts, lease_seconds, max_concurrent, max_tpm, max_rpm,
                       window_seconds, code_limits, compute_usd_per_hour)
SELECT r.name, r.max_attempts, r.lease_seconds, r.max_concurrent, r.max_tpm, r.max_rpm,
       r.window_seconds,
       jsonb_build_object('max_concurrent', r.max_concurrent, 'max_tpm', r.max_tpm,
                          'max_rpm', r.max_rpm, 'window_seconds', r.window_seconds),
       r.compute_usd_per_hour
FROM unnest(%(names)s::text[], %(max_attempts)s::int[], %(lease_seconds)s::float8[],
            %(max_concurrent)s::int[], %(max_tpm)s::int[], %(max_rpm)s::int[],
            %(window_seconds)s::float8[], %(compute_usd_per_hour)s::float8[])
     AS r(name, max_attempts, lease_seconds, max_concurrent, max_tpm, max_rpm, window_seconds,
          compute_usd_per_hour)
ON CONFLICT (name) DO UPDATE
SET max_attempts = excluded.max_attempts,
    lease_seconds = excluded.lease_seconds,
    compute_usd_per_hour = excluded.compute_usd_per_hour,
    code_limits = excluded.code_limits,
    max_concurrent = CASE WHEN a.limits_source = 'code' THEN excluded.max_concurrent
                          ELSE a.max_concurrent END,
    max_tpm = CASE WHEN a.limits_source = 'code' THEN excluded.max_tpm ELSE a.max_tpm END,
    max_rpm = CASE WHEN a.limits_source = 'code' THEN excluded.max_rpm ELSE a.max_rpm END,
    window_seconds = CASE WHEN a.limits_source = 'code' THEN excluded.window_seconds
                          ELSE a.window_seconds END,
    last_seen_at = now();

-- name: agents_set_limits
-- An operator's limits: they win over the code's from now on. NULL leaves a value as it is;
-- 0 removes that limit.
UPDATE agents
SET max_concurrent = nullif(coalesce(%(max_concurrent)s, max_concurrent), 0),
    max_tpm = nullif(coalesce(%(max_tpm)s, max_tpm), 0),
    max_rpm = nullif(coalesce(%(max_rpm)s, max_rpm), 0),
    window_seconds = coalesce(%(window_seconds)s, window_seconds),
    limits_source = 'operator'
WHERE name = %(name)s
RETURNING name;

-- name: agents_reset_limits
-- Back to the limits declared in code, and forget what throttling taught.
UPDATE agents
SET max_concurrent = (code_limits->>'max_concurrent')::int,
    max_tpm = (code_limits->>'max_tpm')::int,
    max_rpm = (code_limits->>'max_rpm')::int,
    window_seconds = coalesce((code_limits->>'window_seconds')::float8, 60),
    limits_source = 'code',
    throttle_factor = 1,
    throttled_at = NULL,
    learned_tpm = NULL,
    learned_concurrency = NULL,
    paused_until = NULL
WHERE name = %(name)s
RETURNING name;

-- name: agents_throttled
-- The endpoint throttled these agents (docs/limits.md explains the policy):
--  * the token budget becomes 90 %% of the tokens their window holds now (never more than
--    what was in force, and never below 100). Every report may lower it again: the first
--    429s of a burst come back while requests that will be refused are still counted;
--  * the factor that scales max_rpm is halved, and a concurrency cap (agents with neither
--    max_tpm nor max_rpm) set to half of what was running, at most once per sixth of the
--    window: the attempts in flight when they shrank will be throttled too, and must not
--    shrink them again;
--  * no claim of the agent until the earliest Retry-After of the batch (a window at most).
-- Growth restarts from now (conveyor_learned_tpm, conveyor_throttle_factor,
-- conveyor_learned_concurrency).
WITH locked AS MATERIALIZED (
    -- The rows are locked first, in name order: the order claims lock them in
    -- (conveyor_admit, agent by agent). Locked in the join's order instead, two agents
    -- throttled at once could be taken b-then-a while a claim holds a and waits for b: a
    -- deadlock. FOR UPDATE also hands back each row as it is once its lock is held, so the
    -- figures below read what a concurrent claim or report just wrote, not this
    -- statement's snapshot.
    SELECT g.name, g AS agent
    FROM agents g
    WHERE g.name = ANY(%(agents)s::text[])
    ORDER BY g.name
    FOR UPDATE
), s AS (
    SELECT l.name,
           (l.agent).throttled_at IS NULL
               OR (l.agent).throttled_at
                  < now() - make_interval(secs => (l.agent).window_seconds / 6) AS cooled,
           conveyor_throttle_factor(l.agent, now()) AS factor,
           u.running, u.tokens, r.retry_after
    FROM locked l
    JOIN unnest(%(agents)s::text[], %(retry_after)s::float8[]) AS r(name, retry_after)
      ON r.name = l.name
    CROSS JOIN LATERAL conveyor_usage(l.name, (l.agent).window_seconds) u
)
UPDATE agents a
SET throttle_factor = CASE WHEN s.cooled THEN greatest(0.05, s.factor * 0.5) ELSE s.factor END,
    learned_tpm = least(conveyor_learned_tpm(a, now()), a.max_tpm,
                        greatest(100.0, 0.9 * s.tokens)),
    learned_concurrency = CASE
        WHEN s.cooled AND a.max_tpm IS NULL AND a.max_rpm IS NULL THEN greatest(1.0, 0.5 * least(
            coalesce(conveyor_learned_concurrency(a, now()), 2147483647), 1 + s.running))
        ELSE conveyor_learned_concurrency(a, now()) END,
    paused_until = greatest(a.paused_until,
                            now() + make_interval(secs => least(s.retry_after, a.window_seconds))),
    throttled_at = now()
FROM s
WHERE a.name = s.name
RETURNING a.name, s.cooled AS shrunk, a.throttle_factor, a.learned_tpm, a.learned_concurrency,
          a.paused_until;

-- name: agents_limits
-- Every agent's limits, what throttling made of them, and the current window's usage.
SELECT a.name, a.max_concurrent, a.max_tpm, a.max_rpm, a.window_seconds, a.limits_source,
       conveyor_throttle_factor(a, now()) AS throttle_factor,
       conveyor_learned_concurrency(a, now()) AS learned_concurrency,
       conveyor_learned_tpm(a, now()) AS learned_tpm,
       extract(epoch FROM a.paused_until - now()) AS paused_for,
       u.running, u.tokens, u.requests
FROM agents a
CROSS JOIN LATERAL conveyor_usage(a.name, a.window_seconds) u
ORDER BY a.name;

-- name: agents_known
SELECT name FROM agents WHERE name = ANY(%(names)s::text[]);

-- name: tasks_enqueue
-- Insert a batch, given as one JSON array of task objects, in input order (ids and
-- created_at then follow that order). A task whose (agent, idempotency_key) exists
-- already is skipped; the caller looks its id up after.
INSERT INTO tasks (agent, payload, priority, idempotency_key, estimated_tokens,
                   max_attempts, run_after, tenant, labels)
SELECT i.agent, coalesce(i.payload, '{}'), i.priority, i.idempotency_key, i.estimated_tokens,
       coalesce(i.max_attempts, a.max_attempts),
       -- A delay in seconds is added to the database's clock, not the client's.
       coalesce(i.run_after, now() + make_interval(secs => i.run_in), now()),
       i.tenant, coalesce(i.labels, '{}')
FROM ROWS FROM (
         json_to_recordset(%(tasks)s::json)
         AS (agent text, payload jsonb, priority smallint, idempotency_key text,
             estimated_tokens int, max_attempts int, run_after timestamptz,
             run_in float8, tenant text, labels jsonb)
     ) WITH ORDINALITY AS i(agent, payload, priority, idempotency_key, estimated_tokens,
                            max_attempts, run_after, run_in, tenant, labels, ord)
JOIN agents a ON a.name = i.agent
ORDER BY i.ord
ON CONFLICT (agent, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id, agent, idempotency_key;

-- name: tasks_reserve_ids
-- For a large batch without idempotency keys, which goes straight into tasks by COPY
-- (several times faster than any parameterised insert): its ids, taken from the identity
-- sequence in input order, the transaction's now() for its run_after, and the max_attempts
-- of its agents. COPY writes the ids itself, like INSERT ... OVERRIDING SYSTEM VALUE.
-- The sequence is looked up once (the scalar subquery): pg_get_serial_sequence() per row
-- took 90 %% of this statement's time at 10,000 ids.
SELECT array_agg(nextval((SELECT pg_get_serial_sequence('tasks', 'id')::regclass)) ORDER BY g)
           AS ids,
       now() AS now,
       (SELECT json_object_agg(name, max_attempts) FROM agents
        WHERE name = ANY(%(agents)s::text[])) AS max_attempts
FROM generate_series(1, %(n)s) AS g;

-- name: tasks_copy
COPY tasks (id, agent, payload, priority, estimated_tokens, max_attempts, run_after,
            tenant, labels)
FROM STDIN;

-- name: tasks_by_idempotency_key
SELECT t.id, t.agent, t.idempotency_key
FROM unnest(%(agents)s::text[], %(idempotency_keys)s::text[]) AS k(agent, idempotency_key)
JOIN tasks t ON t.agent = k.agent AND t.idempotency_key = k.idempotency_key;

-- name: planner_index_only
-- For the claim's transaction only: see queue.finish_and_claim() for why scans other than
-- the index are off. The claim also runs from its generic plan once psycopg has prepared
-- it on a connection (after a few executions): left to choose, PostgreSQL plans it again
-- for every execution (the custom plans look cheaper), and planning this statement costs
-- about 0.5-0.7 ms, as much as running it for an idle worker. That is safe only because the
-- claim's LIMIT is a constant in its text (tasks_claim): with the LIMIT a parameter, the
-- generic plan guessed a tenth of the queue for `picked` and merge-joined the UPDATE over
-- all of tasks_pkey, about a second per claim at 1,000,000 tasks waiting
-- (benchmarks/claim_plan.py, tests/test_claim_plan.py).
SELECT set_config('enable_bitmapscan', 'off', true),
       set_config('enable_seqscan', 'off', true),
       set_config('plan_cache_mode', 'force_generic_plan', true);

-- name: tasks_claim
-- Claim up to %(limit)s runnable tasks of the given agents in one statement.
-- %(limit)s is not sent as a parameter: queue.claim_statement() writes the number into the
-- text, one text per batch size, so that the plan cached for each text knows its LIMIT
-- (see planner_index_only). A worker asks for at most its capacity, so it uses a few texts.
-- Per agent (in name order, the order agent rows are always locked in):
--  * an agent without limits takes the plain path: the first rows of tasks_dequeue_idx
--    (agent, priority DESC, created_at, id), locked with SKIP LOCKED so that claims of
--    other workers pass each other instead of queueing on the same rows; each reserves its
--    estimate, so that the window's usage is known if throttling teaches it a budget;
--  * a limited agent goes through conveyor_admit() (conveyor/sql/functions/admission.sql), which serialises its
--    claims on the agent's row and admits what fits its concurrency, token and request
--    budgets, with the tokens each task reserves.
-- A worker asks for fewer tasks of limited agents (%(limited_limit)s: no more than it can
-- start at once), as a task waiting in its prefetch buffer would hold a share of the
-- agent's limits without using it. The best %(limit)s over all agents are claimed; the other rows are unlocked at commit, a
-- few ms later. The MATERIALIZED CTE is an optimisation fence, so that the LIMITs bound
-- the rows locked. The attempt rows are written by the same statement: a claim and its
-- attempt exist together or not at all.
WITH wanted AS (
    SELECT a.*
    FROM unnest(%(agents)s::text[]) WITH ORDINALITY AS n(name, ord)
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
            LIMIT %(limit)s
            FOR UPDATE OF t SKIP LOCKED
        ) c
        UNION ALL
        SELECT c.task_id, c.reserved, c.priority, c.created_at
        FROM wanted a
        CROSS JOIN LATERAL conveyor_admit(a.name, %(limited_limit)s) c
        WHERE conveyor_is_limited(a) AND %(limited_limit)s > 0
    ) admitted
    ORDER BY priority DESC, created_at, task_id
    LIMIT %(limit)s
), claimed AS (
    UPDATE tasks t
    SET status = 'processing',
        attempts = t.attempts + 1,
        locked_by = %(worker_id)s,
        lease_expires_at = now() + make_interval(secs => a.lease_seconds),
        started_at = coalesce(t.started_at, clock_timestamp()),
        claim_token = gen_random_uuid()
    FROM picked p, agents a
    WHERE t.id = p.task_id
      AND a.name = t.agent
    RETURNING t.id, t.agent, t.payload, t.priority, t.attempts, t.max_attempts,
              t.free_attempts, t.estimated_tokens, t.tenant, t.labels, t.created_at,
              t.lease_expires_at, p.reserved, t.claim_token
), attempt_rows AS (
    INSERT INTO task_attempts (task_id, attempt, agent, worker_id, status, reserved_tokens,
                               claim_token)
    SELECT id, attempts, agent, %(worker_id)s, 'running', reserved, claim_token FROM claimed
    RETURNING id, task_id
)
SELECT c.id, c.agent, c.payload, c.priority, c.attempts, c.max_attempts, c.free_attempts,
       c.estimated_tokens, c.tenant, c.labels, c.created_at, c.lease_expires_at, c.reserved,
       r.id AS attempt_id, c.claim_token
FROM claimed c
JOIN attempt_rows r ON r.task_id = c.id
ORDER BY c.priority DESC, c.created_at, c.id;

-- name: tasks_claim_alone
-- tasks_claim as one statement in autocommit, when there is nothing to finish (an idle
-- worker's claim): see conveyor_claim() in conveyor/sql/functions/claim.sql for how it
-- keeps planner_index_only's settings and a plan that does not know its LIMIT, and why
-- %(commit_async)s (true only in autocommit, where the claim is the whole transaction)
-- lets its commit skip the wait for the WAL flush.
SELECT * FROM conveyor_claim(%(worker_id)s, %(agents)s::text[], %(limit)s::int,
                             %(limited_limit)s::int, %(commit_async)s::boolean);

-- name: attempts_finish
-- End a batch of a worker's attempts (or a callback's) with their outcomes: see
-- conveyor_end_attempts() in conveyor/sql/functions/attempts.sql for the outcomes, the
-- fence and how a late outcome is recorded.
SELECT task_id, attempt, applied
FROM conveyor_end_attempts(
    %(task_ids)s::bigint[], %(attempts)s::int[], %(outcomes)s::text[],
    %(results)s::text[]::jsonb[], %(errors)s::text[], %(retry_delays)s::float8[],
    %(models)s::text[], %(input_tokens)s::int[], %(output_tokens)s::int[],
    %(started_after)s::float8[], %(trace_ids)s::text[], %(llm_costs)s::numeric[],
    %(compute_rates)s::float8[], %(run_ids)s::text[], %(since_last_call)s::float8[],
    %(claim_tokens)s::uuid[]);

-- name: tasks_renew_leases
-- Extend the leases of the attempts a worker is running. Fenced by attempt and claim token
-- like every write of a worker (a NULL token: an attempt claimed before tokens existed, the
-- attempt number alone); the ids that do not come back were taken from it (lost or
-- cancelled, or a crash undid the claim). Only lease_expires_at changes and it is in no
-- index, so this is a HOT update.
UPDATE tasks t
SET lease_expires_at = now() + make_interval(secs => a.lease_seconds)
FROM unnest(%(task_ids)s::bigint[], %(attempts)s::int[], %(claim_tokens)s::uuid[])
     AS r(task_id, attempt, claim_token),
     agents a
WHERE t.id = r.task_id
  AND t.attempts = r.attempt
  AND (r.claim_token IS NULL OR t.claim_token = r.claim_token)
  AND t.status = 'processing'
  AND a.name = t.agent
RETURNING t.id;

-- name: tasks_sweep
-- Take back tasks whose worker stopped renewing the lease (crashed, frozen, cut off), or,
-- with %(orphans_of)s, the tasks a reconnecting worker holds but does not know it runs
-- (claims whose commit it never heard of): those whose claim token is none of %(keep)s,
-- the claims it runs (an attempt claimed before tokens existed is left to its lease). Their attempts end 'lost' through
-- conveyor_end_attempts(): the task goes back to the queue at once, or fails when it has
-- no retries left (the retry rule is the function's). The rows are locked here, as they
-- are now (FOR UPDATE re-reads a row changed since the snapshot and checks it again), so a
-- lease renewed meanwhile is not swept, and the function's fence finds them as locked.
WITH expired AS MATERIALIZED (
    SELECT id, attempts, claim_token,
           'attempt ' || attempts || ' lost: worker ' || coalesce(locked_by, '?')
               || ' stopped renewing its lease' AS error
    FROM tasks
    WHERE status = 'processing'
      AND (lease_expires_at < now()
           OR (locked_by = %(orphans_of)s AND claim_token <> ALL(%(keep)s::uuid[])))
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), batch AS (
    -- All NULL when nothing expired: then the function ends nothing.
    SELECT array_agg(id) AS ids, array_agg(attempts) AS attempts,
           array_agg('lost'::text) AS outcomes, array_agg(error) AS errors,
           array_agg(0::float8) AS retry_delays, array_agg(claim_token) AS claim_tokens
    FROM expired
)
SELECT e.task_id AS id, e.status
FROM batch b
CROSS JOIN LATERAL conveyor_end_attempts(
    b.ids, b.attempts, b.outcomes, NULL, b.errors, b.retry_delays,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, p_claim_tokens => b.claim_tokens) e
WHERE e.applied
ORDER BY e.task_id;

-- name: sweeper_lock
-- One sweeper at a time across all workers; the lock ends with the transaction.
SELECT pg_try_advisory_xact_lock(hashtext('conveyor.sweeper')) AS locked;

-- name: tasks_cancel
-- Cancel a task that has not finished. A waiting task is simply cancelled; a running
-- attempt ends 'cancelled' at once, through conveyor_end_attempts() like every end of an
-- attempt. The NOTIFY of the status change tells its worker to stop the agent, and
-- whatever the agent still reports afterwards is fenced off by the same function.
WITH target AS MATERIALIZED (
    SELECT id, status, attempts, claim_token
    FROM tasks
    WHERE id = %(id)s
      AND status IN ('enqueued', 'processing')
    FOR UPDATE
), waiting AS (
    UPDATE tasks t
    SET status = 'cancelled',
        error = 'cancelled',
        finished_at = clock_timestamp()
    FROM target x
    WHERE t.id = x.id
      AND x.status = 'enqueued'
    RETURNING t.id
), running AS (
    -- All NULL unless the task runs: then the function ends nothing.
    SELECT array_agg(id) AS ids, array_agg(attempts) AS attempts,
           array_agg('cancelled'::text) AS outcomes, array_agg('cancelled'::text) AS errors,
           array_agg(claim_token) AS claim_tokens
    FROM target
    WHERE status = 'processing'
)
SELECT id FROM waiting
UNION ALL
SELECT e.task_id
FROM running r
CROSS JOIN LATERAL conveyor_end_attempts(
    r.ids, r.attempts, r.outcomes, NULL, r.errors, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, p_claim_tokens => r.claim_tokens) e
WHERE e.applied;

-- name: tasks_retry
-- Run a failed or cancelled task again, with a fresh allowance of attempts.
UPDATE tasks
SET status = 'enqueued',
    free_attempts = attempts,
    run_after = now(),
    result = NULL,
    error = NULL,
    finished_at = NULL
WHERE id = %(id)s
  AND status IN ('failed', 'cancelled')
RETURNING id;

-- name: tasks_get
SELECT id, agent, status, priority, payload, result, error, idempotency_key,
       estimated_tokens, attempts, max_attempts, run_after, lease_expires_at, locked_by,
       tenant, labels, created_at, started_at, finished_at
FROM tasks
WHERE id = %(id)s;

-- name: attempts_of_task
SELECT id, task_id, attempt, worker_id, run_id, trace_id, status, started_at, finished_at,
       model, input_tokens, output_tokens, llm_cost_usd, compute_cost_usd, error, late_outcome
FROM task_attempts
WHERE task_id = %(task_id)s
ORDER BY attempt;

-- name: tasks_list
-- Newest first, a page at a time: the cursor is the last id seen (ids only grow, so pages
-- stay stable while new tasks arrive). since/until bound created_at. A tenant of '' means
-- the tasks without one (as in GET /api/metrics). top_level keeps the tasks nobody spawned:
-- a document's page-range children are newer than it and would push it off a short page.
SELECT id, agent, status, priority, attempts, created_at, started_at, finished_at,
       split_part(error, E'\n', 1) AS error
FROM tasks
WHERE (%(status)s::text IS NULL OR status = %(status)s)
  AND (NOT %(top_level)s::boolean OR parent_id IS NULL)
  AND (%(agent)s::text IS NULL OR agent = %(agent)s)
  AND (%(tenant)s::text IS NULL OR coalesce(tenant, '') = %(tenant)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: tasks_prune
-- Delete a small batch of tasks that finished before the cutoff, with their attempts (and
-- their rows of the token window, attempt_usage).
-- Small batches and SKIP LOCKED keep locks short; the caller loops until nothing is left.
WITH doomed AS MATERIALIZED (
    SELECT id
    FROM tasks
    WHERE status IN ('completed', 'failed', 'cancelled')
      AND finished_at < now() - make_interval(secs => %(older_than)s)
    ORDER BY finished_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), attempts_gone AS (
    DELETE FROM task_attempts a USING doomed d WHERE a.task_id = d.id
    RETURNING a.agent, a.finished_at, a.id
), usage_gone AS (
    -- Their rows of the token window (migration 0017), by key.
    DELETE FROM attempt_usage u USING attempts_gone g
    WHERE u.agent = g.agent AND u.finished_at = g.finished_at AND u.attempt_id = g.id
)
DELETE FROM tasks t USING doomed d WHERE t.id = d.id
RETURNING t.id;

-- name: keys_callbacks
-- The key callback secrets derive from: created by the first process that needs it.
-- DO UPDATE, not DO NOTHING: a caller that finds the key being created waits for that
-- insert's commit and then gets the committed row back from RETURNING. (With DO NOTHING and
-- a read of the table in the same statement, the read's snapshot predates that commit and
-- finds no key at all.) The update writes the value it finds, so the key never changes.
INSERT INTO conveyor_keys AS k (name, value) VALUES ('callbacks', %(value)s)
ON CONFLICT (name) DO UPDATE SET value = k.value
RETURNING k.value;

-- name: attempts_set_run_id
-- The dispatcher's name for the job. A callback may already have ended the attempt:
-- the run id is recorded all the same, for the record. Only on the attempt of that claim:
-- after a crash undid a claim, its attempt id may be drawn again by the next one.
UPDATE task_attempts
SET run_id = %(run_id)s
WHERE id = %(attempt_id)s
  AND run_id IS NULL
  AND (%(claim_token)s::uuid IS NULL OR claim_token = %(claim_token)s::uuid);

-- name: attempts_for_callback
SELECT a.id, a.task_id, a.attempt, a.agent, a.status, a.late_outcome, a.claim_token,
       t.status AS task_status, t.attempts AS task_attempts, t.free_attempts, t.max_attempts
FROM task_attempts a
JOIN tasks t ON t.id = a.task_id
WHERE a.id = %(attempt_id)s;
