"""Run-time data files of Attention Scale Explorer (tour texts, translations, CJK font).

A wheel installs this folder as the package ``attention_explorer_resources`` (see
``[tool.setuptools.package-dir]`` in pyproject.toml); :mod:`gui.kit.resources` finds the files
through it. There is no code here: the module only marks the folder as a package.
"""
