#!/usr/bin/python3
"""Checks the traces test/observe writes in its `trace` mode (np ranks):
every file is JSON, with one span per collective in call order (consecutive
sequence numbers, the labels, the sizes), and the large operations' steps as
child spans inside their operation, naming peers and bytes.

Usage: check_trace.py DIR NP"""
import glob
import json
import os
import sys

d, np = sys.argv[1], int(sys.argv[2])
files = sorted(glob.glob(os.path.join(d, "chorus-comm*-rank*.json")))
assert len(files) == np, f"{len(files)} trace files in {d}, want {np}"
colls = ["allreduce", "bcast", "reduce", "reduce_scatter", "allgather"]
for f in files:
    with open(f) as fh:
        events = json.load(fh)
    clock = [e for e in events if e.get("name") == "chorus_clock"]
    assert len(clock) == 1, f"{f}: no clock metadata"
    rank = clock[0]["args"]["rank"]
    ops = sorted((e for e in events if e.get("cat") == "op"), key=lambda e: e["args"]["number"])
    steps = [e for e in events if e.get("cat") == "step"]
    got = [e["args"]["collective"] for e in ops]
    assert got == colls * 2 + ["allreduce"], f"{f}: collectives {got}"
    assert [e["args"]["seq"] for e in ops] == list(range(len(ops))), f"{f}: sequence numbers"
    for i, e in enumerate(ops):
        a = e["args"]
        assert e["pid"] == rank and e["dur"] >= 0 and a["result"] == "success", f"{f}: {e}"
        assert a["algorithm"] and a["why"] and a["datatype"] == "float32", f"{f}: {e}"
        assert a["label"] == ("phase A" if i < 5 else "phase B"), f"{f}: label of {e}"
        n = 1 if i == 10 else 4 if i < 5 else 200000
        want = n * 4 * (np if a["collective"] == "reduce_scatter" else 1)
        assert a["bytes"] == want, f"{f}: {a['collective']} #{a['seq']} has {a['bytes']} bytes, want {want}"
    # The large operations moved data: their steps are spans inside them.
    # The slots' pipeline moves none by messages, and run in the calling
    # thread (no executor) it has no step spans at all.
    for e in ops[5:10]:
        mine = [s for s in steps if s["args"]["seq"] == e["args"]["seq"]]
        transfers = [s for s in mine if s["args"]["kind"] in ("send", "recv", "get", "put", "expose")]
        if e["args"]["algorithm"] == "shm_pipeline":
            assert not transfers, f"{f}: transfer spans for {e['args']['collective']} #{e['args']['seq']}"
        else:
            assert transfers, f"{f}: no transfer spans for {e['args']['collective']} #{e['args']['seq']}"
        for s in mine:
            assert s["ts"] >= e["ts"] - 0.01 and s["ts"] + s["dur"] <= e["ts"] + e["dur"] + 0.01, (f, s, e)
        for s in transfers:
            assert 0 <= s["args"]["peer"] < np and s["args"]["peer"] != rank and s["args"]["bytes"] > 0, (f, s)
    print(f"{os.path.basename(f)}: {len(ops)} operations, {len(steps)} step spans: ok")
