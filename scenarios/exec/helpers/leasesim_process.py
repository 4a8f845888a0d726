"""leasesim's process protocol, version 1, for Python: a node of a leasesim run written as
ordinary asyncio code (docs/process-protocol.md).

Inside the process, asyncio runs on the node's simulated clock: `asyncio.sleep`,
`asyncio.wait_for`, `loop.call_later`, tasks and queues work unchanged, and time moves only
when leasesim says so. The node must not read the real clock (`time.time`,
`time.monotonic`), the operating system's randomness, threads, files or sockets: a run would
no longer be a function of its seed.

    import leasesim_process as lp

    async def start(node):
        reply = await node.request("coordinator", {"type": "claim", "worker": node.config["name"], "client_now": node.wall_ns()})
        ...

    lp.run(start)

Standard library only (Python 3.10 or later); one file, to be copied beside the user's code.
The node's `print()` goes to standard error; `random` is seeded at each start (with the
node's incarnation). Sets of tasks (`asyncio.wait`'s `done`, `asyncio.all_tasks()`) iterate
in memory order, which differs from one process to the next: do not act in their order.
"""

import asyncio
import collections
import gc
import heapq
import json
import math
import random
import sys
import traceback

VERSION = 1

# Bounds: a node that schedules work forever at one instant ends the run, never hangs it.
ROUNDS_MAX = 100_000
UNSOLICITED_MAX = 64
INBOX_MAX = 4096


class _NoSelector:
    """The loop's selector: nothing to wait for, ever (the node has no real I/O)."""

    def select(self, timeout):
        return []

    def close(self):
        pass


class SimLoop(asyncio.BaseEventLoop):
    """An event loop whose `time()` is the node's simulated clock, run by leasesim's inputs."""

    def __init__(self):
        super().__init__()
        self._selector = _NoSelector()
        self._sim_s = 0.0
        self.dropped = False
        self.set_exception_handler(self._on_error)

    def drop(self):
        """Forgets the loop and its tasks: what they would still do is nobody's news."""
        self.dropped = True
        self._ready.clear()
        self._scheduled.clear()

    def time(self):
        return self._sim_s

    def _process_events(self, event_list):
        pass

    def _write_to_self(self):
        pass

    def _on_error(self, loop, context):
        # What asyncio would log (a task's exception nobody retrieved): said on standard error,
        # as asyncio says it, but not a failure of the run: when the garbage collector finds
        # such a task depends on the process's whole history, not on the run.
        if not self.dropped:
            sys.stderr.write("asyncio: %s\n" % context.get("message", ""))

    def _due(self):
        while self._scheduled and self._scheduled[0]._cancelled:
            heapq.heappop(self._scheduled)
        # asyncio's own rule in `_run_once`: a timer runs when it is before now + resolution.
        return bool(self._scheduled) and self._scheduled[0].when() < self._sim_s + self._clock_resolution

    def settle(self, now_ns):
        """Runs everything due by `now_ns`, until nothing is ready."""
        self._sim_s = now_ns / 1e9
        asyncio.events._set_running_loop(self)
        try:
            for _ in range(ROUNDS_MAX):
                self._run_once()
                if not self._ready and not self._due():
                    return
        finally:
            asyncio.events._set_running_loop(None)
        raise RuntimeError("the node's tasks never settle: %d rounds at one instant" % ROUNDS_MAX)

    def next_timer_ns(self):
        """The earliest armed timer, in ns on the node's clock, rounded up to an instant at
        which it is due by asyncio's rule (floats are coarser than 1 ns far from zero), or
        None (a timer at infinity never fires)."""
        live = [h.when() for h in self._scheduled if not h._cancelled and math.isfinite(h.when())]
        if not live:
            return None
        when = min(live)
        t = math.ceil(when * 1e9)
        step = 1
        # Bounded: the step doubles, so a few dozen rounds reach any float's spacing.
        for _ in range(128):
            if when < t / 1e9 + self._clock_resolution:
                break
            t += step
            step *= 2
        return min(t, 2**63 - 1)


class Node:
    """One node's way to the world: its configuration, its clock, its requests and replies, its
    journal, and what it keeps across a crash."""

    def __init__(self, start, loop):
        self.role = start["role"]
        self.config = start["config"]
        self.durable = dict(start.get("durable") or {})
        self._now = start["now"]
        self._wall = start.get("wall", 0)
        self._loop = loop
        self._out = []
        self._waiting = {}
        self._next_req = 1
        self._incarnation = start.get("incarnation", 0)
        self.unsolicited = collections.deque(maxlen=UNSOLICITED_MAX)
        self._inbox = asyncio.Queue(maxsize=INBOX_MAX)

    # The clock.
    def now_ns(self):
        """The node's local clock, in nanoseconds (the input's `now`)."""
        return self._now

    def wall_ns(self):
        """Its wall clock, in nanoseconds (a worker's only)."""
        return self._wall

    # Outputs.
    def send(self, to, msg):
        """Sends `msg` to `to`: "coordinator", "tool", {"receiver": i}, or {"addr": n} (a server's
        reply to the sender of a request)."""
        self._out.append({"output": "send", "to": to, "msg": msg})

    def journal(self, event):
        """Journals an event ({"event": "job_claimed", ...}: the protocol's events)."""
        self._out.append({"output": "journal", "event": event})

    def set_busy(self, busy):
        """A worker says whether it holds (or believes it holds) a job."""
        self._out.append({"output": "busy", "busy": bool(busy)})

    def set_all_terminal(self, done):
        """A coordinator says whether every job is terminal."""
        self._out.append({"output": "all_terminal", "value": bool(done)})

    def keep(self, key, value):
        """Writes `key` to the node's durable store (None removes it): the next start after a
        crash finds it in `node.durable`."""
        if value is None:
            self.durable.pop(key, None)
        else:
            self.durable[key] = value
        self._out.append({"output": "durable", "key": key, "value": value})

    # Requests and replies.
    async def request(self, to, msg):
        """Sends `msg` with a fresh request number and waits for the reply that carries it."""
        req = (self._incarnation << 32) + self._next_req
        self._next_req += 1
        fut = self._loop.create_future()
        self._waiting[req] = fut
        msg = dict(msg, req=req)
        self.send(to, msg)
        try:
            return await fut
        finally:
            self._waiting.pop(req, None)

    async def recv(self):
        """A server's next request: (from, msg)."""
        return await self._inbox.get()

    def _deliver(self, frm, msg):
        fut = self._waiting.get(msg.get("req"))
        if self.role == "worker":
            if fut is not None and not fut.done():
                fut.set_result(msg)
            else:
                self.unsolicited.append(msg)
        else:
            if self._inbox.full():
                raise RuntimeError("more than %d requests wait in the inbox" % INBOX_MAX)
            self._inbox.put_nowait((frm, msg))


# The protocol's own stream; the node's `print()` goes to standard error instead, where
# leasesim keeps the last lines for a failure's report.
_PROTOCOL = sys.stdout
sys.stdout = sys.stderr


def _write(line):
    _PROTOCOL.write(json.dumps(line, separators=(",", ":")))
    _PROTOCOL.write("\n")


def _fail(what):
    sys.stderr.write(what + "\n")
    sys.stderr.flush()
    sys.exit(1)


def _drop(loop):
    """Ends a run's loop: its tasks are dropped, and their garbage collected now, so that none of
    it reaches a later run."""
    if loop is not None:
        loop.drop()
    gc.collect()


def run(start):
    """Serves leasesim's inputs on standard input until it closes: `start(node)` (a coroutine
    function) runs at each start of the node, its tasks on the node's simulated clock."""
    loop = None
    node = None
    main = None
    timer = None
    for line in sys.stdin:
        if not line.strip():
            continue
        inp = json.loads(line)
        kind = inp.get("input")
        out = []
        if kind == "hello":
            out.append({"output": "hello", "version": VERSION})
        elif kind == "reset":
            _drop(loop)
            loop, node, main, timer = None, None, None, None
        elif kind == "start":
            if node is not None:
                # A process starts its node once a run: a restart is a new process.
                _fail("a second start without a reset between them")
            _drop(loop)
            # `random` draws from the operating system at import: the same draws at every start.
            random.seed(inp.get("incarnation", 0))
            loop = SimLoop()
            node = Node(inp, loop)
            timer = None
            main = loop.create_task(start(node))
            main.add_done_callback(lambda t: None)
        elif kind in ("message", "timer"):
            if node is None:
                _fail("an input '%s' before any start" % kind)
            node._now = inp["now"]
            node._wall = inp.get("wall", node._wall)
            if kind == "message":
                node._deliver(inp.get("from"), inp["msg"])
        else:
            _fail("an input this helper does not know: %r" % (kind,))
        if loop is not None:
            loop.settle(node._now)
            if main.done() and not main.cancelled() and main.exception() is not None:
                _fail("the node's start function raised:\n" + "".join(traceback.format_exception(main.exception())))
            out.extend(node._out)
            node._out = []
            t = loop.next_timer_ns()
            if t != timer:
                timer = t
                out.append({"output": "timer", "at": t})
        for o in out:
            _write(o)
        _write({"output": "done"})
        _PROTOCOL.flush()
