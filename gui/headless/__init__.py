"""Commands that run without a window: offscreen export and the self-test."""
