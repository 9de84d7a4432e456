"""A spec whose `each` waits, element by element, until the test lets it go on (tests/console)."""
