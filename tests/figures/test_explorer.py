"""The explorer contract: one object, a live widget face and a static HTML face."""

import base64
import json
import re

import PIL.Image
import pytest

from tutorial_lib.figures.explorer import STATIC_ENV, Explorer


def draw_line(fig, slope, style):
    ax = fig.subplots()
    ax.plot([0, 1], [0, slope], linestyle=style)
    ax.set_ylim(-3, 3)
    ax.set_title("slope", fontsize=13)
    ax.tick_params(labelsize=12)


def html_frame(n, word):
    return f"<p>{word} x {n}</p>"


def static_frames(html):
    """The frames embedded in the static face's script, put back together from their pieces."""
    found = re.search(r"var data = (\{.*?\});\n", html, flags=re.S)
    assert found, "no frames in the static HTML"
    data = json.loads(found.group(1).replace("<\\/", "</"))
    return {key: "".join(data["pieces"][i] for i in parts) for key, parts in data["frames"].items()}


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


def test_figure_frames_are_drawn_at_twice_their_displayed_size():
    explorer = Explorer(draw_line, {"slope": [1, 2], "style": ["-"]}, figsize=(5, 2), dpi=80)
    png = explorer.render(slope=1, style="-")
    image = PIL.Image.open(__import__("io").BytesIO(png))
    assert image.size == (2 * 5 * 80, 2 * 2 * 80)
    html = explorer.static_html()
    assert 'width="400" height="160"' in html  # displayed at 80 CSS px per inch
    # The smallest text drawn, in points, and how many CSS px a point is at the displayed size.
    assert 'data-text-points="12"' in html and 'data-px-per-point="1.11111"' in html
    frame = static_frames(html)["0-0"]
    palette = PIL.Image.open(__import__("io").BytesIO(base64.b64decode(frame.split(",", 1)[1])))
    assert palette.mode == "P" and palette.size == image.size  # 64 colours, full resolution


def test_html_frames_share_their_pieces():
    def table(n):
        return "<table>" + "".join(f"<tr><td>row {i}</td></tr>" for i in range(20)) + f"<p>{n}</p>"

    explorer = Explorer(table, {"n": list(range(10))}, kind="html")
    html = explorer.static_html()
    frames = static_frames(html)
    assert frames["3"] == table(3)
    data = re.search(r"var data = (\{.*?\});\n", html, flags=re.S).group(1)
    assert len(data) < 0.4 * sum(len(f) for f in frames.values())


def test_initial_values_choose_the_first_frame_shown():
    explorer = Explorer(
        html_frame, {"n": [1, 2, 3], "word": ["a", "b"]}, kind="html", initial={"n": 3, "word": "b"}
    )
    html = explorer.static_html()
    assert "<p>b x 3</p></div>" in html
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
    assert "<p>b x 1</p>" in box.view.value


def test_live_kernel_bundle_draws_one_frame_and_carries_the_widget(monkeypatch):
    monkeypatch.delenv(STATIC_ENV, raising=False)
    calls = []

    def draw(n, word):
        calls.append((n, word))
        return html_frame(n, word)

    explorer = Explorer(draw, {"n": [1, 2, 3], "word": ["a", "b"]}, kind="html")
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "<p>a x 1</p>" in bundle["text/html"] and "var data" not in bundle["text/html"]
    assert calls == [(1, "a")]  # the starting frame only, drawn once for both faces
    assert "6 frames" in bundle["text/plain"]


def test_book_build_bundle_is_the_static_face_alone(monkeypatch):
    monkeypatch.setenv(STATIC_ENV, "static")
    bundle = Explorer(html_frame, {"n": [1, 2], "word": ["a"]}, kind="html")._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}  # no widget: the page needs no manager
    assert sorted(static_frames(bundle["text/html"])) == ["0-0", "1-0"]


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
        ({"grid": {"n": [1, True]}}, r"repeated values: 1 and True compare equal"),
        ({"grid": {"n": [2, 2.0]}}, "repeated values"),
        ({"grid": {"n": "abc"}}, r"not the string 'abc'.*write \['abc'\]"),
        ({"grid": {"n": {1, 2}}}, "list of values in order; got set"),
        ({"grid": {"n": 3}}, "list of values in order; got int"),
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


def test_with_live_controls_other_front_ends_get_the_starting_frame():
    bundle = Explorer(html_frame, {"n": [1, 2], "word": ["a"]}, kind="html")._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "Live controls are off" not in bundle["text/html"]
    assert "Starting frame (n = 1, word = a)" in bundle["text/html"]
    assert "<p>a x 2</p>" not in bundle["text/html"]  # only the frame a reader starts on


def test_an_ipywidgets_7_box_is_shown_through_its_view_spec():
    from tutorial_lib.figures.explorer import _widget_view

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
