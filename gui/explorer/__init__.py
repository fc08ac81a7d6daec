"""The explorer: parameter panel, engine worker and the plot views of one configuration."""
