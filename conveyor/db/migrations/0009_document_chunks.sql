-- Documents every worker can reach (issue #17): where each document's bytes are, and the
-- bytes themselves when that is the database (the default, CONVEYOR_DOCUMENTS_URL unset).
--
-- `store` names the store that holds the bytes: 'postgresql' (the chunks below), a
-- 'file:///…' folder, or an fsspec URL ('s3://bucket/prefix', 'gs://…', 'abfs://…').
-- NULL is a document stored before this migration: a file in CONVEYOR_HOME/documents of
-- the process that received it, read from there as before until `conveyor documents
-- migrate --to URL` copies it elsewhere. Readers go by this column, not by their own
-- setting, so a migration can move documents one by one while workers keep reading.
ALTER TABLE documents ADD COLUMN store text CHECK (length(store) <= 1000);

-- The bytes of a document stored in PostgreSQL, in pieces of at most 1 MiB: a 100 MB
-- file is neither one giant value (1 GB is bytea's hard limit, and a value is read and
-- written whole) nor held in memory, by the writer or by a reader. The chunks are written
-- in the transaction that inserts the document's row and its task, so a reader never
-- sees part of a document, and an upload that dies leaves nothing. Deleting the document
-- deletes its chunks.
CREATE TABLE document_chunks (
    document_id bigint  NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    seq         integer NOT NULL CHECK (seq >= 0),
    data        bytea   NOT NULL CHECK (length(data) BETWEEN 1 AND 1048576),
    PRIMARY KEY (document_id, seq)
);

-- PDFs and images are compressed already: trying pglz on every MiB only costs CPU.
ALTER TABLE document_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- Pruning deletes documents no task refers to: this finds a document's tasks. Partial,
-- so that tasks that are not about a document cost nothing (the query repeats the
-- predicate so that the planner can use it).
CREATE INDEX tasks_document_idx ON tasks ((payload ->> 'sha256')) WHERE payload ? 'sha256';
