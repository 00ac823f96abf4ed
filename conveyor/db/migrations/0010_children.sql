-- Child tasks (issue #15, docs/children.md): a task's attempt may end by spawning children;
-- the parent then waits, holding no lease and no worker, and runs again (or fails) in the
-- transaction in which its last child ends. The counting is done by the trigger in
-- conveyor/sql/functions/children.sql; these are the columns it counts in.

-- parent_id: the task that spawned this one (no foreign key, like task_attempts: a prune
-- deletes finished trees in batches without ordering them). child_key names the child
-- within its parent, so a spawn repeated by a re-run parent is idempotent. depth: 0 for a
-- task nobody spawned, bounded so a child spawning children without end is refused.
ALTER TABLE tasks
    ADD COLUMN parent_id bigint,
    ADD COLUMN child_key text CHECK (length(child_key) BETWEEN 1 AND 255),
    ADD COLUMN depth smallint NOT NULL DEFAULT 0 CHECK (depth BETWEEN 0 AND 8),
    -- While the parent waits: how many of its children have not finished yet, what a
    -- failed child does to it ('fail' it, or 'collect': run it again all the same), and
    -- since when it waits (NULL: it does not).
    ADD COLUMN children_open integer NOT NULL DEFAULT 0 CHECK (children_open >= 0),
    ADD COLUMN children_policy text CHECK (children_policy IN ('fail', 'collect')),
    ADD COLUMN waiting_since timestamptz,
    ADD CONSTRAINT tasks_child_has_parent_check CHECK ((parent_id IS NULL) = (child_key IS NULL)),
    ADD CONSTRAINT tasks_waiting_check CHECK (waiting_since IS NULL OR status = 'processing');

-- A parent's children, by key: the idempotent spawn (ON CONFLICT), the fan-in count, the
-- progress a task page shows and the cost of a tree, all read by parent.
CREATE UNIQUE INDEX tasks_children_idx ON tasks (parent_id, child_key)
    WHERE parent_id IS NOT NULL;

-- The attempt that spawned: it ended, its task waits.
ALTER TABLE task_attempts DROP CONSTRAINT task_attempts_status_check;
ALTER TABLE task_attempts ADD CONSTRAINT task_attempts_status_check
    CHECK (status IN ('running', 'succeeded', 'failed', 'throttled', 'lost', 'cancelled',
                      'spawned'));
