"""Numerical core: attention forward/backward, softmax statistics, closed-form theory."""
