"""Shared GUI kit: jobs on worker threads, forms, plot view base, style, export, i18n."""
