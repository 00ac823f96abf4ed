-- External jobs report back by signed callbacks. The secret of each attempt is derived
-- from one key kept here (HMAC of the key and the attempt id), so that every worker and
-- web process agrees on it without a secret stored per attempt.
CREATE TABLE conveyor_keys (
    name        text PRIMARY KEY,
    value       text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
