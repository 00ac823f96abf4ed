-- The queue's own VACUUM (conveyor/worker/vacuum.py): the statements it runs.

-- name: hot_tables_dead_rows
-- Dead row versions of the queue's hot tables, as the statistics count them (a second or
-- so behind the writes): each claim leaves one in tasks and its dequeue index, each end of
-- an attempt one in tasks and one in task_attempts.
SELECT relname AS table_name, n_dead_tup AS dead_rows
FROM pg_stat_user_tables
WHERE relid IN ('tasks'::regclass, 'task_attempts'::regclass)
ORDER BY relname;

-- name: vacuumer_lock
-- One worker vacuums at a time. A session lock, not a transaction's: VACUUM cannot run in
-- a transaction block.
SELECT pg_try_advisory_lock(hashtext('conveyor.vacuumer')) AS locked;

-- name: vacuumer_unlock
SELECT pg_advisory_unlock(hashtext('conveyor.vacuumer'));

-- name: tasks_vacuum
-- SKIP_LOCKED: if autovacuum (or an operator) is at it already, that VACUUM does the job.
VACUUM (SKIP_LOCKED) tasks;

-- name: task_attempts_vacuum
VACUUM (SKIP_LOCKED) task_attempts;
