"""readers/read_ahead.py: items in order, an exception where it was raised, the thread stopped when left early."""

from __future__ import annotations

import threading

import pytest

from playbook.core.errors import InputError
from playbook.readers.read_ahead import read_ahead


def test_items_come_in_order_and_an_error_after_the_items_before_it():
    def items():
        yield from (b"a", b"b", b"c")
        raise InputError("trace.json.gz: gzip data expands more than 100x")

    got = []
    with pytest.raises(InputError, match="expands"):
        for item in read_ahead(items(), depth=1):
            got.append(item)
    assert got == [b"a", b"b", b"c"]


def test_leaving_early_stops_the_thread_and_closes_the_source():
    closed = threading.Event()

    def endless():
        try:
            while True:
                yield b"x" * 1024
        finally:
            closed.set()

    chunks = read_ahead(endless(), depth=2)
    assert next(chunks) == b"x" * 1024
    chunks.close()
    assert closed.is_set()
    assert not any(t.name == "playbook-read-ahead" and t.is_alive() for t in threading.enumerate())
