"""The Python side of the checker's python_cases: classes and implementations, read by the checker
(never run). Each case names what it needs here."""
