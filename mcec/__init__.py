"""mcec, the Monadic Context Engineering compiler: `.mce` specs to typed Python."""

__version__ = "0.1.0"
