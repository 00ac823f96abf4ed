-- The rollup folder (conveyor/worker/rollup_fold.py): the statements it runs.

-- name: rollup_fold
-- Move the committed deltas into the rollups (conveyor_rollup_fold() in
-- functions/rollups.sql says how); 0 when another worker is folding.
SELECT conveyor_rollup_fold() AS folded;

-- name: rollup_deltas_vacuum
-- Every fold deletes the rows it folded: the space is reused once a VACUUM has seen them
-- dead, and a table autovacuum does not visit (autovacuum off) would otherwise grow with
-- every finish, and with it what every reader of the rollups scans.
VACUUM (SKIP_LOCKED) task_rollup_deltas, task_histogram_deltas;
