"""Trace ids and call ids: random, never repeated, across threads and forked workers (a pre-forking
server such as gunicorn with ``--preload`` forks after the parent drew some: the children's ids must
differ from each other's and from the parent's)."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from flask_tooldiscovery.serving.guard import issued_call_id, new_call_id, new_trace_id


def test_ids_have_their_forms_and_never_repeat() -> None:
    calls = [new_call_id() for _ in range(1000)]
    traces = [new_trace_id() for _ in range(1000)]
    assert all(issued_call_id(c) for c in calls)
    assert all(len(t) == 32 and int(t, 16) >= 0 and t == t.lower() for t in traces)
    assert len(set(calls)) == len(calls) and len(set(traces)) == len(traces)


def test_threads_never_draw_the_same_id() -> None:
    drawn: list[list[str]] = [[] for _ in range(8)]

    def draw(into: list[str]) -> None:
        for _ in range(500):
            into.append(new_trace_id())
            into.append(new_call_id())

    threads = [threading.Thread(target=draw, args=(into,)) for into in drawn]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for into in drawn for i in into]
    assert len(set(every)) == len(every) == 8000


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="fork")
def test_forked_children_draw_ids_of_their_own() -> None:
    new_trace_id()  # the parent drew one of each: whatever it keeps for the next ones is its own
    new_call_id()
    children = []
    for _ in range(2):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its next ids, to the parent
            try:
                os.write(write, " ".join([*(new_trace_id() for _ in range(3)),
                                          *(new_call_id() for _ in range(3))]).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            children.append(pipe.read().split())
        os.waitpid(pid, 0)
    parent = [*(new_trace_id() for _ in range(3)), *(new_call_id() for _ in range(3))]
    every = parent + children[0] + children[1]
    assert len(set(every)) == 18, (parent, children)
