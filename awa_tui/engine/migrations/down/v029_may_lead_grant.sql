-- Undoes v029_may_lead_grant.sql: nothing to put back. On a database v029 found as v021
-- leaves it, the grants it writes were already there; taking them away would leave a
-- runtime role unable to ask whether it may lead.
SELECT 1;
