"""An example package whose pipeline is written in `.mce` and compiled at build time.

``greeter.greet_mce`` is generated from ``greet.mce`` by the mcec build hook;
``greeter.impl`` holds the step implementations it calls.
"""
