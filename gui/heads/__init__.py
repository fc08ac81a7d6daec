"""The Heads tab: diagnose every head of a real model's q and k, flag and replay them."""
