"""Reading and writing tensor files: real q and k of a model, saved outside the app."""
