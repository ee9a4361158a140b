import pathlib
import re

import pytest
import sett

# Skip marks for make test (pytest's summary line is not read by it): every
# skipped test, or module skipped at collection, leaves
# target/tmp/skipped/py-TEST-WHY under the repository root, which make test's
# closing line counts. The wheel-check run uses these tests from the tree too.
MARKS = pathlib.Path(__file__).resolve().parents[2] / "target" / "tmp" / "skipped"


def _slug(text: str, words: int = 5) -> str:
    return "_".join(re.findall(r"[A-Za-z0-9]+", text)[:words]).lower() or "no_reason"


def _mark(nodeid: str, longrepr: object) -> None:
    # A skip's longrepr is (path, line, "Skipped: reason").
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    if reason.startswith("Skipped: "):
        reason = reason[len("Skipped: ") :]
    test = re.sub(r"[^A-Za-z0-9_]+", "_", nodeid.rsplit("/", 1)[-1]).strip("_")
    name = f"py-{test}-{_slug(reason)}"
    MARKS.mkdir(parents=True, exist_ok=True)
    (MARKS / name).write_text(f"{nodeid}: {reason}\n")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _mark(report.nodeid, report.longrepr)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped:
        _mark(report.nodeid, report.longrepr)


@pytest.fixture
def db_path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "db"


@pytest.fixture
def db(db_path: pathlib.Path):
    d = sett.open(db_path, value_threshold=64, memtable_size=64 << 10)
    yield d
    d.close()
