-- The statements of documents and their tasks, one named block each, loaded by
-- conveyor/sql/__init__.py. Parameters are psycopg's %(name)s placeholders.

-- name: documents_record
-- Record stored files (distinct sha256s; the caller removes repeats, which ON CONFLICT DO
-- UPDATE refuses within one statement), in the upload's transaction. A document known
-- already keeps its row, first name included: the update is there so that RETURNING
-- gives that row too, even when a concurrent upload committed it a moment ago (DO NOTHING
-- would return nothing for it, and a SELECT in the same statement would not see it), and
-- so that the row stays locked until the upload's task is in (a prune skips it). A row
-- from before stores had names (store NULL: a file on one machine's disk) moves to this
-- upload's store, which the caller then fills: uploading the bytes again heals it.
INSERT INTO documents AS d (sha256, size_bytes, media_type, page_count, name, store)
SELECT i.sha256, i.size_bytes, i.media_type, i.page_count, i.name, %(store)s
FROM unnest(%(sha256)s::text[], %(size_bytes)s::bigint[], %(media_type)s::text[],
            %(page_count)s::int[], %(name)s::text[])
     AS i(sha256, size_bytes, media_type, page_count, name)
ON CONFLICT (sha256) DO UPDATE SET store = coalesce(d.store, excluded.store)
RETURNING d.id, d.sha256, d.size_bytes, d.media_type, d.page_count, d.name, d.created_at,
          d.store;

-- name: documents_find
-- Where a document's bytes are, for a reader that has its sha256 (from a task's payload).
SELECT id, size_bytes, store FROM documents WHERE sha256 = %(sha256)s;

-- name: chunks_present
-- Whether a document's bytes are in the database already (the same bytes are stored once).
SELECT EXISTS (SELECT 1 FROM document_chunks WHERE document_id = %(document_id)s) AS present;

-- name: chunks_insert
INSERT INTO document_chunks (document_id, seq, data)
VALUES (%(document_id)s, %(seq)s, %(data)s);

-- name: chunks_read
-- One piece of a document, by the primary key: a reader holds one MiB at a time.
SELECT data FROM document_chunks WHERE document_id = %(document_id)s AND seq = %(seq)s;

-- name: chunks_delete
-- The bytes of a document that moved to another store (`conveyor documents migrate`).
DELETE FROM document_chunks WHERE document_id = %(document_id)s;

-- name: documents_unreferenced
-- A batch of documents no task refers to any more (their tasks were pruned, or never
-- made), locked: an upload of the same bytes that is recording its task holds the row,
-- and is skipped. On tasks_document_idx (the `?` repeats that index's predicate). Rows
-- with no store name (a file on one machine's disk, from before stores) are left for
-- `conveyor documents migrate`: this process may not be on that machine.
SELECT d.id, d.sha256, d.store
FROM documents d
WHERE d.store IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM tasks t WHERE t.payload ? 'sha256' AND t.payload ->> 'sha256' = d.sha256
  )
ORDER BY d.id
LIMIT %(limit)s
FOR UPDATE OF d SKIP LOCKED;

-- name: documents_delete
-- With their chunks (ON DELETE CASCADE).
DELETE FROM documents WHERE id = ANY(%(ids)s::bigint[]);

-- name: documents_stores
-- Every store some document is in: where the pruner sweeps the temp files or keys of
-- uploads that died mid-write. A scan of documents (no index leads with store), run once
-- per prune; the rows are as many as the documents unpruned tasks refer to.
SELECT DISTINCT store FROM documents WHERE store IS NOT NULL;

-- name: documents_to_move
-- The next documents, in id order, that are not in the store `conveyor documents migrate`
-- moves them to: a migration that stopped starts again where it was.
SELECT id, sha256, size_bytes, store
FROM documents
WHERE store IS DISTINCT FROM %(target)s AND id > %(after)s
ORDER BY id
LIMIT %(limit)s;

-- name: documents_in_store
SELECT count(*) AS n FROM documents WHERE store = %(store)s;

-- name: documents_lock
-- A migration holds the row while it switches it: a prune skips it meanwhile.
SELECT store FROM documents WHERE id = %(id)s FOR UPDATE;

-- name: documents_move
-- A document's bytes are in the target store (copied, verified): readers go there now.
-- Guarded by the store it was read from, so that a concurrent change is not overwritten.
UPDATE documents SET store = %(target)s
WHERE id = %(id)s AND store IS NOT DISTINCT FROM %(source)s
RETURNING id;

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
