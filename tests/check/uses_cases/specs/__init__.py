"""Specs that use each other's pipelines (tests/check/test_check_uses.py)."""
