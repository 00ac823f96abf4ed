-- Compute cost per attempt: its wall time at the agent's rate (agents.compute_usd_per_hour),
-- priced by every statement that ends an attempt, with the database clock, in the same write.
-- The live text; migrate() applies this file whenever it changes.

-- An SQL function of one expression: the planner inlines it, so it costs what the
-- expression costs.
CREATE OR REPLACE FUNCTION conveyor_compute_cost(started timestamptz, ended timestamptz,
                                      usd_per_hour double precision) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT round((greatest(0, extract(epoch FROM ended - started))
                  * usd_per_hour / 3600)::numeric, 6)
$$;
