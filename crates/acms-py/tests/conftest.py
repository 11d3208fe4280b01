"""Fixtures for the acms Python tests: run by scripts/test-python.sh against the installed wheel."""

import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(os.environ.get("ACMS_REPO_ROOT", Path(__file__).resolve().parents[3]))
SHOP = REPO_ROOT / "tests" / "data" / "shop"


def copy_shop(dest: Path) -> Path:
    """A fresh copy of the shop fixture (no index yet)."""
    shutil.copytree(SHOP, dest, ignore=shutil.ignore_patterns(".acms"))
    return dest


@pytest.fixture(scope="session")
def shared_shop(tmp_path_factory):
    """One indexed copy of the shop fixture, shared by the read-only tests."""
    import acms

    repo = copy_shop(tmp_path_factory.mktemp("shared") / "shop")
    return repo, acms.Workspace(repo)


@pytest.fixture
def shop(tmp_path):
    """A fresh, unindexed copy of the shop fixture for one test."""
    return copy_shop(tmp_path / "shop")
