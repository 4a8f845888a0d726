-- The coordinator's journal from the article's `tool_jobs` table (seed-postgres.sql), for
-- `leasesim audit`. Run it with `psql -At -f tool-jobs-journal.sql > queue.jsonl`.
--
-- The table keeps each job's latest state only, so the journal it gives is a snapshot: the
-- header declares it (`"snapshot": true`), one `lease_granted` line per job that was ever
-- claimed, for its current token and holder. Its time is `heartbeat_at`, which the article's
-- claim and heartbeat both set to now(); its expiry `lease_until`, or, once a commit cleared
-- it, `heartbeat_at + 90 s`, which is what the article's claim and heartbeat had set. Tokens
-- rise by one a grant, so the audit traces an effect's fence to any token up to the latest.
-- A job an operator revoked has no owner: it is listed as held by `unowned`.
select line
from (
  select 0 as part, '' as job, json_build_object(
      'journal', 'leasesim',
      'version', 1,
      'nodes', json_build_array(json_build_object(
        'node', 'queue', 'role', 'coordinator', 'snapshot', true)))::text as line
  union all
  select 1, id::text, json_build_object(
      'event', 'lease_granted',
      'node', 'queue',
      't_local_ns', (extract(epoch from heartbeat_at) * 1000000000)::bigint,
      'job', id::text,
      'token', fencing_token,
      'holder', coalesce(owner_id, 'unowned'),
      'attempt', attempt,
      'lease_until_ns', (extract(epoch from coalesce(lease_until, heartbeat_at + interval '90 seconds'))
                         * 1000000000)::bigint,
      'reason', case when fencing_token = 1 then 'claim' else 'expired' end,
      'took_over', case when fencing_token > 1 then fencing_token - 1 end)::text
  from tool_jobs
  where fencing_token > 0 and heartbeat_at is not null
) lines
order by part, job;
