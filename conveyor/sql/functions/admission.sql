-- Admission: which enqueued tasks of a limited agent may start now, and the helpers it and
-- the claim read (conveyor/sql/queue.sql: tasks_claim, agents_throttled, agents_limits).
-- The live text of each function; migrate() applies this file whenever it changes (see
-- conveyor/db/migrate.py). The policy is explained in docs/limits.md.

-- Whether claims of this agent go through admission (conveyor_admit) or the plain path.
CREATE OR REPLACE FUNCTION conveyor_is_limited(a agents) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT a.max_concurrent IS NOT NULL OR a.max_tpm IS NOT NULL OR a.max_rpm IS NOT NULL
           OR a.learned_tpm IS NOT NULL OR a.learned_concurrency IS NOT NULL
$$;

-- The factor by which throttling scales an agent's budget at time `at`.
CREATE OR REPLACE FUNCTION conveyor_throttle_factor(a agents, at timestamptz) RETURNS double precision
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN a.throttled_at IS NULL THEN 1.0
                ELSE least(1.0, a.throttle_factor
                                + 0.5 / (5 * a.window_seconds)  -- from 0.5 to 1 in 5 windows
                                  * extract(epoch FROM at - a.throttled_at))
           END
$$;

-- The learned token budget at time `at`. What a 429 teaches is a measurement: the budget
-- learned is 90 % of the tokens the window held when the endpoint refused (never more than
-- what was in force; queue.sql agents_throttled writes it). It then grows by 0.3 % of a
-- window squared since then: +11 %, back to the level that failed, after six windows; +30 %
-- after ten; doubled after eighteen. So a lowered limit is probed rarely and a raised one is
-- still found again. NULL: nothing learned.
CREATE OR REPLACE FUNCTION conveyor_learned_tpm(a agents, at timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN a.learned_tpm IS NULL OR a.throttled_at IS NULL THEN NULL
                ELSE floor(a.learned_tpm
                           * (1 + 0.003 * power(extract(epoch FROM at - a.throttled_at)
                                                / a.window_seconds, 2)))::bigint
           END
$$;

-- The learned concurrency cap at time `at`: one more slot every window / 10.
CREATE OR REPLACE FUNCTION conveyor_learned_concurrency(a agents, at timestamptz) RETURNS int
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN a.learned_concurrency IS NULL OR a.throttled_at IS NULL THEN NULL
                ELSE floor(a.learned_concurrency
                           + extract(epoch FROM at - a.throttled_at) / (a.window_seconds / 10))::int
           END
$$;

-- An agent's usage in its current window: the attempts running now, the tokens of the
-- window (reservations of running attempts, actual usage of finished ones; a lost attempt
-- that never reported keeps its reservation, as what it spent is unknown), the requests
-- (attempts started within the window), and the tokens of the attempts that started within
-- its last twentieth, for the spread (conveyor_admit): the same accounting, in the same
-- scan, except that a throttled attempt keeps its reservation there. The endpoint did not
-- count it, but it was sent: if its refusal freed its share of the twentieth at once, the
-- next claim, a few ms later and before the pause is recorded, would send another request
-- into the full window, and each refusal would make room for the next.
--
-- A finished attempt's tokens count, all of them, until a window after its last model
-- call (task_attempts.last_call_at: when the last request was sent, or reported), else
-- after its end. An endpoint counts a request's tokens for a window from the moment it
-- was sent, and every request of the attempt was sent by its last call: so no earlier
-- release is safe without knowing each request's moment, and none later is needed. What
-- the attempt did after its last call (a merge, a validation, the wait for the worker's
-- next exchange) no longer holds the budget. Spreading the tokens over the attempt's span
-- instead was measured: 9 x 429 in 509 requests with the budget declared, against 0
-- (docs/limits.md, "What the window counts"): the last request may go out just before the
-- end. The index range stays on finished_at (never before last_call_at).
--
-- Where the rows come from (migration 0017): no index of task_attempts names a column the
-- finish writes, so that the finish is a HOT update. The running attempts are the agent's
-- processing tasks (tasks_processing_idx: agent, locked_by) that do not wait for children,
-- each with its attempt row (the claim wrote its reservation and start; nothing changed
-- them since); the ended ones are attempt_usage (agent, finished_at, attempt_id), written
-- by the statement that ended them for every attempt the window can count: one that held a
-- reservation, reported usage, or belongs to a limited agent. An attempt outside those
-- three counts here for nothing but a request, and only an agent with max_rpm (a limited
-- one) reads requests.
--
-- SETOF record, of one row: a set-returning SQL function is inlined into the query that
-- calls it, so the scans below are planned there, with the agent and window it is given,
-- and their indexes show in EXPLAIN (tests/test_limits.py).
CREATE OR REPLACE FUNCTION conveyor_usage(p_agent text, p_window double precision,
                               OUT running bigint, OUT tokens bigint, OUT requests bigint,
                               OUT spread_tokens bigint)
RETURNS SETOF record
LANGUAGE sql STABLE AS $$
    SELECT count(*) FILTER (WHERE u.running),
           coalesce(sum(u.spent), 0),
           count(*) FILTER (WHERE u.started_at > now() - make_interval(secs => p_window)),
           coalesce(sum(CASE WHEN u.status = 'throttled' THEN u.reserved_tokens ELSE u.spent END)
                    FILTER (WHERE u.started_at > now() - make_interval(secs => p_window / 20)),
                    0)
    FROM (
        -- Running: it counts for its reservation. Its attempt row is looked up by key for
        -- each task (the LIMIT keeps the subquery a lookup: joined plainly, the planner may
        -- hash every running attempt of every agent, or scan them all, to find a few).
        SELECT true AS running, w.started_at, w.status, w.reserved_tokens,
               w.reserved_tokens AS spent
        FROM tasks t
        CROSS JOIN LATERAL (
            SELECT a.started_at, a.status, a.reserved_tokens
            FROM task_attempts a
            WHERE a.task_id = t.id AND a.attempt = t.attempts AND a.finished_at IS NULL
            LIMIT 1
        ) w
        WHERE t.agent = p_agent
          AND t.status = 'processing'
          AND t.waiting_since IS NULL
        UNION ALL
        -- Ended within the window: what it reported, or the reservation of a lost one that
        -- never reported (what it spent is unknown).
        SELECT false, f.started_at, f.status, f.reserved_tokens,
               CASE WHEN f.status = 'lost' AND f.input_tokens IS NULL THEN f.reserved_tokens
                    ELSE coalesce(f.input_tokens, 0) + coalesce(f.output_tokens, 0)
               END
        FROM attempt_usage f
        WHERE f.agent = p_agent
          AND f.finished_at > now() - make_interval(secs => p_window)
          AND coalesce(f.last_call_at, f.finished_at) > now() - make_interval(secs => p_window)
    ) u
$$;

-- Admission for one limited agent, inside the claim transaction: which of its enqueued
-- tasks may start now, at most p_want of them, with the tokens each reserves. (Agents
-- without limits never come here: their claims take the plain path of tasks_claim, with
-- no lock but the rows' own, and stay fully concurrent.)
--
-- Race-free across replicas: the agent's row is locked FOR UPDATE first, so the claims of
-- one limited agent are serialised (for the few hundred microseconds this takes) and each
-- sees the attempts the previous one inserted. Counting rows under READ COMMITTED without
-- such a lock lets two claims both see room for one more.
--
-- Policy: tasks are considered in claim order (priority, then age). A task that does not fit
-- may be overtaken by later ones that do, but only for one window: once it has waited that
-- long, nothing behind it starts until it fits, so a large task is never starved by a
-- stream of small ones. A task larger than the whole token budget starts alone, when
-- nothing of the agent runs and the window is empty, rather than never. While a learned
-- token budget binds, a twentieth of it may start per twentieth of a window; a task
-- larger than that starts when nothing else started within the last twentieth.
CREATE OR REPLACE FUNCTION conveyor_admit(p_agent text, p_want int)
RETURNS TABLE (task_id bigint, reserved int, priority smallint, created_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    a agents;
    factor double precision;
    free_slots int;
    free_tokens bigint;
    token_limit bigint;
    learned bigint;
    paced boolean;
    recent_tokens bigint;
    free_pace bigint;
    free_requests int;
    running int;
    used_tokens bigint;
    used_requests int;
    typical int;
    cap int;
    candidate record;
    need int;
BEGIN
    -- Serialise this agent's claims; read its limits as they are now.
    SELECT * INTO a FROM agents WHERE name = p_agent FOR UPDATE;
    IF NOT FOUND OR p_want <= 0 OR a.paused_until > now() THEN
        RETURN;
    END IF;

    SELECT u.running, u.tokens, u.requests, u.spread_tokens
      INTO running, used_tokens, used_requests, recent_tokens
    FROM conveyor_usage(p_agent, a.window_seconds) u;

    -- What a task without an estimate reserves: the agent's recent average actual usage.
    SELECT round(avg(coalesce(r.input_tokens, 0) + coalesce(r.output_tokens, 0)))::int
      INTO typical
    -- (attempt_usage holds every ended attempt that reported usage: migration 0017.)
    FROM (SELECT input_tokens, output_tokens
          FROM attempt_usage
          WHERE agent = p_agent AND input_tokens IS NOT NULL
          ORDER BY finished_at DESC
          LIMIT 50) r;
    typical := coalesce(typical, 1000);

    factor := conveyor_throttle_factor(a, now());
    -- least() and greatest() skip NULLs: no limit, no learned cap, means no cap at all.
    cap := least(a.max_concurrent,
                 CASE WHEN a.max_tpm IS NULL AND a.max_rpm IS NULL
                           AND a.learned_concurrency IS NOT NULL
                      THEN greatest(1, conveyor_learned_concurrency(a, now())) END);
    free_slots := least(p_want, coalesce(cap - running, p_want));
    -- The declared budget or the learned one, whichever is lower; NULL: no limit.
    learned := conveyor_learned_tpm(a, now());
    token_limit := least(a.max_tpm, learned);
    free_tokens := token_limit - used_tokens;
    paced := learned IS NOT NULL AND learned = token_limit;
    free_pace := CASE WHEN paced THEN token_limit / 20 - recent_tokens END;
    free_requests := floor(a.max_rpm * factor)::int - used_requests;  -- NULL: no request limit

    FOR candidate IN
        SELECT t.id, t.estimated_tokens, t.run_after, t.priority, t.created_at
        FROM tasks t
        WHERE t.status = 'enqueued' AND t.agent = p_agent AND t.run_after <= now()
        ORDER BY t.priority DESC, t.created_at, t.id
        LIMIT 4 * p_want + 16
        FOR UPDATE SKIP LOCKED
    LOOP
        EXIT WHEN free_slots <= 0 OR free_requests <= 0;
        need := coalesce(candidate.estimated_tokens, typical);
        IF (free_tokens IS NULL OR need <= free_tokens
            OR (running = 0 AND used_tokens = 0 AND need > token_limit))
           AND (NOT paced OR need <= free_pace OR recent_tokens = 0) THEN
            task_id := candidate.id;
            reserved := need;
            priority := candidate.priority;
            created_at := candidate.created_at;
            RETURN NEXT;
            running := running + 1;
            used_tokens := used_tokens + need;
            free_slots := free_slots - 1;
            free_tokens := free_tokens - need;
            free_requests := free_requests - 1;
            recent_tokens := recent_tokens + need;
            free_pace := free_pace - need;
        ELSIF candidate.run_after < now() - make_interval(secs => a.window_seconds) THEN
            EXIT;  -- it has waited a whole window: it goes first, nothing overtakes it now
        END IF;
    END LOOP;
END $$;
