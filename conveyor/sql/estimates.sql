-- Token estimates: what admission reserved for an agent's tasks against what they used,
-- for the correction in conveyor/llm/estimates.py.

-- name: attempts_tokens_recent
-- The latest finished, successful attempts of an agent that used tokens, with the payload
-- fields the estimate was made from (the estimate is recomputed from them: the stored
-- tasks.estimated_tokens may itself be corrected, and learning from it would compound).
-- Newest first, from attempt_usage (agent, finished_at, attempt_id), which holds every ended
-- attempt that reported usage (migration 0017: task_attempts has no index on finished_at,
-- so that the finish is a HOT update).
SELECT t.payload->'chars' AS chars, t.payload->'pages' AS pages,
       t.payload->'item_rows' AS item_rows,
       a.input_tokens + a.output_tokens AS actual
FROM attempt_usage a
JOIN tasks t ON t.id = a.task_id
WHERE a.agent = %(agent)s
  AND a.status = 'succeeded'
  AND a.input_tokens > 0
ORDER BY a.finished_at DESC
LIMIT %(limit)s;
