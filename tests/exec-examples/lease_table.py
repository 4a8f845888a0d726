"""A lease table in Python, as a coordinator process: grants a free or expired job with a new
fencing token, extends a lease only for its holder's token while it runs, accepts a commit only
under a lease still valid by its own clock, journals every refusal it answers, and frees a job
when its lease runs out (an asyncio timer per lease). It runs under leasesim as
`--coordinator "exec:python3 tests/exec-examples/lease_table.py"`.

`--accept-any-commit` is the naive final update (SPEC V2): whoever commits, whenever, is
accepted.
"""

import asyncio
import os
import sys

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios", "exec", "helpers"))
import leasesim_process as lp  # noqa: E402

ACCEPT_ANY = "--accept-any-commit" in sys.argv


async def start(node):
    classes = node.config["classes"]
    jobs = node.config["jobs"]
    state = ["ready"] * len(jobs)  # "ready", ("leased", token, until), "done"
    tokens = [0] * len(jobs)

    def lease_ns(job):
        return classes[jobs[job]["class"]]["lease_ns"]

    def expire(now):
        for j, s in enumerate(state):
            if isinstance(s, tuple) and now >= s[2]:
                state[j] = "ready"

    def held(job, token, now):
        s = state[job] if 0 <= job < len(state) else None
        return isinstance(s, tuple) and s[1] == token and now < s[2]

    def done():
        node.set_all_terminal(all(s == "done" for s in state))

    async def free_later(until):
        await asyncio.sleep(max(0, until - node.now_ns()) / 1e9)
        expire(node.now_ns())
        done()

    done()
    while True:
        frm, msg = await node.recv()
        now = node.now_ns()
        expire(now)
        to = {"addr": frm}
        kind = msg["type"]
        if kind == "claim":
            free = [j for j, s in enumerate(state) if s == "ready"]
            if free:
                job = free[0]
                tokens[job] += 1
                until = now + lease_ns(job)
                state[job] = ("leased", tokens[job], until)
                node.send(to, {"type": "claim_granted", "req": msg["req"], "job": job, "token": tokens[job],
                               "lease_ns": lease_ns(job), "class": jobs[job]["class"], "checkpoint": None})
                asyncio.ensure_future(free_later(until))
            else:
                node.send(to, {"type": "claim_empty", "req": msg["req"]})
        elif kind == "heartbeat":
            job, token = msg["job"], msg["token"]
            if held(job, token, now):
                state[job] = ("leased", token, now + lease_ns(job))
                asyncio.ensure_future(free_later(now + lease_ns(job)))
                node.send(to, {"type": "heartbeat_ok", "req": msg["req"], "job": job, "token": token,
                               "lease_ns": lease_ns(job)})
            else:
                node.journal({"event": "heartbeat_refused", "job": job, "worker": msg["worker"], "token": token,
                              "reason": "expired"})
                node.send(to, {"type": "heartbeat_rejected", "req": msg["req"], "job": job, "token": token})
        elif kind == "commit":
            job, token = msg["job"], msg["token"]
            if held(job, token, now) or (ACCEPT_ANY and 0 <= job < len(state)):
                state[job] = "done" if "success" in msg["outcome"] else "ready"
                node.send(to, {"type": "commit_accepted", "req": msg["req"], "job": job, "token": token})
            else:
                result = msg["outcome"].get("success", {}).get("result", 0)
                node.journal({"event": "result_rejected", "job": job, "worker": msg["worker"], "token": token,
                              "reason": "expired", "result_hash": result})
                node.send(to, {"type": "commit_rejected", "req": msg["req"], "job": job, "token": token})
        elif kind == "checkpoint":
            job, token = msg["job"], msg["token"]
            node.send(to, {"type": "checkpoint_ack", "req": msg["req"], "job": job, "token": token,
                           "saved": held(job, token, now)})
        done()


lp.run(start)
