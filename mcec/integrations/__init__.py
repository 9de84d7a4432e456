"""mcec inside other tools: the pytest plugin and the hatch build hook."""
