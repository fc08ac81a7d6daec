"""Experiments built on the core: explorer snapshots and parameter sweeps."""
