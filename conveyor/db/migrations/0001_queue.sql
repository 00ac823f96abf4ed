-- The queue core: agents, tasks, their attempts, and the allowed status transitions.
--
-- Status values are text with CHECK constraints rather than enum types: they read the same
-- in psql and in JSON, and adding a value later is a plain ALTER, not a type rewrite.

CREATE TABLE agents (
    name           text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'),
    max_attempts   integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 1000),
    lease_seconds  double precision NOT NULL DEFAULT 60 CHECK (lease_seconds BETWEEN 1 AND 86400),
    registered_at  timestamptz NOT NULL DEFAULT now(),
    last_seen_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tasks (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent             text NOT NULL,
    status            text NOT NULL DEFAULT 'enqueued'
                      CHECK (status IN ('enqueued', 'processing', 'completed', 'failed', 'cancelled')),
    priority          smallint NOT NULL DEFAULT 0,
    payload           jsonb NOT NULL DEFAULT '{}',
    result            jsonb,
    error             text,
    idempotency_key   text CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    estimated_tokens  integer CHECK (estimated_tokens >= 0),
    -- attempts counts every attempt started (it equals the number of task_attempts rows);
    -- free_attempts counts those that do not spend a retry: throttled ones, those handed
    -- back by a worker shutting down, and all attempts before a manual retry. A task has
    -- retries left while attempts - free_attempts < max_attempts.
    attempts          integer NOT NULL DEFAULT 0,
    free_attempts     integer NOT NULL DEFAULT 0,
    max_attempts      integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 1000),
    run_after         timestamptz NOT NULL DEFAULT now(),
    lease_expires_at  timestamptz,
    locked_by         text,
    tenant            text,
    labels            jsonb NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    finished_at       timestamptz
);

-- The dequeue order, per agent. Partial, so it only holds the enqueued rows and stays small
-- and hot however many finished tasks the table keeps. Agent first, so that a claim for one
-- agent never walks over the backlog of another (one nobody works on, or one at its limit).
CREATE INDEX tasks_dequeue_idx ON tasks (agent, priority DESC, created_at, id)
    WHERE status = 'enqueued';

-- Running tasks, for the sweeper (expired leases), lease renewal and a worker's own rows.
-- lease_expires_at is deliberately NOT indexed: renewing a lease then changes no indexed
-- column, so the update is HOT and leaves no index garbage behind on the hottest path.
CREATE INDEX tasks_processing_idx ON tasks (locked_by) WHERE status = 'processing';

-- Idempotent enqueue: one task per (agent, key).
CREATE UNIQUE INDEX tasks_idempotency_idx ON tasks (agent, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Retention: `conveyor prune` walks finished tasks oldest first.
CREATE INDEX tasks_finished_idx ON tasks (finished_at)
    WHERE status IN ('completed', 'failed', 'cancelled');

-- A hot queue table churns: vacuum it after 1 % of its rows changed instead of 20 %, and
-- leave room on each page so that lease renewals stay HOT updates.
ALTER TABLE tasks SET (
    fillfactor = 85,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 1
);

CREATE TABLE task_attempts (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- No foreign key to tasks: the claim inserts attempt rows in the same statement that
    -- locks their tasks, and a per-row referential check would only repeat that work.
    -- Attempts are deleted together with their task (see prune in queue.sql).
    task_id           bigint NOT NULL,
    attempt           integer NOT NULL CHECK (attempt >= 1),
    worker_id         text,
    run_id            text,
    trace_id          text,
    status            text NOT NULL DEFAULT 'running'
                      CHECK (status IN ('running', 'succeeded', 'failed', 'throttled', 'lost', 'cancelled')),
    started_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at       timestamptz,
    model             text,
    input_tokens      integer CHECK (input_tokens >= 0),
    output_tokens     integer CHECK (output_tokens >= 0),
    llm_cost_usd      numeric(14, 6),
    compute_cost_usd  numeric(14, 6),
    error             text,
    -- An outcome reported after the attempt had already ended (its lease was lost or the
    -- task cancelled): kept here for the record, never applied to the task.
    late_outcome      text,
    UNIQUE (task_id, attempt)
);

ALTER TABLE task_attempts SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);

-- The task state machine, written down once in conveyor/states.py and mirrored here so
-- the database itself refuses a transition the code does not know (tests/test_schema.py
-- checks that both say the same).
CREATE TABLE task_transitions (
    from_status text NOT NULL,
    to_status   text NOT NULL,
    PRIMARY KEY (from_status, to_status)
);

INSERT INTO task_transitions (from_status, to_status) VALUES
    ('enqueued',   'processing'),
    ('enqueued',   'cancelled'),
    ('processing', 'completed'),
    ('processing', 'enqueued'),
    ('processing', 'failed'),
    ('processing', 'cancelled'),
    ('failed',     'enqueued'),
    ('cancelled',  'enqueued');

-- Every change of a task's status is announced on the channel 'conveyor' in the same
-- transaction, by statement-level triggers: one NOTIFY per (agent, status) per statement,
-- whatever wrote the rows. A payload names the task ids, or only their count when a
-- statement touched so many that the ids would not fit in NOTIFY's 8,000 bytes.
--   {"agent": "invoice", "status": "enqueued", "ids": [17, 18]}
--   {"agent": "invoice", "status": "enqueued", "count": 10000}
CREATE FUNCTION conveyor_notify_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('conveyor', json_build_object(
                'agent', agent, 'status', status,
                CASE WHEN count(*) <= 200 THEN 'ids' ELSE 'count' END,
                CASE WHEN count(*) <= 200 THEN json_agg(id ORDER BY id) ELSE to_json(count(*)) END
            )::text)
    FROM new_rows
    GROUP BY agent, status;
    RETURN NULL;
END $$;

CREATE FUNCTION conveyor_notify_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    SELECT o.status AS from_status, n.status AS to_status, n.id INTO bad
    FROM old_rows o
    JOIN new_rows n USING (id)
    WHERE o.status <> n.status
      AND NOT EXISTS (SELECT 1 FROM task_transitions tt
                      WHERE tt.from_status = o.status AND tt.to_status = n.status)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'task %: no transition from % to %', bad.id, bad.from_status, bad.to_status
            USING ERRCODE = 'check_violation';
    END IF;

    PERFORM pg_notify('conveyor', json_build_object(
                'agent', n.agent, 'status', n.status,
                CASE WHEN count(*) <= 200 THEN 'ids' ELSE 'count' END,
                CASE WHEN count(*) <= 200 THEN json_agg(n.id ORDER BY n.id) ELSE to_json(count(*)) END
            )::text)
    FROM old_rows o
    JOIN new_rows n USING (id)
    WHERE o.status <> n.status
    GROUP BY n.agent, n.status;
    RETURN NULL;
END $$;

CREATE TRIGGER tasks_notify_inserted
    AFTER INSERT ON tasks
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_notify_inserted();

CREATE TRIGGER tasks_notify_updated
    AFTER UPDATE ON tasks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_notify_updated();
