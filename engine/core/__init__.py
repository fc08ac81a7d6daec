"""Numerical core: attention forward/backward and its parts, softmax statistics, closed forms.

``attention`` runs ``passes`` (forward and backward) on the row-tile kernel ``tiled``, which
builds on ``plan`` (checked inputs, masks), which builds on ``scaling`` (the rules' factors and
logit maps); ``softmax``, ``parallel`` (row blocks on threads), ``memory`` (the budget guard),
``checks`` and ``threads`` (the BLAS thread limit) sit below. ``stats`` and ``theory`` are the
row statistics and closed forms the views and tests compare against.
"""
