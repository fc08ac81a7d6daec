"""Command-line entry points that need no Qt (sweep, train, lr-sweep)."""
