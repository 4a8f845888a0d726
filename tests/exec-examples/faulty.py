"""A worker process that breaks the process protocol in the way its first argument names, for
the tests that show leasesim ending such a run as MACHINE ERROR, naming the node and the
command, and never hanging: exit, garbage, silent, flood, long-line, no-hello, wrong-message;
and one that keeps state across runs (leaky), which the determinism check reports."""

import json
import sys

MODE = sys.argv[1]
STARTS = 0


def say(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


for raw in sys.stdin:
    inp = json.loads(raw)
    kind = inp["input"]
    if kind == "hello":
        if MODE == "no-hello":
            say({"output": "done"})
            continue
        say({"output": "hello", "version": 1})
        say({"output": "done"})
        continue
    if kind != "start":
        say({"output": "done"})
        continue
    if MODE == "leaky":
        # A process-wide counter, kept from one run to the next: the same seed runs differently.
        STARTS += 1
        claim = {"type": "claim", "req": STARTS, "worker": inp["config"]["name"], "client_now": 0}
        say({"output": "send", "to": "coordinator", "msg": claim})
        say({"output": "done"})
        continue
    if MODE == "exit":
        sys.stderr.write("worker: giving up on purpose\n")
        sys.exit(3)
    if MODE == "garbage":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
    elif MODE == "silent":
        sys.stdin.readline()
    elif MODE == "flood":
        for i in range(5000):
            say({"output": "journal", "event": {"event": "heartbeat_lost", "job": 0, "token": i}})
        say({"output": "done"})
    elif MODE == "long-line":
        sys.stdout.write('{"output": "journal", "pad": "' + "x" * (2 << 20) + '"}\n')
        sys.stdout.flush()
    elif MODE == "wrong-message":
        say({"output": "send", "to": "coordinator", "msg": {"type": "claim"}})
        say({"output": "done"})
