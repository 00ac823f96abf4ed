-- How an attempt ends: the one write that does it, for every way it can end. A worker's
-- batch of outcomes (queue.finish), a callback from an external job (the same call), the
-- sweeper (an expired lease) and a cancel all end attempts through conveyor_end_attempts(),
-- so the retry rule, the fence and the late-outcome record are written here once.
-- The live text; migrate() applies this file whenever it changes.
--
--   outcome     who reports it                    attempt becomes  task becomes
--   succeeded   worker, callback                  succeeded        completed
--   failed      worker, callback                  failed           enqueued after retry_delay
--                                                                  if the reporter wants a
--                                                                  retry (retry_delay not NULL)
--                                                                  and one is left; else failed
--   throttled   worker (the endpoint said 429)    throttled        enqueued, spends no retry
--   released    worker shutting down              lost             enqueued, spends no retry
--   cancelled   worker (agent stopped), cancel    cancelled        cancelled
--   lost        sweeper (lease expired)           lost             as failed: the sweeper
--                                                                  asks for a retry at once
--   spawned     worker (the agent returned Spawn) spawned          processing, waiting for
--                                                                  the children inserted
--                                                                  here (docs/children.md)
--
-- The Python side of the same list is conveyor.queue.AttemptOutcome.

-- The retry rule (conveyor/policy.py explains it): attempts that were free (throttled,
-- handed back, or before a manual retry) do not count. One expression: it is inlined.
CREATE OR REPLACE FUNCTION conveyor_retry_left(attempts integer, free_attempts integer,
                                               max_attempts integer) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT attempts - free_attempts < max_attempts
$$;

-- What an attempt's row says of an outcome: a worker's hand-back is recorded as 'lost',
-- like the sweeper's (task_attempts.status has no 'released').
CREATE OR REPLACE FUNCTION conveyor_attempt_status(outcome text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN outcome = 'released' THEN 'lost' ELSE outcome END
$$;

-- End a batch of attempts, given as parallel arrays (one element per outcome; an array
-- passed as NULL is NULL for every outcome: the sweeper and a cancel report no usage).
-- Fenced: a task moves only while it is still 'processing' in the very claim that
-- reports (tasks.attempts = the outcome's attempt, tasks.claim_token = its claim token),
-- so an outcome that arrives after the sweeper, a cancel or another worker took the task
-- over changes nothing of the task; it is recorded on its own attempt as late_outcome,
-- with the usage it spent. The token (migration 0016) tells apart two claims of the same
-- attempt number: an idle worker's claim commits asynchronously (claim.sql), a crash may
-- undo it, and the task's next claim is then attempt N again, on an attempt row that may
-- even have the same id. An outcome without a token (NULL: a caller that does not know
-- it, or an attempt claimed before tokens existed) is fenced by the attempt number alone.
--
-- Returns one row per attempt row written: applied (it ended the attempt; status is then
-- the task's new status) or not (recorded as late), and one row, not applied, for an
-- outcome of a claim that no longer exists (a crash undid it; there is no attempt row to
-- record it on). An outcome missing from the answer ended its attempt already: a repeat
-- of a write whose commit the worker did not hear of.
--
-- Every caller locks the tasks it ends first or relies on the fence: the worker's rows
-- are its own (locked by the UPDATE), the sweeper and a cancel lock theirs FOR UPDATE
-- before they call this, in the same statement. One statement: the statement-level
-- triggers (rollups, NOTIFY) see the task and its attempt change together.
--
-- A 'spawned' outcome carries its children as its result, {"on_failure": ..., "children":
-- [{"agent", "key", "payload", ...}]} (conveyor.queue.children), inserted by the same
-- statement that ends the attempt, so a spawn exists exactly when its attempt's end
-- does. The task then waits: no lease, no worker, waiting_since set; the fence below
-- (waiting_since IS NULL) keeps a repeat of the outcome from spawning again.
--
-- Every row is found by its key: the tasks by tasks_pkey, the attempts by (task_id, attempt).
-- The queue's statistics are stale most of the time (a drain doubles task_attempts between
-- two analyses), and left to choose, the planner read all of task_attempts (a sequential
-- scan, as many rows as the table holds, at every finish) and every processing task through
-- tasks_processing_idx, dead entries included, joined to the batch by a nested loop
-- (processing tasks x outcomes). So: no sequential scans (the function's SET clause; it also
-- holds in the triggers the statement fires, and the rollup triggers set it too), no JIT (a
-- plan costed with a disabled scan would look worth compiling), the attempts looked up by
-- the batch's task ids (`attempt_rows`), and the fence's status a column of `decided`, not
-- a constant, so that no partial index on status matches it (`ended`).
--
-- One plan for every call (plan_cache_mode = force_generic_plan): the plan cache weighs a
-- custom plan, costed for the batch in hand, against the generic one, costed for a guessed
-- ten outcomes, and for a finish of one or a few the custom plan always looked cheaper, so
-- an idle worker's finish was planned again at every call: 1.1 ms of server time for one
-- outcome, 0.36 ms from the kept plan. Since every row is found by its key (above), the
-- generic plan is the same nested loop of key lookups at 1 and at 500 outcomes; a custom
-- plan for a big batch on stale statistics was the risk instead (hash joins over all of
-- tasks_pkey). tests/test_finish_plan.py checks both.
CREATE OR REPLACE FUNCTION conveyor_end_attempts(
    p_task_ids bigint[], p_attempts integer[], p_outcomes text[], p_results jsonb[],
    p_errors text[], p_retry_delays double precision[], p_models text[],
    p_input_tokens integer[], p_output_tokens integer[], p_started_after double precision[],
    p_trace_ids text[], p_llm_costs numeric[], p_compute_rates double precision[],
    -- Where the attempt ran, when its executor learnt it only at the end (a Ray task's
    -- node): written here rather than in a round trip of its own.
    p_run_ids text[] DEFAULT NULL,
    -- Seconds from the attempt's last model call to its outcome, by the worker's clock
    -- (task_attempts.last_call_at, migration 0013).
    p_since_last_call double precision[] DEFAULT NULL,
    -- The claim each outcome ends (tasks.claim_token as the claim returned it).
    p_claim_tokens uuid[] DEFAULT NULL
) RETURNS TABLE (task_id bigint, attempt integer, applied boolean, status text)
LANGUAGE plpgsql
SET enable_seqscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    answered bigint;
BEGIN
    RETURN QUERY
    WITH outcome AS MATERIALIZED (
        -- ended_at: one reading of the clock per outcome, for the attempt's finished_at and
        -- its compute cost alike, so that the cost is exactly its wall time at the rate.
        SELECT o.*, coalesce(o.started_after_s, 0) AS started_after,
               clock_timestamp() AS ended_at
        FROM unnest(p_task_ids, p_attempts, p_outcomes, p_results, p_errors, p_retry_delays,
                    p_models, p_input_tokens, p_output_tokens, p_started_after, p_trace_ids,
                    p_llm_costs, p_compute_rates, p_run_ids, p_since_last_call,
                    p_claim_tokens)
             AS o(task_id, attempt, outcome, result, error, retry_delay, model,
                  input_tokens, output_tokens, started_after_s, trace_id, llm_cost,
                  compute_rate, run_id, since_last_call, claim_token)
    ), decided AS MATERIALIZED (
        -- fenced_status: what the task must still be for its outcome to apply (below).
        -- Only a failure that asks for a retry needs the task's attempt counts: the task
        -- is read for those alone (a CASE evaluates the subquery only in its branch), not
        -- for every outcome, and an outcome whose task does not exist ends nothing below
        -- (`ended` joins tasks). A drain's succeeded outcomes were one lookup of tasks_pkey
        -- each before the UPDATE's own (docs/benchmarks.md, #16).
        SELECT o.*, 'processing'::text AS fenced_status,
               CASE
                   WHEN o.outcome = 'succeeded' THEN 'completed'
                   WHEN o.outcome IN ('throttled', 'released') THEN 'enqueued'
                   WHEN o.outcome = 'cancelled' THEN 'cancelled'
                   WHEN o.outcome = 'spawned' THEN 'processing'
                   -- failed, lost: the delay is the reporter's (conveyor.policy.backoff).
                   WHEN o.retry_delay IS NOT NULL
                        AND (SELECT conveyor_retry_left(t.attempts, t.free_attempts,
                                                        t.max_attempts)
                             FROM tasks t WHERE t.id = o.task_id)
                       THEN 'enqueued'
                   ELSE 'failed'
               END AS new_status
        FROM outcome o
    ), ended AS (
        UPDATE tasks t
        SET status = d.new_status,
            result = CASE WHEN d.outcome = 'succeeded' THEN d.result END,
            error = d.error,
            free_attempts = t.free_attempts + (d.outcome IN ('throttled', 'released'))::int,
            run_after = CASE WHEN d.new_status = 'enqueued'
                             THEN now() + make_interval(secs => coalesce(d.retry_delay, 0))
                             ELSE t.run_after END,
            finished_at = CASE WHEN d.new_status IN ('completed', 'failed', 'cancelled')
                               THEN d.ended_at END,
            lease_expires_at = NULL,
            locked_by = NULL,
            waiting_since = CASE WHEN d.outcome = 'spawned' THEN clock_timestamp() END,
            children_policy = CASE WHEN d.outcome = 'spawned' THEN d.result->>'on_failure'
                                   ELSE t.children_policy END
        FROM decided d
        WHERE t.id = d.task_id
          -- The fence, checked again on the row as locked. 'processing' is decided's column:
          -- written here as a constant, it matched tasks_processing_idx's predicate, and the
          -- plan walked every processing task instead of looking up the batch's ids.
          AND t.status = d.fenced_status
          AND t.attempts = d.attempt
          AND (d.claim_token IS NULL OR t.claim_token = d.claim_token)
          AND t.waiting_since IS NULL
        RETURNING t.id, t.status, t.priority, t.tenant, t.labels, t.depth, t.root_id
    ), spawned AS (
        -- The children, in the order given (ids and created_at follow it). A key the
        -- parent spawned before keeps its child, unless that one failed or was cancelled:
        -- then it runs again, with a fresh allowance of attempts (a retried parent re-runs
        -- only the children that did not succeed). A child of an agent that is not
        -- registered is not inserted; the worker checks before it reports the outcome.
        INSERT INTO tasks AS c (agent, payload, priority, estimated_tokens, max_attempts,
                                tenant, labels, parent_id, child_key, depth, root_id)
        SELECT k.agent, coalesce(k.payload, '{}'), coalesce(k.priority, e.priority),
               k.estimated_tokens, coalesce(k.max_attempts, g.max_attempts), e.tenant,
               e.labels || coalesce(k.labels, '{}'), e.id, k.key, e.depth + 1,
               -- The tree's root (tasks.root_id): the parent's, or the parent when it is
               -- the root.
               coalesce(e.root_id, e.id)
        FROM ended e
        JOIN decided d ON d.task_id = e.id AND d.outcome = 'spawned'
        CROSS JOIN LATERAL ROWS FROM (
                 jsonb_to_recordset(d.result->'children')
                 AS (agent text, key text, payload jsonb, priority smallint,
                     estimated_tokens integer, max_attempts integer, labels jsonb)
             ) WITH ORDINALITY AS k(agent, key, payload, priority, estimated_tokens,
                                    max_attempts, labels, ord)
        JOIN agents g ON g.name = k.agent
        -- A one-time filter: a batch without a spawn (the hot path) skips this join of
        -- two CTE scans, which PostgreSQL runs as a nested loop (quadratic in the batch).
        WHERE 'spawned' = ANY(p_outcomes)
        ORDER BY e.id, k.ord
        ON CONFLICT (parent_id, child_key) WHERE parent_id IS NOT NULL DO UPDATE
        SET status = 'enqueued',
            free_attempts = c.attempts,
            run_after = now(),
            result = NULL,
            error = NULL,
            finished_at = NULL
        WHERE c.status IN ('failed', 'cancelled')
        RETURNING c.parent_id
    ), ended_status AS MATERIALIZED (
        -- One row, built once: the new status of every task ended, by id.
        SELECT coalesce(jsonb_object_agg(x.id, x.status), '{}') AS by_id FROM ended x
    ), attempt_rows AS (
        UPDATE task_attempts a
        SET status = CASE WHEN e.id IS NULL THEN a.status
                          ELSE conveyor_attempt_status(o.outcome) END,
            -- A worker may claim a task before a slot is free for it (its prefetch buffer):
            -- the attempt began when the agent started, not when the task was claimed. Only
            -- the outcome that ends the attempt says so: a late one, or a repeat of it, must
            -- not move the start again.
            started_at = CASE WHEN e.id IS NULL THEN a.started_at
                              ELSE a.started_at + make_interval(secs => o.started_after) END,
            finished_at = CASE WHEN e.id IS NULL THEN a.finished_at ELSE o.ended_at END,
            -- The outcome's clock reading less the worker's "so long ago": not earlier than
            -- the call, since the reading is taken after the worker sent the outcome; not
            -- before the attempt's start.
            last_call_at = CASE
                WHEN e.id IS NULL OR o.since_last_call IS NULL THEN a.last_call_at
                ELSE greatest(a.started_at + make_interval(secs => o.started_after),
                              o.ended_at - make_interval(secs => o.since_last_call))
            END,
            error = CASE WHEN e.id IS NULL THEN a.error ELSE o.error END,
            late_outcome = CASE WHEN e.id IS NULL THEN coalesce(a.late_outcome, o.outcome) END,
            -- Usage is recorded once per attempt: the first report wins, a repeat changes
            -- nothing.
            model = coalesce(a.model, o.model),
            input_tokens = coalesce(a.input_tokens, o.input_tokens),
            output_tokens = coalesce(a.output_tokens, o.output_tokens),
            trace_id = coalesce(a.trace_id, o.trace_id),
            run_id = coalesce(a.run_id, o.run_id),
            llm_cost_usd = coalesce(a.llm_cost_usd, o.llm_cost),
            -- Wall time from the agent's start (as above) to now, at the agent's rate: the
            -- worker sends it (one join less on the hot path); others (a callback, the
            -- sweeper, a cancel) leave it NULL and the agent's row gives it. A late outcome
            -- keeps the cost written when its attempt ended (sweep, cancel).
            compute_cost_usd = CASE
                WHEN e.id IS NULL THEN a.compute_cost_usd
                ELSE conveyor_compute_cost(
                    a.started_at + make_interval(secs => o.started_after), o.ended_at,
                    coalesce(o.compute_rate, (SELECT g.compute_usd_per_hour FROM agents g
                                              WHERE g.name = a.agent)))
            END
        FROM outcome o
        -- The task each outcome ended, looked up in ended_status: joined to the `ended`
        -- CTE itself, which the planner takes for one row, this was a nested loop in
        -- which every outcome rescanned all the others (quadratic in the batch).
        CROSS JOIN ended_status s
        LEFT JOIN LATERAL (SELECT o.task_id AS id, s.by_id ->> o.task_id::text AS status
                           WHERE s.by_id ? o.task_id::text) e ON true
        WHERE a.task_id = o.task_id
          AND a.attempt = o.attempt
          -- The batch's ids as an index condition too: without it, on statistics that say
          -- task_attempts is small, the plan read the whole table (or its whole index) into
          -- a hash join at every finish.
          AND a.task_id = ANY (p_task_ids)
          -- The attempt row of this claim: not the row of a later claim that drew the same
          -- attempt number after a crash undid this one.
          AND (o.claim_token IS NULL OR a.claim_token = o.claim_token)
          AND (e.id IS NOT NULL
               -- Late: the attempt was ended by someone else (sweep, cancel). An attempt
               -- this very outcome ended already (same status, same error: the worker
               -- repeats a write whose commit it did not hear of) is left alone, and is
               -- not late.
               OR (a.status IN ('lost', 'cancelled')
                   AND NOT (a.status = conveyor_attempt_status(o.outcome)
                            AND a.error IS NOT DISTINCT FROM o.error)))
        RETURNING a.task_id, a.attempt, e.id IS NOT NULL AS applied, e.status,
                  a.id AS attempt_id, a.agent, a.status AS attempt_status, a.started_at,
                  a.finished_at, a.last_call_at, a.reserved_tokens, a.input_tokens,
                  a.output_tokens
    ), usage_rows AS (
        -- What the token window and the estimates read of an ended attempt (migration 0017,
        -- conveyor_usage in admission.sql): no index of task_attempts names a column
        -- written above, so that update is HOT, and the window reads this copy instead.
        -- Written for an attempt that held a reservation, reported usage, or belongs to a
        -- limited agent (its requests count); an attempt of an agent without limits that
        -- did neither (a plain queue's task: the drain's hot path) writes nothing here. A
        -- late outcome finds the row of its attempt by key (its finished_at is kept above)
        -- and brings it up to date: the usage it reported, the reservation a lost attempt
        -- held no longer counted for it.
        INSERT INTO attempt_usage AS u (agent, finished_at, attempt_id, task_id, status,
                                        started_at, last_call_at, reserved_tokens,
                                        input_tokens, output_tokens)
        SELECT r.agent, r.finished_at, r.attempt_id, r.task_id, r.attempt_status,
               r.started_at, r.last_call_at, r.reserved_tokens, r.input_tokens,
               r.output_tokens
        FROM attempt_rows r
        WHERE r.reserved_tokens > 0
           OR r.input_tokens IS NOT NULL
           OR r.output_tokens IS NOT NULL
           -- The limited agents, read once per statement (an InitPlan), and only when an
           -- attempt fits none of the cheaper conditions.
           OR r.agent = ANY (ARRAY(SELECT g.name FROM agents g WHERE conveyor_is_limited(g)))
        ON CONFLICT (agent, finished_at, attempt_id) DO UPDATE
        SET status = excluded.status,
            last_call_at = excluded.last_call_at,
            input_tokens = excluded.input_tokens,
            output_tokens = excluded.output_tokens
    )
    SELECT r.task_id, r.attempt, r.applied, r.status FROM attempt_rows r;

    -- An outcome of a claim a crash undid: no attempt row holds its token. Looked for only
    -- when some outcome got no answer above (never on the hot path, where every outcome
    -- ends its attempt), in a statement of its own: as a branch of the one above, it cost
    -- a finish of one outcome 0.06 ms more (benchmarks/finish_cost.py).
    GET DIAGNOSTICS answered = ROW_COUNT;
    IF answered < cardinality(p_task_ids) AND p_claim_tokens IS NOT NULL THEN
        RETURN QUERY
        SELECT o.task_id, o.attempt, false, NULL::text
        FROM unnest(p_task_ids, p_attempts, p_claim_tokens) AS o(task_id, attempt, claim_token)
        WHERE o.claim_token IS NOT NULL
          AND NOT EXISTS (SELECT FROM task_attempts a
                          WHERE a.task_id = o.task_id
                            AND a.attempt = o.attempt
                            AND a.claim_token = o.claim_token);
    END IF;

    -- A parent that spawned waits for its unfinished children, counted now that they are
    -- inserted; one whose children had all succeeded already runs again at once.
    IF 'spawned' = ANY(p_outcomes) THEN
        PERFORM conveyor_children_settle(ARRAY(
            SELECT o.task_id FROM unnest(p_task_ids, p_outcomes) AS o(task_id, outcome)
            WHERE o.outcome = 'spawned'));
    END IF;
END $$;
