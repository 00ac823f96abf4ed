-- The review queue (issue #15): results their agent was unsure of wait for a person.
--
-- A review is not a task status: the task is `completed`, and its review is a row here,
-- `pending` until someone accepts the result or corrects fields of it. The trigger that
-- marks a completed task for review is conveyor/sql/functions/reviews.sql; the statements
-- are conveyor/sql/reviews.sql.

-- Each agent's threshold: a result whose `confidence` is below it is reviewed. Declared in
-- code (`App.agent(..., review_below=0.8)`) as a default; an operator's value
-- (`conveyor reviews threshold`, the HTTP API) wins until reset, like the limits.
ALTER TABLE agents
    ADD COLUMN review_below      float8 NOT NULL DEFAULT 0.9
        CHECK (review_below BETWEEN 0 AND 1),
    ADD COLUMN code_review_below float8 NOT NULL DEFAULT 0.9
        CHECK (code_review_below BETWEEN 0 AND 1),
    ADD COLUMN review_source     text NOT NULL DEFAULT 'code'
        CHECK (review_source IN ('code', 'operator'));

-- One row per task ever marked for review. `version` is the result's current version: 1
-- is the machine's; each correction adds one. A reviewer posts the version they read, and
-- the write is guarded by it, so that a second reviewer of a stale version is refused.
-- agent and tenant are copied from the task so the backlog is read from this table alone.
CREATE TABLE reviews (
    task_id          bigint PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    agent            text NOT NULL,
    tenant           text NOT NULL,  -- '' for a task without one, as in the rollups
    status           text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'accepted', 'corrected')),
    confidence       float8 NOT NULL,
    review_below     float8 NOT NULL,  -- the threshold in force when it was marked
    version          integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at       timestamptz NOT NULL DEFAULT now(),
    reviewed_at      timestamptz,
    reviewed_by      text CHECK (length(reviewed_by) <= 200),
    fields_corrected integer CHECK (fields_corrected >= 0),
    CHECK ((status = 'pending') = (reviewed_at IS NULL))
);

-- The backlog, oldest first, a page at a time (keyset on created_at, task_id): one partial
-- index per filter the page offers, so each page is an index range however long the
-- backlog, and a reviewed row leaves the indexes' hot part.
CREATE INDEX reviews_pending_idx ON reviews (created_at, task_id) WHERE status = 'pending';
CREATE INDEX reviews_pending_agent_idx ON reviews (agent, created_at, task_id)
    WHERE status = 'pending';
CREATE INDEX reviews_pending_tenant_idx ON reviews (tenant, created_at, task_id)
    WHERE status = 'pending';
-- The oldest pending review of an agent and tenant (the Review page's summary): the first
-- entry of its range here.
CREATE INDEX reviews_pending_group_idx ON reviews (agent, tenant, created_at)
    WHERE status = 'pending';

-- How many reviews are pending per agent and tenant, kept by the triggers on reviews
-- (conveyor/sql/functions/reviews.sql) as rows are marked, decided or deleted (a pruned
-- task takes its review along): the summary reads these few rows instead of counting a
-- backlog of 100,000 on every page load. Split into shards by task id, so that workers
-- marking reviews of one agent and tenant at once do not queue on one row's lock; the
-- readers sum the shards.
CREATE TABLE review_backlog (
    agent   text NOT NULL,
    tenant  text NOT NULL,
    shard   smallint NOT NULL,
    pending bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (agent, tenant, shard)
);
-- Metrics of reviews done: time to review, fields corrected, per agent and period.
CREATE INDEX reviews_reviewed_idx ON reviews (agent, reviewed_at) WHERE status <> 'pending';

-- Every version of a reviewed result, the machine's (1) kept: who made it and when, and
-- for a correction what it changed ({"field": {"from": old, "to": new}}). tasks.result
-- is the latest version; this is its audit trail.
CREATE TABLE result_versions (
    task_id     bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    version     integer NOT NULL CHECK (version >= 1),
    result      jsonb NOT NULL,
    made_by     text NOT NULL CHECK (length(made_by) <= 200),
    made_at     timestamptz NOT NULL DEFAULT now(),
    action      text NOT NULL CHECK (action IN ('machine', 'accepted', 'corrected')),
    corrections jsonb,
    PRIMARY KEY (task_id, version)
);

-- What each reviewed field turned out to be: right as the machine had it, or corrected.
-- "Accuracy as reviewed" per agent and field is read from here: ground truth a benchmark
-- can use, with the confidence the machine gave the field beside it.
CREATE TABLE review_fields (
    task_id     bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    field       text NOT NULL CHECK (length(field) <= 500),
    agent       text NOT NULL,
    confidence  float8,
    corrected   boolean NOT NULL,
    reviewed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, field)
);
CREATE INDEX review_fields_agent_idx ON review_fields (agent, reviewed_at);
