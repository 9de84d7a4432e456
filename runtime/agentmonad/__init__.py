"""agentmonad: the runtime of compiled .mce pipelines."""
