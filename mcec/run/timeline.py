"""The timeline of a run (``mcec run --trace``, ``mcec runs show``): :mod:`agentmonad.timeline`,
where it lives so that the runtime's own command line draws runs too."""

from agentmonad.timeline import Node, Timeline, as_json, from_records, record_outcome, render_text, short_json, state_change

__all__ = ["Timeline", "Node", "from_records", "render_text", "as_json", "record_outcome", "short_json", "state_change"]
