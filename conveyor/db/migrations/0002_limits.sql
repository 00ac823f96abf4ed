-- Rate-limit-aware admission: per-agent limits, decided inside the claim transaction.
--
-- Limits live on the agent's row, so every replica reads the same values and a change
-- applies to the next claim. Usage is read from task_attempts: the reservations of running
-- attempts plus the actual usage of the attempts that finished within the window.

ALTER TABLE agents
    ADD COLUMN max_concurrent int CHECK (max_concurrent >= 1),
    ADD COLUMN max_tpm int CHECK (max_tpm >= 1),
    ADD COLUMN max_rpm int CHECK (max_rpm >= 1),
    -- 'code' while the limits are the defaults declared with @app.agent (a new declaration
    -- replaces them); 'operator' once set by `conveyor limits set` (declarations no longer do).
    ADD COLUMN limits_source text NOT NULL DEFAULT 'code'
        CHECK (limits_source IN ('code', 'operator')),
    -- The limits as last declared in code, for `conveyor limits reset`.
    ADD COLUMN code_limits jsonb NOT NULL DEFAULT '{}',
    -- The rolling window of max_tpm and max_rpm: a minute, unless a provider counts
    -- differently (or a test runs on a scaled minute).
    ADD COLUMN window_seconds double precision NOT NULL DEFAULT 60
        CHECK (window_seconds > 0 AND window_seconds <= 86400),
    -- Adaptive back-off (AIMD). When the endpoint throttles the agent, the budget factor is
    -- halved (at most once per cooldown) and then grows back linearly with time:
    --   factor(t) = least(1, throttle_factor + recovery per second * (t - throttled_at)).
    -- It scales max_tpm and max_rpm. An agent without max_tpm learns a token budget
    -- instead: half of its window's usage when it was throttled, growing back to that
    -- usage in five windows and on beyond, until the endpoint throttles it again. One with
    -- neither max_tpm nor max_rpm also learns a concurrency cap: half of what ran when it
    -- was throttled, growing back one slot every tenth of a window.
    ADD COLUMN throttle_factor double precision NOT NULL DEFAULT 1
        CHECK (throttle_factor > 0 AND throttle_factor <= 1),
    ADD COLUMN throttled_at timestamptz,
    ADD COLUMN learned_tpm double precision,
    ADD COLUMN learned_concurrency double precision;

-- The tokens an attempt holds while it runs: replaced by what it reports when it ends.
ALTER TABLE task_attempts
    ADD COLUMN agent text,
    ADD COLUMN reserved_tokens int NOT NULL DEFAULT 0 CHECK (reserved_tokens >= 0);

UPDATE task_attempts a SET agent = t.agent FROM tasks t WHERE t.id = a.task_id;
ALTER TABLE task_attempts ALTER COLUMN agent SET NOT NULL;

-- The window's usage: running attempts (finished_at IS NULL) and those finished within
-- the window, of one agent; also the recent usage the running average is taken from.
CREATE INDEX task_attempts_window_idx ON task_attempts (agent, finished_at);


-- An agent's usage in its current window: the attempts running now, the tokens of the
-- window (reservations of running attempts, actual usage of finished ones; a lost attempt
-- that never reported keeps its reservation, as what it spent is unknown), and the
-- requests (attempts started within the window).
CREATE FUNCTION conveyor_usage(p_agent text, p_window double precision,
                               OUT running bigint, OUT tokens bigint, OUT requests bigint)
LANGUAGE sql STABLE AS $$
    SELECT count(*) FILTER (WHERE w.finished_at IS NULL),
           coalesce(sum(CASE WHEN w.finished_at IS NULL
                               OR (w.status = 'lost' AND w.input_tokens IS NULL)
                             THEN w.reserved_tokens
                             ELSE coalesce(w.input_tokens, 0) + coalesce(w.output_tokens, 0)
                        END), 0),
           count(*) FILTER (WHERE w.started_at > now() - make_interval(secs => p_window))
    FROM task_attempts w
    WHERE w.agent = p_agent
      AND (w.finished_at IS NULL OR w.finished_at > now() - make_interval(secs => p_window))
$$;

-- Whether claims of this agent go through admission (conveyor_admit) or the plain path.
CREATE FUNCTION conveyor_is_limited(a agents) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT a.max_concurrent IS NOT NULL OR a.max_tpm IS NOT NULL OR a.max_rpm IS NOT NULL
           OR a.learned_tpm IS NOT NULL OR a.learned_concurrency IS NOT NULL
$$;

-- The factor by which throttling scales an agent's budget at time `at`.
CREATE FUNCTION conveyor_throttle_factor(a agents, at timestamptz) RETURNS double precision
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN a.throttled_at IS NULL THEN 1.0
                ELSE least(1.0, a.throttle_factor
                                + 0.5 / (5 * a.window_seconds)  -- from 0.5 to 1 in 5 windows
                                  * extract(epoch FROM at - a.throttled_at))
           END
$$;

-- The learned token budget at time `at`: additive increase, the halving undone in five
-- windows, then further, so that the endpoint's real limit is found again if it rose.
CREATE FUNCTION conveyor_learned_tpm(a agents, at timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN a.learned_tpm IS NULL OR a.throttled_at IS NULL THEN NULL
                ELSE floor(a.learned_tpm
                           * (1 + extract(epoch FROM at - a.throttled_at)
                                  / (5 * a.window_seconds)))::bigint
           END
$$;

-- The learned concurrency cap at time `at`: one more slot every window / 10.
CREATE FUNCTION conveyor_learned_concurrency(a agents, at timestamptz) RETURNS int
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN a.learned_concurrency IS NULL OR a.throttled_at IS NULL THEN NULL
                ELSE floor(a.learned_concurrency
                           + extract(epoch FROM at - a.throttled_at) / (a.window_seconds / 10))::int
           END
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
-- nothing of the agent runs and the window is empty, rather than never.
CREATE FUNCTION conveyor_admit(p_agent text, p_want int)
RETURNS TABLE (task_id bigint, reserved int, priority smallint, created_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    a agents;
    factor double precision;
    free_slots int;
    free_tokens bigint;
    token_limit bigint;
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
    IF NOT FOUND OR p_want <= 0 THEN
        RETURN;
    END IF;

    SELECT u.running, u.tokens, u.requests INTO running, used_tokens, used_requests
    FROM conveyor_usage(p_agent, a.window_seconds) u;

    -- What a task without an estimate reserves: the agent's recent average actual usage.
    SELECT round(avg(coalesce(r.input_tokens, 0) + coalesce(r.output_tokens, 0)))::int
      INTO typical
    FROM (SELECT input_tokens, output_tokens
          FROM task_attempts
          WHERE agent = p_agent AND finished_at IS NOT NULL AND input_tokens IS NOT NULL
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
    -- The declared budget, scaled by throttling; else the learned one; NULL: no limit.
    token_limit := coalesce(floor(a.max_tpm * factor)::bigint, conveyor_learned_tpm(a, now()));
    free_tokens := token_limit - used_tokens;
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
        IF free_tokens IS NULL OR need <= free_tokens
           OR (running = 0 AND used_tokens = 0 AND need > token_limit) THEN
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
        ELSIF candidate.run_after < now() - make_interval(secs => a.window_seconds) THEN
            EXIT;  -- it has waited a whole window: it goes first, nothing overtakes it now
        END IF;
    END LOOP;
END $$;
