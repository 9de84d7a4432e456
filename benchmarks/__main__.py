"""``python -m benchmarks``: run every benchmark, print one table, write JSON."""

from benchmarks.run import main

if __name__ == "__main__":
    main()
