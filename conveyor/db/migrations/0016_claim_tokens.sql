-- The claim's own name: a random token per claim, the fence of everything that claim
-- writes later (#16).
--
-- The idle worker's claim commits without waiting for its WAL to reach disk
-- (conveyor_claim, conveyor/sql/functions/claim.sql). If PostgreSQL crashes in the few ms
-- before that WAL is flushed, the claim is undone by recovery: the task is queued again
-- with its attempts one lower and the attempt row gone, and its next claim is attempt N
-- once more. The attempt number can no longer tell the two claims apart, and neither can
-- task_attempts.id: a sequence's advance is WAL-logged like the rest and is lost with it,
-- so the next claim may draw the same id (the crash test in tests/test_claim_tokens.py
-- checks both). A token drawn from gen_random_uuid() (the operating system's random
-- source, not the WAL) is never drawn again: finish, lease renewal, the sweep of a
-- worker's orphans and an external job's callback secret name it, and a stale claim's
-- writes match nothing.
--
-- In no index, so the updates that set it (the claim) or leave it (renewal, finish) stay
-- as HOT as they were. NULL for attempts claimed before this migration: the fences treat
-- a NULL token as "the attempt number alone", as before.
ALTER TABLE tasks ADD COLUMN claim_token uuid;
ALTER TABLE task_attempts ADD COLUMN claim_token uuid;
