-- The status trigger joins the statement's old and new rows by id. Transition tables have
-- no statistics, and plpgsql keeps the plan of a connection's first firing: after a small
-- first statement that is a nested loop, and a later 20,000-row UPDATE (a sweep, a bulk
-- operator change) then compares 400 million pairs. Without nested loops the join is a hash
-- join, linear in the rows, whatever the first statement was.
ALTER FUNCTION conveyor_notify_updated() SET enable_nestloop = off;
