-- leasesim: known-bad (V10: a claim that reads, then writes, without a row lock)
-- seed-postgres.sql whose claim is not atomic: a `select` of a free job, then an `update` of
-- the row it found, in one transaction, without `for update`. Two workers racing for the same
-- job both get it (the article's section "the claim must be atomic").

-- name: schema
create table tool_jobs (
  id uuid primary key,
  state text not null check (state in ('queued', 'running', 'succeeded', 'failed')),
  owner_id text,
  lease_until timestamptz,
  fencing_token bigint not null default 0,
  heartbeat_at timestamptz,
  attempt integer not null default 0,
  idempotency_key text not null unique,
  payload jsonb not null,
  result jsonb,
  error jsonb
);

-- name: enqueue
-- Not in the article: a new job is queued, without an owner or a lease.
insert into tool_jobs (id, state, idempotency_key, payload)
values (:job_id, 'queued', :idempotency_key, :payload);

-- name: claim
-- The claim as two statements in one transaction, the select taking no row lock: between
-- the select and the update another worker's select sees the same free job, and under read
-- committed its update goes through after this one commits.
begin;
select id
from tool_jobs
where state = 'queued'
   or (state = 'running' and lease_until < now())
order by id
limit 1;
update tool_jobs
set state = 'running',
    owner_id = :worker_id,
    lease_until = now() + interval '90 seconds',
    heartbeat_at = now(),
    fencing_token = fencing_token + 1,
    attempt = attempt + 1
where id = :id
returning id, payload, fencing_token, lease_until;
commit;

-- name: heartbeat
update tool_jobs
set lease_until = now() + interval '90 seconds',
    heartbeat_at = now()
where id = :job_id
  and state = 'running'
  and owner_id = :worker_id
  and fencing_token = :fencing_token
  and lease_until > now()
returning lease_until;

-- name: commit
update tool_jobs
set state = 'succeeded',
    result = :result,
    lease_until = null
where id = :job_id
  and state = 'running'
  and owner_id = :worker_id
  and fencing_token = :fencing_token
  and lease_until > now();

-- name: fail
-- Not in the article: a failure is recorded under the same conditions as a success; a
-- retryable one is queued again while attempts remain.
update tool_jobs
set state = case when :retryable and attempt < :max_attempts then 'queued' else 'failed' end,
    error = :error,
    lease_until = null
where id = :job_id
  and state = 'running'
  and owner_id = :worker_id
  and fencing_token = :fencing_token
  and lease_until > now()
returning state;

-- name: revoke
-- Not in the article: an operator ends the lease; the new token makes the old holder's stale.
update tool_jobs
set state = 'queued',
    owner_id = null,
    lease_until = null,
    fencing_token = fencing_token + 1
where id = :job_id
  and state = 'running'
returning fencing_token;

-- name: takeover
-- Not in the article: an operator hands the job to another worker under a new token.
update tool_jobs
set state = 'running',
    owner_id = :worker_id,
    lease_until = now() + interval '90 seconds',
    heartbeat_at = now(),
    fencing_token = fencing_token + 1,
    attempt = attempt + 1
where id = :job_id
  and state in ('queued', 'running')
returning fencing_token, lease_until;

-- name: cancel
-- Not in the article: an operator ends the job (the table has no 'cancelled' state, so it is
-- failed with the reason) under a new token.
update tool_jobs
set state = 'failed',
    error = '{"cancelled": true}',
    owner_id = null,
    lease_until = null,
    fencing_token = fencing_token + 1
where id = :job_id
  and state in ('queued', 'running')
returning fencing_token, state;

-- name: status
-- Not in the article: the row, read after a refusal to say why.
select state, owner_id, fencing_token, lease_until
from tool_jobs
where id = :job_id;
