"""Chinese words that must agree across the app, and pyqtgraph's own menus in the UI's
language (issue 56, Words and numbers)."""

from __future__ import annotations

from pathlib import Path

import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QMenu

from gui.kit import i18n

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def english_after():
    yield
    i18n.set_language("en")


def test_the_held_out_set_has_one_chinese_name():
    catalogue = (ROOT / "resources" / "i18n" / "explorer_zh_CN.ts").read_text(encoding="utf-8")
    tour = (ROOT / "resources" / "tour" / "tour.zh_CN.json").read_text(encoding="utf-8")
    # The Train tab says 留出集 ("held-out set"); the tour once said 验证集 ("validation set").
    assert "留出集" in catalogue and "留出集" in tour
    for other in ("验证集", "保留集", "测试集"):
        assert other not in catalogue and other not in tour, other


def _menu_texts(plot: pg.PlotItem) -> dict[str, str]:
    menu = plot.vb.menu
    axes = menu.findChildren(QMenu)  # X axis, Y axis, Mouse Mode
    return {"view all": menu.viewAll.text(), "x axis": axes[0].title(),
            "mouse": axes[2].title(), "auto": menu.ctrl[0].autoRadio.text(),
            "plot options": plot.ctrlMenu.title(), "grid": plot.ctrl.xGridCheck.text(),
            "export": plot.scene().contextMenu[0].text()}


ENGLISH = {"view all": "View All", "x axis": "X axis", "mouse": "Mouse Mode", "auto": "Auto",
           "plot options": "Plot Options", "grid": "Show X Grid", "export": "Export..."}
CHINESE = {"view all": "显示全部", "x axis": "X 轴", "mouse": "鼠标模式", "auto": "自动",
           "plot options": "绘图设置", "grid": "显示 X 网格", "export": "导出…"}


def test_plot_menus_follow_the_language(window, qtbot, english_after):
    # A plot built before the switch: its menus are worded again.
    plot = window.view("softmax").plots()[0]
    assert _menu_texts(plot) == ENGLISH
    assert window.language.set_language("zh_CN")
    assert _menu_texts(plot) == CHINESE
    # A plot built in Chinese comes up in Chinese (pyqtgraph asks the app's catalogue).
    fresh = pg.PlotWidget()
    qtbot.addWidget(fresh)
    assert _menu_texts(fresh.getPlotItem()) == CHINESE
    assert window.language.set_language("en")
    assert _menu_texts(plot) == ENGLISH


def test_the_sample_files_description_is_in_the_ui_language(qapp, english_after):
    from engine.io.tensors import load_tensors
    from gui.heads.texts import file_text, model_text
    from gui.kit.resources import sample_tensors_path

    sample = load_tensors(sample_tensors_path())
    assert sample.meta["model"].startswith("Attention Scale Explorer mini-trainer")
    english = model_text(sample)
    assert english == ("the app's mini-trainer: one attention layer (no residual, no MLP), "
                       "heads: 1, d_k 64, d_model 64, task: key → value lookup")
    assert i18n.set_language("zh_CN")
    chinese = model_text(sample)
    assert chinese.startswith("本程序的迷你训练器") and "头数 1" in chinese
    assert i18n.translate("TrainPanel", "key → value lookup") in chinese
    assert "mini-trainer" not in file_text(sample)


def test_a_models_own_description_is_shown_as_written(tmp_path):
    import numpy as np

    from engine.io.tensors import load_tensors, write_tensors
    from gui.heads.texts import model_text

    rng = np.random.default_rng(0)
    arrays = {"layer0.q": rng.standard_normal((1, 1, 4, 8)),
              "layer0.k": rng.standard_normal((1, 1, 4, 8))}
    path = write_tensors(tmp_path / "own.npz", arrays, meta={"model": "my BERT, layer 3"})
    assert model_text(load_tensors(path)) == "my BERT, layer 3"
