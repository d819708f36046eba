-- v022: the claim over every queue walks each queue's own index (jobs_claim_idx, v001) and
-- merges the heads, so v020's jobs_claim_any_idx goes. Every fire's job insert maintained
-- it, and that cost showed on the fire path: with 10,000 schedules firing every second,
-- the share of fires landing within a second fell from 100 % to 94 % under load.
DROP INDEX awa.jobs_claim_any_idx;
