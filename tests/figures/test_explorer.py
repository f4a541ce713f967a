"""The explorer contract: one object, a live widget face and a static HTML face."""

import base64
import json
import re

import pytest

from tutorial_lib.figures.explorer import Explorer


def draw_line(fig, slope, style):
    ax = fig.subplots()
    ax.plot([0, 1], [0, slope], linestyle=style)
    ax.set_ylim(-3, 3)


def html_frame(n, word):
    return f"<p>{word} x {n}</p>"


def static_frames(html):
    """The frames table embedded in the static face's script."""
    found = re.search(r"var frames = (\{.*?\});\n", html, flags=re.S)
    assert found, "no frames in the static HTML"
    return json.loads(found.group(1).replace("<\\/", "</"))


def test_static_face_holds_one_distinct_frame_per_grid_point():
    explorer = Explorer(draw_line, {"slope": [-2, 0, 2], "style": ["-", ":"]})
    html = explorer.static_html()
    frames = static_frames(html)
    assert sorted(frames) == sorted(f"{i}-{j}" for i in range(3) for j in range(2))
    assert len(set(frames.values())) == 6  # every frame is a different picture
    for src in frames.values():
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    # One slider for the numbers, one select for the strings, and the first frame shown.
    assert html.count('type="range"') == 1 and html.count("<select") == 1
    assert f'src="{frames["0-0"]}"' in html
    assert 'alt="' in html


def test_initial_values_choose_the_first_frame_shown():
    explorer = Explorer(
        html_frame, {"n": [1, 2, 3], "word": ["a", "b"]}, kind="html", initial={"n": 3, "word": "b"}
    )
    html = explorer.static_html()
    assert '<div class="explorer-view"><p>b x 3</p></div>' in html
    assert static_frames(html)["2-1"] == "<p>b x 3</p>"


def test_live_face_redraws_when_a_control_moves():
    explorer = Explorer(draw_line, {"slope": [-2, 0, 2], "style": ["-", ":"]})
    box = explorer.widget()
    before = box.view.value
    box.controls["slope"].value = 2
    after = box.view.value
    assert before != after
    assert after == explorer.render(slope=2, style="-")


def test_live_html_face_redraws():
    explorer = Explorer(html_frame, {"n": [1, 2], "word": ["a", "b"]}, kind="html")
    box = explorer.widget()
    box.controls["word"].value = "b"
    assert box.view.value == "<p>b x 1</p>"


def test_mimebundle_carries_both_faces():
    bundle = Explorer(html_frame, {"n": [1, 2], "word": ["a"]}, kind="html")._repr_mimebundle_()
    assert "text/html" in bundle
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "2 frames" in bundle["text/plain"]


def test_frames_are_cached_once_drawn():
    calls = []

    def draw(n):
        calls.append(n)
        return str(n)

    explorer = Explorer(draw, {"n": [1, 2]}, kind="html")
    explorer.frames()
    explorer.frames()
    explorer.frame(n=1)
    assert calls == [1, 2]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"grid": {}}, "non-empty dict"),
        ({"grid": {"n": []}}, r"grid\['n'\] is empty"),
        ({"grid": {"n": [1, 1]}}, "repeated values"),
        ({"grid": {"n": [1]}, "kind": "svg"}, "kind must be"),
        ({"grid": {"n": [1, 2]}, "initial": {"n": 5}}, r"initial n=5 is not one of"),
    ],
)
def test_bad_explorers_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Explorer(html_frame, **kwargs)


def test_frame_outside_the_grid_is_refused():
    explorer = Explorer(html_frame, {"n": [1, 2], "word": ["a"]}, kind="html")
    with pytest.raises(ValueError, match=r"n=7 is not in the grid"):
        explorer.frame(n=7, word="a")
    with pytest.raises(ValueError, match="missing parameter 'word'"):
        explorer.frame(n=1)


def test_keep_figure_passes_the_previous_figure_uncleared():
    seen = []

    def draw(fig, n):
        seen.append(len(fig.axes))
        if not fig.axes:
            fig.subplots()
        fig.axes[0].set_title(str(n))

    Explorer(draw, {"n": [1, 2, 3]}, keep_figure=True).frames()
    assert seen == [0, 1, 1]
    seen.clear()
    Explorer(draw, {"n": [1, 2, 3]}).frames()
    assert seen == [0, 0, 0]


def test_without_ipywidgets_the_frames_say_why(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import ipywidgets now fails
    bundle = Explorer(html_frame, {"n": [1, 2], "word": ["a"]}, kind="html")._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    assert "Live controls are off: ipywidgets is not installed" in bundle["text/html"]
    assert static_frames(bundle["text/html"]) == {"0-0": "<p>a x 1</p>", "1-0": "<p>a x 2</p>"}


def test_with_live_controls_the_frames_say_where_they_come_alive():
    bundle = Explorer(html_frame, {"n": [1, 2], "word": ["a"]}, kind="html")._repr_mimebundle_()
    assert "Live controls are off" not in bundle["text/html"]
    assert "the controls redraw live" in bundle["text/html"]


def test_an_ipywidgets_7_box_is_shown_through_its_view_spec():
    from tutorial_lib.widgets import _widget_view

    class Box7:  # ipywidgets 7 has no _repr_mimebundle_; it displays this view itself
        def get_view_spec(self):
            return {"version_major": 2, "version_minor": 0, "model_id": "abc"}

    assert _widget_view(Box7()) == {
        "application/vnd.jupyter.widget-view+json": {
            "version_major": 2,
            "version_minor": 0,
            "model_id": "abc",
        }
    }
