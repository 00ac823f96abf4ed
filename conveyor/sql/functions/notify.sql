-- Task notifications and the state machine's guard: statement-level triggers on tasks.
-- The live text; migrate() applies this file whenever it changes.
--
-- Every change of a task's status is announced on the channel 'conveyor' in the same
-- transaction, by statement-level triggers: one NOTIFY per (agent, status) per statement,
-- whatever wrote the rows. A payload names the task ids, or only their count when a
-- statement touched so many that the ids would not fit in NOTIFY's 8,000 bytes.
--   {"agent": "invoice", "status": "enqueued", "ids": [17, 18]}
--   {"agent": "invoice", "status": "enqueued", "count": 10000}
CREATE OR REPLACE FUNCTION conveyor_notify_inserted() RETURNS trigger
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

-- The update trigger also refuses a transition the state machine does not know
-- (task_transitions, a copy of conveyor/states.py), in the same statement as its NOTIFYs:
-- one join of the statement's old and new rows by id, grouped per (agent, status), each
-- group notified and any illegal transition named, instead of one join for the check and a
-- second for the NOTIFY (every claim and every finish runs this). A NOTIFY sent by the
-- statement that then raises is discarded with the transaction (or the savepoint) the
-- error rolls back. The subquery's NOTIFY column is not read by the outer aggregate, and
-- PostgreSQL keeps an unread column that calls a volatile function: every group is
-- notified. Transition tables have no statistics, and plpgsql keeps the plan of a
-- connection's first firing: after a small first statement that is a nested loop, and a
-- later 20,000-row UPDATE (a sweep, a bulk operator change) then compares 400 million
-- pairs. Without nested loops the join is a hash join, linear in the rows, whatever the
-- first statement was.
CREATE OR REPLACE FUNCTION conveyor_notify_updated() RETURNS trigger
LANGUAGE plpgsql
SET enable_nestloop = off
AS $$
DECLARE
    refused text;
BEGIN
    SELECT min(g.refused) INTO refused
    FROM (
        SELECT pg_notify('conveyor', json_build_object(
                   'agent', n.agent, 'status', n.status,
                   CASE WHEN count(*) <= 200 THEN 'ids' ELSE 'count' END,
                   CASE WHEN count(*) <= 200 THEN json_agg(n.id ORDER BY n.id)
                        ELSE to_json(count(*)) END
               )::text) AS sent,
               min(format('task %s: no transition from %s to %s', n.id, o.status, n.status))
                   FILTER (WHERE tt.from_status IS NULL) AS refused
        FROM old_rows o
        JOIN new_rows n USING (id)
        LEFT JOIN task_transitions tt
               ON tt.from_status = o.status AND tt.to_status = n.status
        WHERE o.status <> n.status
        GROUP BY n.agent, n.status
    ) g;
    IF refused IS NOT NULL THEN
        RAISE EXCEPTION '%', refused USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER tasks_notify_inserted
    AFTER INSERT ON tasks
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_notify_inserted();

CREATE OR REPLACE TRIGGER tasks_notify_updated
    AFTER UPDATE ON tasks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_notify_updated();
