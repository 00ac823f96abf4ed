-- Compute cost per attempt: its wall time at the agent's rate. The rate is registered from
-- code (@app.agent(compute_usd_per_hour=...), else CONVEYOR_COMPUTE_USD_PER_HOUR) on the
-- agent's row, so that every statement that ends an attempt (the worker's finish, a
-- callback, the sweeper, a cancel) prices it with the database clock, in the same write.
-- NULL: no rate known, no cost.

ALTER TABLE agents ADD COLUMN compute_usd_per_hour double precision
    CHECK (compute_usd_per_hour >= 0);

-- An SQL function of one expression: the planner inlines it, so it costs what the
-- expression costs.
CREATE FUNCTION conveyor_compute_cost(started timestamptz, ended timestamptz,
                                      usd_per_hour double precision) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT round((greatest(0, extract(epoch FROM ended - started))
                  * usd_per_hour / 3600)::numeric, 6)
$$;
