-- The statements of documents and their tasks, one named block each, loaded by
-- conveyor/sql/__init__.py. Parameters are psycopg's %(name)s placeholders.

-- name: documents_record
-- Record stored files (distinct sha256s; the caller removes repeats, which ON CONFLICT DO
-- UPDATE refuses within one statement). A document known already keeps its row, first
-- name included: the no-op update is there so that RETURNING gives that row too, even
-- when a concurrent upload committed it a moment ago (DO NOTHING would return nothing
-- for it, and a SELECT in the same statement would not see it).
INSERT INTO documents AS d (sha256, size_bytes, media_type, page_count, name)
SELECT i.sha256, i.size_bytes, i.media_type, i.page_count, i.name
FROM unnest(%(sha256)s::text[], %(size_bytes)s::bigint[], %(media_type)s::text[],
            %(page_count)s::int[], %(name)s::text[])
     AS i(sha256, size_bytes, media_type, page_count, name)
ON CONFLICT (sha256) DO UPDATE SET sha256 = excluded.sha256
RETURNING d.id, d.sha256, d.size_bytes, d.media_type, d.page_count, d.name, d.created_at;

-- name: documents_tasks_by_key
-- The tasks that already hold these idempotency keys for the agent, with the document
-- their payload names: a key given again returns its task (a duplicate), unless the task
-- is about other bytes (a conflict). On tasks_idempotency_idx.
SELECT t.id, t.idempotency_key, t.payload->>'sha256' AS sha256
FROM tasks t
WHERE t.agent = %(agent)s AND t.idempotency_key = ANY(%(keys)s::text[]);

-- name: documents_tasks
-- The tasks an upload made or found, as the upload's answer shows them.
SELECT id, agent, status, priority, payload, idempotency_key, attempts, created_at,
       started_at, finished_at, split_part(error, E'\n', 1) AS error
FROM tasks
WHERE id = ANY(%(ids)s::bigint[]);
