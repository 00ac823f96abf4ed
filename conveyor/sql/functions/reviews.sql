-- The review queue's trigger: a task that completes with a result less confident than its
-- agent's threshold gets a pending review, in the transaction that completes it.
-- The live text; migrate() applies this file whenever it changes.
--
-- A row trigger with a WHEN clause, not a statement trigger: the WHEN is checked by the
-- executor for each updated row without calling any function, so the queue's hot updates
-- (claims, lease renewals, outcomes of tasks that are not completing) pay nothing; only a
-- completion with a `confidence` in its result calls the function, which reads the
-- agent's row by its key and inserts at most one row. A result counts when it is an
-- object with a numeric `confidence`; a task without one (most plain agents) is never
-- reviewed, and never calls the function.
CREATE OR REPLACE FUNCTION conveyor_mark_review() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    threshold float8;
    score numeric;
BEGIN
    -- IS DISTINCT FROM, not <>: a result without the key (or NULL) must leave here too.
    IF jsonb_typeof(NEW.result->'confidence') IS DISTINCT FROM 'number' THEN
        RETURN NULL;
    END IF;
    -- Compared as numeric: a confidence of 1e400 is a number JSON allows and float8 not.
    score := (NEW.result->'confidence')::numeric;
    SELECT review_below INTO threshold FROM agents WHERE name = NEW.agent;
    IF threshold IS NULL OR score >= threshold::numeric THEN
        RETURN NULL;
    END IF;
    -- A task completes once (completed is terminal); a row already here is kept as it is.
    INSERT INTO reviews (task_id, agent, tenant, confidence, review_below)
    VALUES (NEW.id, NEW.agent, coalesce(NEW.tenant, ''), greatest(score, -1e300)::float8, threshold)
    ON CONFLICT (task_id) DO NOTHING;
    IF FOUND THEN
        PERFORM pg_notify('conveyor', json_build_object(
            'event', 'review', 'id', NEW.id, 'agent', NEW.agent, 'tenant', NEW.tenant,
            'review', 'pending', 'version', 1)::text);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER tasks_mark_review
    AFTER UPDATE OF status ON tasks
    FOR EACH ROW
    WHEN (NEW.status = 'completed' AND OLD.status <> 'completed' AND NEW.result ? 'confidence')
    EXECUTE FUNCTION conveyor_mark_review();

-- The pending counts of review_backlog (migration 0011), per agent, tenant and shard, kept
-- in the transaction of every change of review rows: marked pending, decided, deleted
-- (with their tasks, by pruning or by hand). Statement triggers: a statement that changes
-- many reviews (a prune) makes one upsert per agent, tenant and shard, in key order (the
-- order every writer locks them in), not one per row. Eight shards by task id, so that
-- concurrent markings of one agent and tenant mostly take different rows.
CREATE OR REPLACE FUNCTION conveyor_count_reviews() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO review_backlog AS b (agent, tenant, shard, pending)
        SELECT agent, tenant, (task_id % 8)::smallint, count(*)
        FROM new_rows WHERE status = 'pending'
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (agent, tenant, shard) DO UPDATE SET pending = b.pending + excluded.pending;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO review_backlog AS b (agent, tenant, shard, pending)
        SELECT agent, tenant, (task_id % 8)::smallint, -count(*)
        FROM old_rows WHERE status = 'pending'
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (agent, tenant, shard) DO UPDATE SET pending = b.pending + excluded.pending;
    ELSE
        INSERT INTO review_backlog AS b (agent, tenant, shard, pending)
        SELECT n.agent, n.tenant, (n.task_id % 8)::smallint,
               sum((n.status = 'pending')::int - (o.status = 'pending')::int)
        FROM old_rows o JOIN new_rows n USING (task_id)
        GROUP BY 1, 2, 3
        HAVING sum((n.status = 'pending')::int - (o.status = 'pending')::int) <> 0
        ORDER BY 1, 2, 3
        ON CONFLICT (agent, tenant, shard) DO UPDATE SET pending = b.pending + excluded.pending;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER reviews_count_inserted
    AFTER INSERT ON reviews REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_count_reviews();

CREATE OR REPLACE TRIGGER reviews_count_updated
    AFTER UPDATE ON reviews REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_count_reviews();

CREATE OR REPLACE TRIGGER reviews_count_deleted
    AFTER DELETE ON reviews REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION conveyor_count_reviews();
