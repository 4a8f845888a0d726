-- seed-postgres.sql whose claim locks the row it reads (`select ... for update`, then
-- `update`, in one transaction) without `skip locked`: safe, but a worker racing for the same
-- job waits for the other's transaction instead of taking the next job at once.

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
-- The claim as two statements in one transaction, the select locking the row it picks
-- (`for update`, without `skip locked`): a second worker's select waits for the first
-- transaction to end, then sees the job taken and picks the next one.
begin;
select id
from tool_jobs
where state = 'queued'
   or (state = 'running' and lease_until < now())
order by id
limit 1
for update;
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
