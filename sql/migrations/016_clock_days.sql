-- 016_clock_days: the day each asset that ages with the clock (thread status, fidelity
-- tiers) was last computed for, so that a command reading them (context, health, ask) can
-- tell, without loading Dagster, that they were computed for another day and bring them up
-- to date first: without a daemon running the daily automation, tiers stopped aging.
CREATE TABLE clock_days (
    asset VARCHAR PRIMARY KEY,
    as_of DATE NOT NULL
);
