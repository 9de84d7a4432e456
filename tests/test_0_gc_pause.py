"""The one garbage-collector pause every phase uses: nests, and restores what it found."""

from __future__ import annotations

import gc
import threading

from mcec.gc_pause import gc_paused


def test_pauses_nest_and_restore_the_collector() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause ending does not resume it
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_in_two_threads() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with gc_paused():
        thread.start()
        inside.wait(10)
    assert not gc.isenabled()  # the other thread's pause is still active
    release.set()
    thread.join(10)
    assert gc.isenabled()
