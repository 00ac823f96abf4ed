-- Documents: files uploaded for agents to read, stored by content under
-- CONVEYOR_HOME/documents/aa/bb/<sha256> (see conveyor/documents/storage.py).
--
-- One row per distinct content: the sha256 is the identity, so the same bytes uploaded
-- again (under any name, for any agent) are the same document. The file name is not part
-- of that identity: `name` keeps the one the bytes first arrived under, for people, and
-- each task's payload carries the name it was submitted with. A separate table of
-- names would add a write per upload for a history nobody reads yet; it can be added
-- later from the task payloads.

CREATE TABLE documents (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sha256      text NOT NULL UNIQUE CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size_bytes  bigint NOT NULL CHECK (size_bytes > 0),
    -- Sniffed from the bytes, never taken from the client's name or Content-Type.
    media_type  text NOT NULL,
    -- Pages of a PDF (an image is one page); NULL would mean unknown, which no type
    -- accepted today is: a PDF that PDFium cannot open is refused at upload.
    page_count  integer CHECK (page_count >= 1),
    -- The client's file name of the first upload, cleaned and trimmed; never a path.
    name        text CHECK (length(name) <= 255),
    created_at  timestamptz NOT NULL DEFAULT now()
);
