"""The web viewer's static files, read as text: everything the page loads is in the package (no
CDN, no external font or script), every module import resolves, and no script builds markup
from strings (data reaches the DOM through text nodes only)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "src" / "threadline" / "server" / "static"
FILES = sorted(p for p in STATIC.rglob("*") if p.is_file())
SCRIPTS = [p for p in FILES if p.suffix == ".js"]
SVG_NS = "http://www.w3.org/2000/svg"


def test_the_viewer_ships_its_files() -> None:
    names = {p.relative_to(STATIC).as_posix() for p in FILES}
    assert {"index.html", "viewer.css", "js/app.js", "js/tree.js"} <= names


def test_index_loads_only_files_of_the_package() -> None:
    html = (STATIC / "index.html").read_text()
    references = re.findall(r'(?:src|href)="([^"#][^"]*)"', html)
    assert references, "index.html references nothing?"
    for reference in references:
        assert "://" not in reference and not reference.startswith("//"), reference
        assert (STATIC / reference).is_file(), f"index.html references missing {reference}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(STATIC).as_posix())
def test_no_external_resource(path: Path) -> None:
    text = path.read_text()
    urls = [u for u in re.findall(r"https?://[^\s\"'`)]+", text) if u != SVG_NS]
    assert urls == [], f"{path.name} reaches outside the package: {urls}"
    assert "@import" not in text and "@font-face" not in text


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_module_imports_resolve(path: Path) -> None:
    for target in re.findall(r'^import .* from "(\.[^"]+)";', path.read_text(), re.M):
        assert (path.parent / target).resolve().is_file(), f"{path.name} imports missing {target}"


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_no_markup_from_strings(path: Path) -> None:
    code = path.read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                 "new Function", "DOMParser", "createContextualFragment"):  # fmt: skip
        assert sink not in code, f"{path.name} uses {sink}"
