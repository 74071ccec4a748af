"""Every Python-facing item says what it is: the package's public names and
the public methods and properties of its classes have docstrings."""

from __future__ import annotations

import inspect

import agentmem


def test_every_public_item_has_a_docstring() -> None:
    missing = []
    assert agentmem.__doc__
    for name in agentmem.__all__:
        item = getattr(agentmem, name)
        if inspect.isclass(item):
            if not (item.__doc__ or "").strip():
                missing.append(name)
            for member, value in vars(item).items():
                if member.startswith("_"):
                    continue
                function = value.fget if isinstance(value, property) else value
                if callable(function) and not (getattr(function, "__doc__", None) or "").strip():
                    missing.append(f"{name}.{member}")
    assert missing == []


def test_the_stubs_and_marker_ship_with_the_package() -> None:
    from importlib import resources

    package = resources.files("agentmem")
    assert package.joinpath("py.typed").is_file()
    stubs = package.joinpath("_native.pyi").read_text()
    for cls in ("NativeStore", "NativeSession", "StaleVersion", "SessionLocked", "UnknownModel", "InvalidId"):
        assert f"class {cls}" in stubs
