"""The pure cores of the tools around the compiler: the formatter (fmt) and the pipeline pictures (graph).
Their commands, with the file I/O, are in :mod:`mcec.cli`."""
