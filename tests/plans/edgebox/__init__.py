"""Fixture specs of the plan tests at the edges of checking (issue 29): unknown relations, work."""
