"""The argument_specs drift check fails on drift and passes on the project's roles."""
from __future__ import annotations

from pathlib import Path

from check_argspecs import check_role

ROOT = Path(__file__).resolve().parents[1]


def make_role(tmp_path: Path, defaults: str, specs: str) -> Path:
    role = tmp_path / "r"
    (role / "defaults").mkdir(parents=True)
    (role / "meta").mkdir()
    (role / "tasks").mkdir()
    (role / "defaults" / "main.yml").write_text(defaults)
    (role / "meta" / "argument_specs.yml").write_text(specs)
    return role


SPEC = ("argument_specs:\n  main: &spec\n    options:\n      r_a: {type: int, default: 1, description: a}\n"
        "  preflight: *spec\n")


def test_project_roles_have_no_drift():
    for role in sorted((ROOT / "roles").iterdir()):
        assert check_role(role) == [], role.name


def test_missing_option_is_reported(tmp_path):
    errors = check_role(make_role(tmp_path, "r_a: 1\nr_b: 2\n", SPEC))
    assert errors == ["r: r_b is in defaults/main.yml but not in argument_specs"]


def test_differing_default_is_reported(tmp_path):
    errors = check_role(make_role(tmp_path, "r_a: 2\n", SPEC))
    assert errors == ["r: r_a defaults differ: argument_specs 1, defaults 2"]


def test_preflight_entry_point_must_share_the_spec(tmp_path):
    alone = SPEC.replace("  preflight: *spec\n", "")
    errors = check_role(make_role(tmp_path, "r_a: 1\n", alone))
    assert errors == ["r: the preflight entry point must share the main spec (preflight: *spec)"]


def test_shared_entry_point_must_specify_options_as_main_does(tmp_path):
    shared = SPEC + "  shared:\n    short_description: s\n    options:\n      r_a: {type: int, default: 2, description: a}\n"
    errors = check_role(make_role(tmp_path, "r_a: 1\n", shared))
    assert errors == ["r: entry point shared option r_a differs from the main spec's"]
    same = SPEC + "  shared:\n    short_description: s\n    options:\n      r_a: {type: int, default: 1, description: a}\n"
    assert check_role(make_role(tmp_path / "ok", "r_a: 1\n", same)) == []
