"""A lease worker as an agent platform's team writes one in Python: asyncio, a heartbeat task
beside the work, a timeout on every request, jeopardy when a renewal goes unanswered, and the
idempotency key and fencing token on every effect. It runs under leasesim as a process
(`--worker "exec:python3 tests/exec-examples/worker.py"`), on the node's simulated clock.

`--bug renew-errors-ignored` is the mistake such teams make: a renewal that times out is logged
and retried, and the work goes on as if the lease were still sure; only an explicit refusal
stops it. It never enters jeopardy, so it acts on a lease that may have expired.
"""

import asyncio
import os
import sys

# The helper beside this file if there is one, else the repository's.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios", "exec", "helpers"))
import leasesim_process as lp  # noqa: E402

BUG = "renew-errors-ignored" if "--bug" in sys.argv else None


def s(ns):
    return ns / 1e9


class Lost(Exception):
    """The store said the lease is gone."""


class Attempt:
    """One job, from its lease to its report, and what its tasks share."""

    def __init__(self, node, grant, sent_ns):
        self.node = node
        self.cfg = node.config
        self.job = grant["job"]
        self.token = grant["token"]
        self.steps = self.cfg["plans"][grant["class"]]["steps"]
        self.done = 0 if grant["checkpoint"] is None else grant["checkpoint"] + 1
        self.deadline = self.until(sent_ns, grant["lease_ns"])
        self.confirmed = sent_ns
        self.lost = False
        self.jeopardy = False
        self.committing = False
        self.changed = asyncio.Event()

    def until(self, sent_ns, lease_ns):
        """The latest instant on this node's clock at which it may still act."""
        rho = self.cfg["drift_ppm_max"]
        window = lease_ns * (1_000_000 - rho) // (1_000_000 + rho)
        return sent_ns + window - self.cfg["stop_margin_ns"]

    def ids(self):
        return {"job": self.job, "token": self.token}

    def sure(self):
        return not self.lost and (BUG or self.node.now_ns() < self.deadline)

    def tell(self):
        self.changed.set()
        self.changed = asyncio.Event()

    def gone(self):
        if not self.lost:
            self.lost = True
            self.node.journal(dict(self.ids(), event="heartbeat_lost"))
            self.tell()

    async def ready(self):
        """Waits until it may act (at once, or once a renewal confirms the lease again)."""
        while not self.sure():
            if self.lost:
                raise Lost()
            await self.changed.wait()

    async def renew(self):
        sent = self.node.now_ns()
        msg = dict(self.ids(), type="heartbeat", worker=self.cfg["name"], client_now=self.node.wall_ns(),
                   in_jeopardy=not self.sure(), effects_attempted=0)
        reply = await self.node.request("coordinator", msg)
        if reply["type"] == "heartbeat_ok":
            d = self.until(sent, reply["lease_ns"])
            self.node.journal(dict(self.ids(), event="heartbeat_ok", deadline=d))
            if self.jeopardy and d > self.node.now_ns():
                self.jeopardy = False
                self.node.journal(dict(self.ids(), event="jeopardy_exited"))
            self.confirmed = max(self.confirmed, sent)
            self.deadline = max(self.deadline, d)
            self.tell()
        elif not self.committing:
            self.gone()

    async def heartbeat(self):
        """Every period a renewal, each on a task of its own, so a late answer is still seen."""
        renewals = set()
        try:
            while not self.lost:
                await asyncio.sleep(s(self.cfg["heartbeat_ns"]))
                t = asyncio.ensure_future(self.renew())
                renewals.add(t)
                t.add_done_callback(renewals.discard)
        finally:
            for t in renewals:
                t.cancel()

    async def watch_jeopardy(self):
        while not self.lost:
            now = self.node.now_ns()
            if now >= self.deadline and not self.jeopardy and not BUG:
                self.jeopardy = True
                self.node.journal(dict(self.ids(), event="jeopardy_entered", last_confirmed=self.confirmed))
            changed = self.changed.wait()
            if self.jeopardy or BUG:
                await changed
            else:
                try:
                    await asyncio.wait_for(changed, s(self.deadline - now))
                except asyncio.TimeoutError:
                    pass

    async def lease_gone(self):
        while not self.lost:
            await self.changed.wait()

    async def unless_lost(self, coro, timeout_ns):
        """`coro` within the timeout, cancelled as soon as the lease is known gone."""
        work = asyncio.ensure_future(asyncio.wait_for(coro, s(timeout_ns)))
        gone = asyncio.ensure_future(self.lease_gone())
        try:
            await asyncio.wait([work, gone], return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                raise Lost()
            return work.result()
        finally:
            # Also when this wait is cancelled (the stage deadline): nothing is left running.
            gone.cancel()
            work.cancel()

    async def call_tool(self, step):
        msg = dict(self.ids(), type="tool_request", step=step)
        try:
            reply = await self.unless_lost(self.node.request("tool", msg), self.cfg["tool_timeout_ns"])
        except asyncio.TimeoutError:
            return None, {"failure": {"error": "tool_timeout", "retryable": True}}
        answer = reply["answer"]
        if isinstance(answer, dict) and "success" in answer:
            return answer["success"]["result"], None
        transient = answer["failure"]["transient"] if isinstance(answer, dict) else True
        return None, {"failure": {"error": "tool_failed", "retryable": transient}}

    async def effect(self, op, receiver):
        key = {"job": self.job, "op": op, "salt": 0}
        while True:
            await self.ready()
            self.node.journal(dict(self.ids(), event="effect_started", receiver=receiver, entity=self.job,
                                   key=key, in_jeopardy=False))
            msg = {"type": "effect", "job": self.job, "entity": self.job, "key": key, "fence": self.token}
            try:
                reply = await self.unless_lost(self.node.request({"receiver": receiver}, msg),
                                               self.cfg["tool_timeout_ns"])
            except asyncio.TimeoutError:
                continue
            outcome = reply["outcome"]
            if isinstance(outcome, dict) and "stale_fence" in outcome:
                self.gone()
                raise Lost()
            return

    async def save(self, step):
        msg = dict(self.ids(), type="checkpoint", worker=self.cfg["name"], step=step)
        while True:
            try:
                reply = await self.unless_lost(self.node.request("coordinator", msg), self.cfg["heartbeat_ns"])
            except asyncio.TimeoutError:
                await self.ready()
                continue
            if not reply["saved"]:
                self.gone()
                raise Lost()
            return

    async def work(self):
        result = 0
        for i, step in enumerate(self.steps[self.done:], start=self.done):
            await self.ready()
            if step["step"] == "tool":
                r, failure = await self.call_tool(i)
                if failure:
                    return failure
                result ^= r
            elif step["step"] == "effect":
                await self.effect(step["op"], step["receiver"])
            else:
                await self.save(i)
        return {"success": {"result": result}}

    async def commit(self, outcome):
        """Reports, asking again when no answer comes; the first answer decides."""
        self.committing = True
        asks = []
        decided = asyncio.Event()

        async def ask():
            msg = dict(self.ids(), type="commit", worker=self.cfg["name"], outcome=outcome,
                       client_now=self.node.wall_ns())
            reply = await self.node.request("coordinator", msg)
            if not decided.is_set():
                decided.set()
                if reply["type"] == "commit_accepted":
                    event = "success_claimed" if "success" in outcome else "failure_acknowledged"
                else:
                    event = "commit_refused"
                self.node.journal(dict(self.ids(), event=event))

        try:
            for _ in range(max(1, self.cfg["commit_attempts_max"])):
                if self.lost:
                    break
                self.node.journal(dict(self.ids(), event="commit_sent", outcome=outcome, in_jeopardy=not self.sure()))
                asks.append(asyncio.ensure_future(ask()))
                try:
                    await asyncio.wait_for(asyncio.shield(decided.wait()), s(self.cfg["commit_retry_ns"]))
                    return
                except asyncio.TimeoutError:
                    pass
            if not decided.is_set():
                decided.set()
                self.node.journal(dict(self.ids(), event="commit_abandoned"))
        finally:
            for t in asks:
                t.cancel()


async def run_job(node, grant, sent):
    a = Attempt(node, grant, sent)
    node.journal(dict(a.ids(), event="job_claimed", deadline=a.deadline))
    tasks = [asyncio.ensure_future(a.watch_jeopardy()), asyncio.ensure_future(a.heartbeat())]
    outcome = None
    try:
        outcome = await asyncio.wait_for(a.work(), s(node.config["stage_deadline_ns"]))
    except asyncio.TimeoutError:
        outcome = {"failure": {"error": "stage_deadline", "retryable": True}}
    except Lost:
        outcome = None
    # Renewals stop with the work: renewing while the report is held would keep the job forever.
    tasks[1].cancel()
    try:
        if outcome is not None:
            await a.commit(outcome)
    finally:
        for t in tasks:
            t.cancel()


async def start(node):
    cfg = node.config
    await asyncio.sleep(s(cfg["start_delay_ns"]))
    while True:
        sent = node.now_ns()
        msg = {"type": "claim", "worker": cfg["name"], "client_now": node.wall_ns()}
        try:
            reply = await asyncio.wait_for(node.request("coordinator", msg), s(cfg["claim_poll_ns"]))
        except asyncio.TimeoutError:
            reply = None
        if reply is not None and reply["type"] == "claim_granted":
            node.set_busy(True)
            await run_job(node, reply, sent)
            node.set_busy(False)
        else:
            await asyncio.sleep(s(cfg["claim_poll_ns"]))


lp.run(start)
