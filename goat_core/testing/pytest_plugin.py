"""pytest plugin of goat-core (registered through the ``pytest11`` entry point).

Cheap to import: it registers the ``goat_requires`` marker, remembers each test's call
outcome (the conformance suite checks store isolation only after a passing test), and
refuses a run in which a :class:`~goat_core.testing.ProviderConformanceTests` subclass
overrides or removes a contract test without ``@pytest.mark.xfail(strict=True)``. The
suite; only classes carrying ``goat_contract_violations`` (its subclasses) are looked at.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

#: The call-phase report of a test, stored on its item.
CALL_REPORT = pytest.StashKey[pytest.TestReport]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "goat_requires(*capabilities): skip unless the provider under test declares them",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[CALL_REPORT] = report
    return report


def call_passed(item: pytest.Item) -> bool:
    """Whether ``item``'s call phase ran and passed (``False`` before it ran)."""
    report = item.stash.get(CALL_REPORT, None)
    return report is not None and report.passed


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Fail the run when a suite subclass overrides or deletes a contract test unmarked.

    Rule (as langchain-tests' ``test_no_overrides_DO_NOT_OVERRIDE``): every ``test_*`` of
    :class:`ProviderConformanceTests` must reach the subclass unchanged, or be replaced by a
    function marked ``@pytest.mark.xfail(reason=..., strict=True)``.
    """
    seen: set[type] = set()
    problems: list[str] = []
    for item in items:
        cls = getattr(item, "cls", None)
        check = getattr(cls, "goat_contract_violations", None)
        if cls is None or cls in seen or check is None:
            continue
        seen.add(cls)
        problems.extend(check())
    if problems:
        raise pytest.UsageError(
            "goat conformance: contract tests may only be overridden with "
            "@pytest.mark.xfail(reason=..., strict=True):\n  " + "\n  ".join(problems)
        )
