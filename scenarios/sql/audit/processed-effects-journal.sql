-- A receiver's journal from its own table of the effects it received, for `leasesim audit`.
-- Run it with `psql -At -f processed-effects-journal.sql > payments.jsonl`.
--
-- The table is the receiver's, not the queue's; this is the shape assumed (one row per
-- request it admitted or refused, in the order it decided them):
--
--   create table processed_effects (
--     seq bigserial primary key,
--     entity text not null,             -- the invoice, the case
--     idempotency_key text not null,    -- tool-job:{job id}:{operation}
--     fence bigint not null,            -- the X-Execution-Fence it carried
--     outcome text not null check (outcome in ('applied', 'duplicate', 'fenced')),
--     mark bigint,                      -- for 'fenced': the highest fence admitted then
--     received_at timestamptz not null default now()
--   );
--
-- `seq` numbers the lines in the receiver's order (row_number, not the serial itself, whose
-- gaps are rolled-back inserts, not missing lines). The header says the receiver checks fences;
-- say `false` for one that cannot, and a lower fence it applied is a hazard, not a violation.
select line
from (
  select 0 as seq, json_build_object(
      'journal', 'leasesim',
      'version', 1,
      'nodes', json_build_array(json_build_object(
        'node', 'payments', 'role', 'receiver', 'receiver', 0, 'fences', true)))::text as line
  union all
  select row_number() over (order by seq), json_build_object(
      'event', 'effect_' || outcome,
      'seq', row_number() over (order by seq),
      'node', 'payments',
      't_local_ns', (extract(epoch from received_at) * 1000000000)::bigint,
      'key', idempotency_key,
      'entity', entity,
      'fence', fence,
      'mark', mark)::text
  from processed_effects
) lines
order by seq;
