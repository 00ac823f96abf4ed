-- The token window without an index on what the finish writes, so that the finish of an
-- attempt is a HOT update (#16).
--
-- The finish sets task_attempts.finished_at (and status, started_at, last_call_at, the
-- usage), and task_attempts_window_idx (agent, finished_at) held it: PostgreSQL makes an
-- update HOT only when it changes no column that any index of the table names (key,
-- INCLUDE, predicate or expression; on 16 and later a BRIN index excepted, but 15 is
-- supported and BRIN cannot give the window's ordered reads). So every finish wrote a new
-- entry into each of the attempt's three indexes. Measured by dropping that index in a
-- 2 x 16 drain: every finish HOT, server CPU per task -7 %, 220 WAL bytes less per task.
--
-- Its readers are served from two places instead, neither indexed on a column the finish
-- writes:
--  * attempts that run now: an attempt is 'running' exactly while its task is 'processing'
--    in that attempt and not waiting for children (the queue's invariant, see
--    conveyor_rollup_attempt_changes), so they are the agent's processing tasks, by
--    tasks_processing_idx, now keyed by agent first, joined to their attempt row by
--    (task_id, attempt). tasks' claim and finish are not HOT anyway (status is in the
--    predicates of its partial indexes); the sweeper and the live metrics read the whole
--    partial index, as before, and nothing looked rows up by locked_by alone.
--  * attempts that ended: attempt_usage below, one row written by the statement that ended
--    the attempt (conveyor_end_attempts, conveyor/sql/functions/attempts.sql), only for
--    attempts whose end the window or the estimates can see: those that held a
--    reservation, reported usage, or belong to an agent with limits. An attempt of an
--    agent without limits that reserved nothing and reported nothing (a plain queue's
--    task) writes no row: its finish is a HOT update and nothing more.
--
-- What an agent without limits no longer counts: the requests of its attempts that held no
-- reservation and reported no usage (`conveyor limits`, the dashboard's rpm). They count
-- nowhere else (only max_rpm reads requests, and an agent with max_rpm is limited), so
-- nothing is admitted differently, except in the first window after such an agent gets a
-- max_rpm: those earlier attempts are not in it.

-- A narrow copy of what the window reads of an ended attempt, kept as long as the attempt
-- (tasks_prune deletes both): the recent average (conveyor_admit) and the estimates
-- (conveyor/sql/estimates.sql) read the latest rows of an agent, however old.
-- The columns are task_attempts', as they were when the attempt ended; a late outcome
-- (usage reported after a sweep or a cancel ended the attempt) updates them. Its key is the
-- window's order: an agent's rows by the moment they ended, the attempt id to tell apart
-- two that ended in the same microsecond; finished_at never changes once written, so the
-- late outcome finds its row by key (ON CONFLICT).
CREATE TABLE attempt_usage (
    agent            text NOT NULL,
    finished_at      timestamptz NOT NULL,
    attempt_id       bigint NOT NULL,
    task_id          bigint NOT NULL,
    status           text NOT NULL,
    started_at       timestamptz NOT NULL,
    last_call_at     timestamptz,
    reserved_tokens  integer NOT NULL,
    input_tokens     integer,
    output_tokens    integer,
    PRIMARY KEY (agent, finished_at, attempt_id)
);

-- What the window held until now, for the attempts that have ended.
INSERT INTO attempt_usage (agent, finished_at, attempt_id, task_id, status, started_at,
                           last_call_at, reserved_tokens, input_tokens, output_tokens)
SELECT a.agent, a.finished_at, a.id, a.task_id, a.status, a.started_at, a.last_call_at,
       a.reserved_tokens, a.input_tokens, a.output_tokens
FROM task_attempts a
LEFT JOIN agents g ON g.name = a.agent
WHERE a.finished_at IS NOT NULL
  AND (a.reserved_tokens > 0 OR a.input_tokens IS NOT NULL OR a.output_tokens IS NOT NULL
       OR g.max_concurrent IS NOT NULL OR g.max_tpm IS NOT NULL OR g.max_rpm IS NOT NULL
       OR g.learned_tpm IS NOT NULL OR g.learned_concurrency IS NOT NULL);

DROP INDEX task_attempts_window_idx;

-- The running attempts of one agent: its processing tasks (see above).
DROP INDEX tasks_processing_idx;
CREATE INDEX tasks_processing_idx ON tasks (agent, locked_by) WHERE status = 'processing';
