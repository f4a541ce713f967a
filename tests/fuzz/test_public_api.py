"""Property-based fuzz of every public name of the concept modules and the labs.

The public API is read from each module's ``__all__`` (and the public methods each public
class defines), so a function added tomorrow is fuzzed too, or this suite fails and says it
has no fuzz entry yet. Every entry is drawn ``examples`` times, deterministically
(``derandomize=True``, no example database), half legal calls and half spoilt ones: see
:mod:`tests.fuzz.harness` for what each must do.
"""

import importlib
import inspect
import pkgutil

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tutorial_lib
from tests.fuzz import (
    specs_attention,
    specs_ensembles,
    specs_labs,
    specs_model,
    specs_norms,
    specs_positional,
    specs_training,
)
from tests.fuzz.harness import run

SPECS = {}
EXEMPT = {}
for _module in (
    specs_attention,
    specs_positional,
    specs_norms,
    specs_model,
    specs_training,
    specs_labs,
    specs_ensembles,
):
    assert not set(_module.SPECS) & set(SPECS), "one entry per name"
    SPECS |= _module.SPECS
    EXEMPT |= _module.EXEMPT

# Not fuzzed here: figures (drawing, tested in tests/figures) and checks (they judge a
# learner's function, tested in tests/checks).
OUTSIDE = ("tutorial_lib.figures", "tutorial_lib.checks")


def concept_and_lab_modules():
    names = [tutorial_lib.__name__]
    for info in pkgutil.walk_packages(tutorial_lib.__path__, "tutorial_lib."):
        if not info.name.startswith(OUTSIDE):
            names.append(info.name)
    return [importlib.import_module(name) for name in sorted(names)]


def key(obj, module, name) -> str:
    """'attention.MultiHeadAttention' for what is defined in tutorial_lib.attention."""
    if inspect.isclass(obj) or inspect.isfunction(obj):
        return f"{obj.__module__}.{obj.__qualname__}".removeprefix("tutorial_lib.")
    return f"{module.__name__}.{name}".removeprefix("tutorial_lib.")


def public_api() -> dict[str, object]:
    """Every public name (each once, under the module that defines it) and every public method
    a public class defines itself (``forward`` is fuzzed with its class)."""
    found = {}
    for module in concept_and_lab_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            found.setdefault(key(obj, module, name), obj)
            if inspect.isclass(obj) and obj.__module__.startswith("tutorial_lib"):
                for attr, value in vars(obj).items():
                    if inspect.isfunction(value) and not attr.startswith("_") and attr != "forward":
                        found.setdefault(key(value, module, attr), value)
    return found


def test_every_module_declares_its_public_api():
    missing = [
        m.__name__
        for m in concept_and_lab_modules()
        if m.__name__ != "tutorial_lib" and not hasattr(m, "__all__")
    ]
    assert not missing, f"modules without __all__ (their API cannot be discovered): {missing}"


def test_every_public_name_has_a_fuzz_entry():
    api = public_api()
    missing = sorted(set(api) - set(SPECS) - set(EXEMPT))
    assert not missing, (
        f"public names with no fuzz strategy yet: {missing}; add an entry in tests/fuzz/specs_*.py "
        "(or, for a constant or a plain record, a reason in EXEMPT)"
    )
    stale = sorted((set(SPECS) | set(EXEMPT)) - set(api))
    assert not stale, f"fuzz entries for names that are not public (any more): {stale}"


def test_exemptions_are_not_functions():
    api = public_api()
    for name in EXEMPT:
        assert not inspect.isfunction(api.get(name)), f"{name} is a function: fuzz it"


@pytest.fixture(autouse=True)
def _quiet_and_repeatable():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_public_api(name):
    spec = SPECS[name]

    @settings(
        max_examples=spec.examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def fuzz(data):
        run(spec, data.draw)

    fuzz()
