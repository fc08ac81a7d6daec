"""pyqtgraph's right-click menus (the view box's "View All", "X axis", "Mouse Mode", the plot's
"Plot Options" and the scene's "Export...") in the UI's language.

pyqtgraph words them with ``QCoreApplication.translate`` in its own contexts (``ViewBox``,
``PlotItem``, ``GraphicsScene``, ``Form``) when a plot is built. The texts are marked here in
those contexts, so that the app's catalogue carries them and plots built in Chinese come up
in Chinese; :func:`retranslate_plot_menus` words the menus of plots built before a language
switch again. The long tooltips of the option widgets stay pyqtgraph's English.
"""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import QApplication, QMenu, QWidgetAction

# Not gui.kit.i18n: that module calls this one after a language switch.
from engine.config.base import QT_TRANSLATE_NOOP

translate = QCoreApplication.translate

__all__ = ["MENU_TEXTS", "retranslate_every_plot_menu", "retranslate_plot_menus"]

# Every menu and option text of pyqtgraph's plot menus, in pyqtgraph's contexts.
MENU_TEXTS = (
    QT_TRANSLATE_NOOP("ViewBox", "ViewBox options"), QT_TRANSLATE_NOOP("ViewBox", "View All"),
    QT_TRANSLATE_NOOP("ViewBox", "axis"), QT_TRANSLATE_NOOP("ViewBox", "Mouse Mode"),
    QT_TRANSLATE_NOOP("ViewBox", "3 button"), QT_TRANSLATE_NOOP("ViewBox", "1 button"),
    QT_TRANSLATE_NOOP("GraphicsScene", "Export..."),
    QT_TRANSLATE_NOOP("PlotItem", "Plot Options"), QT_TRANSLATE_NOOP("PlotItem", "Transforms"),
    QT_TRANSLATE_NOOP("PlotItem", "Downsample"), QT_TRANSLATE_NOOP("PlotItem", "Average"),
    QT_TRANSLATE_NOOP("PlotItem", "Alpha"), QT_TRANSLATE_NOOP("PlotItem", "Grid"),
    QT_TRANSLATE_NOOP("PlotItem", "Points"),
    # The option widgets inside the menus (pyqtgraph's Designer forms).
    QT_TRANSLATE_NOOP("Form", "Link Axis:"), QT_TRANSLATE_NOOP("Form", "Auto"),
    QT_TRANSLATE_NOOP("Form", "Manual"), QT_TRANSLATE_NOOP("Form", "Invert Axis"),
    QT_TRANSLATE_NOOP("Form", "Mouse Enabled"), QT_TRANSLATE_NOOP("Form", "Visible Data Only"),
    QT_TRANSLATE_NOOP("Form", "Auto Pan Only"), QT_TRANSLATE_NOOP("Form", "Alpha"),
    QT_TRANSLATE_NOOP("Form", "Average"), QT_TRANSLATE_NOOP("Form", "Clip to View"),
    QT_TRANSLATE_NOOP("Form", "Downsample"), QT_TRANSLATE_NOOP("Form", "Forget hidden traces"),
    QT_TRANSLATE_NOOP("Form", "Log X"), QT_TRANSLATE_NOOP("Form", "Log Y"),
    QT_TRANSLATE_NOOP("Form", "Max Traces:"), QT_TRANSLATE_NOOP("Form", "Mean"),
    QT_TRANSLATE_NOOP("Form", "Opacity"), QT_TRANSLATE_NOOP("Form", "Peak"),
    QT_TRANSLATE_NOOP("Form", "Points"), QT_TRANSLATE_NOOP("Form", "Power Spectrum (FFT)"),
    QT_TRANSLATE_NOOP("Form", "Show X Grid"), QT_TRANSLATE_NOOP("Form", "Show Y Grid"),
    QT_TRANSLATE_NOOP("Form", "Subsample"), QT_TRANSLATE_NOOP("Form", "Subtract Mean"),
    QT_TRANSLATE_NOOP("Form", "dy/dx"), QT_TRANSLATE_NOOP("Form", "Y vs. Y'"),
)
# The plot menu's sub-menus, in pyqtgraph's order (PlotItem.__init__).
_PLOT_SUBMENUS = ("Transforms", "Downsample", "Average", "Alpha", "Grid", "Points")


def _submenus(menu: QMenu) -> list[QMenu]:
    # Children, not QAction.menu(): PySide 6.10 raises "already deleted" for those wrappers.
    return menu.findChildren(QMenu, options=Qt.FindChildOption.FindDirectChildrenOnly)


def _form_of(menu: QMenu) -> Any:
    """The option widget a sub-menu holds (pyqtgraph puts it in a QWidgetAction)."""
    action = next((a for a in menu.actions() if isinstance(a, QWidgetAction)), None)
    return None if action is None else action.defaultWidget()


def _retranslate_view_box(box: pg.ViewBox) -> None:
    menu = getattr(box, "menu", None)
    if menu is None or not shiboken6.isValid(menu):
        return
    menu.setTitle(translate("ViewBox", "ViewBox options"))
    menu.viewAll.setText(translate("ViewBox", "View All"))
    *axes, mouse = _submenus(menu)
    for name, submenu, form in zip("XY", axes, menu.ctrl, strict=False):
        submenu.setTitle(f"{name} {translate('ViewBox', 'axis')}")
        form.retranslateUi(_form_of(submenu))
    mouse.setTitle(translate("ViewBox", "Mouse Mode"))
    for action, text in zip(menu.mouseModes, ("3 button", "1 button"), strict=True):
        action.setText(translate("ViewBox", text))
    menu.valid = False  # the form's range fields were reset to "0": re-read them on popup


def _retranslate_plot(plot: pg.PlotItem) -> None:
    menu = getattr(plot, "ctrlMenu", None)
    if menu is None or not shiboken6.isValid(menu):
        return
    menu.setTitle(translate("PlotItem", "Plot Options"))
    submenus = _submenus(menu)
    for submenu, text in zip(submenus, _PLOT_SUBMENUS, strict=False):
        submenu.setTitle(translate("PlotItem", text))
    if submenus:
        plot.ctrl.retranslateUi(_form_of(submenus[0]))


def retranslate_plot_menus(scene: Any) -> None:
    """Word the right-click menus of every plot in ``scene`` (a pyqtgraph GraphicsScene) and
    its "Export..." in the current language."""
    for action in getattr(scene, "contextMenu", []):
        action.setText(translate("GraphicsScene", "Export..."))
    for item in scene.items():
        if isinstance(item, pg.ViewBox):
            _retranslate_view_box(item)
        elif isinstance(item, pg.PlotItem):
            _retranslate_plot(item)


def retranslate_every_plot_menu() -> None:
    """:func:`retranslate_plot_menus` for the scene of every pyqtgraph view of the application."""
    if QApplication.instance() is None:
        return
    for widget in QApplication.allWidgets():
        if isinstance(widget, pg.GraphicsView):
            retranslate_plot_menus(widget.scene())
