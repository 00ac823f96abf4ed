-- The root of every child's tree (docs/children.md): what is read per tree (its cost, its
-- progress) is then one indexed lookup, `WHERE id = R OR root_id = R`, rather than a walk
-- down the tree's levels.
--
-- root_id: the id of the task nobody spawned at the top of this one's tree; NULL for that
-- task itself and for every task nobody spawned. Written once, by the spawn insert of
-- conveyor_end_attempts() (the parent's root_id, else the parent's id). No foreign key,
-- like parent_id: a prune deletes finished trees in batches without ordering them.
ALTER TABLE tasks ADD COLUMN root_id bigint;

-- The children spawned before this migration: walk up from each to the last ancestor
-- (parent_id) it names. Depth falls by one at every step up, so the walk ends within the
-- depth bound; a pruned ancestor ends it where the rows end, at the id the last one names.
WITH RECURSIVE up AS (
    SELECT id, parent_id AS ancestor, depth
    FROM tasks
    WHERE parent_id IS NOT NULL
    UNION ALL
    SELECT u.id, p.parent_id, p.depth
    FROM up u
    JOIN tasks p ON p.id = u.ancestor
    WHERE p.parent_id IS NOT NULL AND p.depth < u.depth
), top AS (
    SELECT DISTINCT ON (id) id, ancestor
    FROM up
    ORDER BY id, depth
)
UPDATE tasks t
SET root_id = top.ancestor
FROM top
WHERE t.id = top.id;

-- Checked once the children have theirs: a child always has a root, a task nobody spawned
-- never.
ALTER TABLE tasks
    ADD CONSTRAINT tasks_child_has_root_check CHECK ((parent_id IS NULL) = (root_id IS NULL));

-- A tree's tasks by its root: the roll-up of a tree's cost (the root's own row is found by
-- its primary key). Partial: most tasks are nobody's children.
CREATE INDEX tasks_root_idx ON tasks (root_id) WHERE root_id IS NOT NULL;
