"""A spec whose question has an answer type with every kind of form field (tests/console)."""
