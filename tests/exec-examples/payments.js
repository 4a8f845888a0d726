// A payments service as a team writes one in Node.js: it charges each payment once per
// idempotency key, and refuses a request whose fencing token is below the highest it has
// admitted for the account, so that a worker that lost its lease cannot charge after its
// successor. It runs under leasesim as a process
// (`--receiver "exec:node tests/exec-examples/payments.js"`).
//
// `--forget-fence` is the mistake: the service trusts the caller's lease and checks only the
// idempotency key, so a stale worker's charge that its successor has not made yet goes through.

'use strict';

const path = require('path');
const lp = require(path.join(__dirname, '..', '..', 'scenarios', 'exec', 'helpers', 'leasesim_process.js'));

const FORGET_FENCE = process.argv.includes('--forget-fence');

function keyText(key) {
  return `${key.job}:${key.op}:${key.salt}`;
}

lp.run(async (node) => {
  const cfg = node.config;
  const checksFence = cfg.supports_fence && !FORGET_FENCE;
  const marks = new Map(); // account -> highest fence admitted
  const charged = new Map(); // idempotency key -> fence it was first charged under
  for (;;) {
    const [from, msg] = await node.recv();
    if (msg.type === 'effect_status') {
      if (checksFence) marks.set(msg.key.job, Math.max(marks.get(msg.key.job) || 0, msg.fence));
      const status = !cfg.supports_status ? 'unknown' : charged.has(keyText(msg.key)) ? 'applied' : 'not_applied';
      node.send({ addr: from }, { type: 'effect_status_reply', req: msg.req, job: msg.job, key: msg.key, status });
      continue;
    }
    if (msg.type !== 'effect') continue;
    const { entity, key, fence } = msg;
    let outcome;
    const mark = marks.get(entity);
    if (checksFence && mark !== undefined && fence < mark) {
      outcome = { stale_fence: { mark } };
      node.journal({ event: 'effect_fenced', entity, key, fence, mark });
    } else if (cfg.refused_ops.includes(key.op)) {
      outcome = 'unauthorized';
      node.journal({ event: 'effect_unauthorized', entity, key, fence });
    } else {
      marks.set(entity, Math.max(mark || 0, fence));
      const first = charged.get(keyText(key));
      if (first !== undefined) {
        outcome = { duplicate: { first_fence: first } };
        node.journal({ event: 'effect_duplicate', entity, key, fence });
      } else {
        charged.set(keyText(key), fence);
        outcome = 'applied';
        node.journal({ event: 'effect_applied', entity, key, fence });
      }
    }
    node.send({ addr: from }, { type: 'effect_ack', req: msg.req, job: msg.job, key, outcome });
  }
});
