"""The mini-trainer: tasks, the tiny attention model, optimisers, training loop, lr sweep."""
