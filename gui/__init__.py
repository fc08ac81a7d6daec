"""Qt front end of Attention Scale Explorer (PySide6 + pyqtgraph).

``gui`` imports the engine, never the other way round. Importing this package does not import
Qt; it only makes pyqtgraph (imported by the submodules) choose PySide6.
"""

import os

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
