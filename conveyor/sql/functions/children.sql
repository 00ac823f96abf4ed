-- Fan-in: a waiting parent becomes runnable in the transaction in which its last child
-- ends (docs/children.md). The live text; migrate() applies this file whenever it changes.
--
-- A parent waits while tasks.waiting_since is set (its status is 'processing', it has no
-- lease and no worker). Every statement that moves children into or out of a finished
-- status settles their parents, whoever runs it (a worker's outcomes, the sweeper, a
-- cancel, a callback, a retry): the trigger below, so no path can forget.

-- A task and all its descendants: the walk down a tree that every statement about one
-- uses (conveyor/sql/children.sql: the cancel, the summary). A spawn writes a child one
-- level below its parent (tasks.depth = the parent's + 1), so the walk goes down only to
-- rows deeper than the row it comes from: it ends after at most MAX_DEPTH + 1 levels, the
-- bound of tasks.depth's check (conveyor.queue.children.MAX_DEPTH), whatever the rows hold.
-- SQL and STABLE: inlined into the calling statement, and read in its snapshot.
CREATE OR REPLACE FUNCTION conveyor_tree(p_root bigint) RETURNS TABLE (id bigint)
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE tree AS (
        SELECT t.id, t.depth FROM tasks t WHERE t.id = p_root
        UNION ALL
        -- By parent: tasks_children_idx.
        SELECT c.id, c.depth
        FROM tree p
        JOIN tasks c ON c.parent_id = p.id AND c.depth > p.depth
    )
    SELECT tree.id FROM tree
$$;

-- Settle waiting parents: lock them (in id order, the order every caller locks parents
-- in, so that two workers ending children of the same parents never deadlock), then
-- count their unfinished children and wake those that have none left.
--
-- Two statements on purpose: the count runs with a snapshot taken after the locks are
-- held, so it sees the children that a concurrent transaction ended and committed while
-- this one waited for the parent's row. Of two transactions ending a parent's last two
-- children at the same moment, the first to lock counts the other's child as still open;
-- the second counts none: the parent wakes exactly once. A count rather than a counter
-- that goes down: nothing to drift, whatever changed a child.
CREATE OR REPLACE FUNCTION conveyor_children_settle(p_parents bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM tasks
    WHERE id = ANY(p_parents) AND waiting_since IS NOT NULL
    ORDER BY id
    FOR UPDATE;

    WITH counted AS (
        SELECT p.id, p.children_policy,
               count(c.id) FILTER (WHERE c.status IN ('enqueued', 'processing')) AS open,
               -- The first child that failed or was cancelled, for the parent's error.
               (array_agg(c.id ORDER BY c.id)
                    FILTER (WHERE c.status IN ('failed', 'cancelled')))[1] AS failed_id
        FROM tasks p
        LEFT JOIN tasks c ON c.parent_id = p.id
        WHERE p.id = ANY(p_parents) AND p.waiting_since IS NOT NULL
        GROUP BY p.id
    ), woken AS (
        SELECT n.id, n.open,
               CASE WHEN n.open > 0 THEN NULL
                    WHEN n.children_policy = 'fail' AND n.failed_id IS NOT NULL THEN 'failed'
                    ELSE 'enqueued' END AS new_status,
               f.id AS failed_id, f.child_key, f.status AS failed_status,
               split_part(f.error, E'\n', 1) AS failed_error
        FROM counted n
        LEFT JOIN tasks f ON f.id = n.failed_id
    )
    UPDATE tasks t
    SET children_open = w.open,
        status = coalesce(w.new_status, t.status),
        waiting_since = CASE WHEN w.new_status IS NULL THEN t.waiting_since END,
        run_after = CASE WHEN w.new_status = 'enqueued' THEN now() ELSE t.run_after END,
        finished_at = CASE WHEN w.new_status = 'failed' THEN clock_timestamp() END,
        error = CASE WHEN w.new_status = 'failed'
                     THEN 'child task ' || w.failed_id || ' (' || w.child_key || ') '
                          || w.failed_status || coalesce(': ' || w.failed_error, '')
                     ELSE t.error END
    FROM woken w
    WHERE t.id = w.id;
END $$;

-- After every UPDATE of tasks: the parents of the children whose status entered or left
-- a finished one. On the hot path (claims, outcomes, renewals of tasks nobody spawned)
-- this is one scan of the statement's new rows that finds no parent_id.
CREATE OR REPLACE FUNCTION conveyor_children_on_update() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    parents bigint[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows WHERE parent_id IS NOT NULL) THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(DISTINCT n.parent_id) INTO parents
    FROM new_rows n
    JOIN old_rows o ON o.id = n.id
    WHERE n.parent_id IS NOT NULL
      AND (n.status IN ('completed', 'failed', 'cancelled'))
          <> (o.status IN ('completed', 'failed', 'cancelled'));
    IF parents IS NOT NULL THEN
        PERFORM conveyor_children_settle(parents);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER tasks_children_settle
    AFTER UPDATE ON tasks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_children_on_update();
