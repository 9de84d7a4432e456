"""Tests of `mcec console` (issue 46): a real server, a real browser."""
