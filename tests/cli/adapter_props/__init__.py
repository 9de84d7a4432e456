"""Fixtures of tests/cli/test_adapter_props.py: the classes and implementations its generated
specs share (a sub spec on state ``Notes``, a main spec on state ``Chat``)."""
