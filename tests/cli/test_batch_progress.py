"""The batch example shows its progress (issue 33): the README's ``mcec run examples/batch/…``
command on a terminal (a pseudo-terminal the test opens) draws the ``each``'s progress bar up to
40/40 while the scripted model answers, and prints the result alone on stdout."""

from __future__ import annotations

import json
from pathlib import Path

from terminal import on_a_terminal

ROOT = Path(__file__).resolve().parents[2]
BATCH = ROOT / "examples" / "batch"


def test_the_batch_example_shows_the_each_progress_on_a_terminal() -> None:
    docs = (BATCH / "docs.json").read_text(encoding="utf-8")
    status, out, screen = on_a_terminal(
        ["run", "examples/batch/batch.mce", "extract_all", "--input", docs,
         "--model", "extractor=py:examples.batch.extractor:extract"],
        ROOT, BATCH_MODEL_DELAY="0.2",  # five rounds of eight answers, 0.2 s each: the bar is drawn climbing
    )
    assert status == 0, screen
    result = json.loads(out)
    assert result["ok"] and result["value"]["documents"] == 40, out
    assert "each (batch.mce:" in screen, screen  # the each's bar, named by its line
    counts = {n for n in range(41) if f"{n}/40" in screen}
    assert 40 in counts and len(counts) >= 3, screen  # it climbed, and was drawn complete
