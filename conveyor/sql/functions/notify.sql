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
-- (task_transitions, a copy of conveyor/states.py). It joins the statement's old and new rows
-- by id. Transition tables have no statistics, and plpgsql keeps the plan of a connection's
-- first firing: after a small first statement that is a nested loop, and a later
-- 20,000-row UPDATE (a sweep, a bulk operator change) then compares 400 million pairs.
-- Without nested loops the join is a hash join, linear in the rows, whatever the first
-- statement was.
CREATE OR REPLACE FUNCTION conveyor_notify_updated() RETURNS trigger
LANGUAGE plpgsql
SET enable_nestloop = off
AS $$
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

CREATE OR REPLACE TRIGGER tasks_notify_inserted
    AFTER INSERT ON tasks
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_notify_inserted();

CREATE OR REPLACE TRIGGER tasks_notify_updated
    AFTER UPDATE ON tasks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_notify_updated();
