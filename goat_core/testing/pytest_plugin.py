"""pytest plugin of goat-core (registered through the ``pytest11`` entry point).

Cheap to import: it registers the ``goat_requires`` and ``goat_fault`` markers, remembers
each test's call outcome (the conformance suite checks store isolation only after a passing
test), runs each contract test's body under the runtime guards
(:mod:`goat_core.testing.conformance.guards`), ends a run with one summary line per
capability for each provider, and refuses a run in which a
:class:`~goat_core.testing.ProviderConformanceTests` subclass overrides or removes a contract
test without ``@pytest.mark.xfail(strict=True)``; only classes carrying
``goat_contract_violations`` (its subclasses) are looked at.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import pytest

#: The call-phase report of a test, stored on its item.
CALL_REPORT = pytest.StashKey[pytest.TestReport]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "goat_requires(*capabilities): skip unless the provider under test declares them",
    )
    config.addinivalue_line(
        "markers", "goat_fault: a fault-injection contract test (needs the goat_faults fixture)"
    )
    config.stash[SUMMARY] = {}


@dataclass
class _Line:
    """What one capability of one provider proved, and what was skipped and why."""

    passed: int = 0
    failed: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)


#: ``{provider class nodeid: {capability: _Line}}`` for the end-of-run summary.
SUMMARY = pytest.StashKey[dict[str, dict[str, _Line]]]()


def _is_contract_test(item: pytest.Item) -> bool:
    cls = getattr(item, "cls", None)
    fn = getattr(item, "function", None)
    return (
        (cls is not None and getattr(cls, "goat_contract_violations", None) is not None)
        or getattr(cls, "_goat_fault_suite", False)
    ) and getattr(fn, "__module__", "").startswith("goat_core.testing.conformance")


def _capability(item: pytest.Item) -> str:
    if item.get_closest_marker("goat_fault") is not None:
        return "faults"
    needs = [str(c) for m in item.iter_markers("goat_requires") for c in m.args]
    return "+".join(sorted(needs)) if needs else "core"


def _record(item: pytest.Item, report: pytest.TestReport) -> None:
    if not _is_contract_test(item):
        return
    done = report.when == "call" or (report.when == "setup" and not report.passed)
    done = done or (report.when == "teardown" and report.failed)
    if not done:
        return
    summary = item.config.stash.get(SUMMARY, None)
    if summary is None:
        return
    owner = item.nodeid.rsplit("::", 1)[0]
    line = summary.setdefault(owner, {}).setdefault(_capability(item), _Line())
    name = item.name
    if report.skipped:
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else "skipped"
        reason = reason.removeprefix("Skipped: ")
        line.skipped.setdefault(reason, []).append(name)
    elif report.failed:
        line.failed.append(f"{name} ({report.when})")
    elif report.when == "call":
        line.passed += 1


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line per capability of each provider class: proven, failed, skipped and why."""
    summary = config.stash.get(SUMMARY, None)
    if not summary:
        return
    terminalreporter.section("goat conformance summary")
    for owner, lines in summary.items():
        for cap, line in sorted(lines.items()):
            parts = []
            if line.passed:
                parts.append(f"{line.passed} proven")
            if line.failed:
                parts.append(f"FAILED {', '.join(line.failed)}")
            for reason, names in line.skipped.items():
                parts.append(f"{len(names)} skipped: {reason}")
            terminalreporter.write_line(f"{owner} {cap}: " + "; ".join(parts))
    from goat_core.testing.conformance.scopes import stateful_scopes

    _, refused = stateful_scopes()
    for why in refused:  # what the stateful test could not open, and why
        terminalreporter.write_line(f"test_model_based_sequences skipped the Pen id {why}")


#: The default deadline of one contract test, in seconds (``contract_deadline`` on the test
#: class or ``--goat-deadline`` change it).
DEFAULT_DEADLINE_S = 30.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--goat-deadline",
        type=float,
        default=None,
        metavar="SECONDS",
        help="the deadline of each goat conformance test (default: the class's "
        f"contract_deadline, {DEFAULT_DEADLINE_S:g} s; 0 turns it off)",
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, Any, Any]:
    """Run a contract test's body under its deadline and the runtime guards (the spec says
    what it may do), then re-check store isolation, all within the test's own call."""
    original = pyfuncitem.obj
    if not _is_contract_test(pyfuncitem) or not inspect.iscoroutinefunction(original):
        return (yield)
    spec = pyfuncitem.funcargs.get("goat_spec")
    body = _isolated(original, pyfuncitem.name)
    if spec is not None and _guards_on(pyfuncitem):
        body = _guarded(body, spec)
    seconds = deadline_of(pyfuncitem, spec)
    if seconds:
        body = _deadline(body, pyfuncitem.name, seconds)
    pyfuncitem.obj = body
    try:
        return (yield)
    finally:
        pyfuncitem.obj = original


def _guards_on(item: pytest.Item) -> bool:
    return not getattr(getattr(item, "cls", None), "goat_runtime_guards_off", False)


def deadline_of(item: pytest.Item, spec: Any = None) -> float:
    """The deadline of a contract test, in seconds (0: none).

    ``--goat-deadline`` wins; else the test's own class attribute (the stateful test's
    ``stateful_deadline``), else ``contract_deadline`` (default :data:`DEFAULT_DEADLINE_S`).
    An eventual provider's tests get at least twice ``eventual_timeout`` plus 10 s, so a
    bounded wait fails with its own message first.
    """
    option = item.config.getoption("goat_deadline", None)
    if option is not None:
        return max(float(option), 0.0)
    cls = getattr(item, "cls", None)
    fn = getattr(item, "function", None)
    attr = getattr(fn, "goat_deadline_attr", None) or "contract_deadline"
    seconds = float(getattr(cls, attr, None) or getattr(cls, "contract_deadline", 0) or 0)
    if not seconds:
        seconds = DEFAULT_DEADLINE_S
    if spec is not None and str(getattr(spec, "consistency", "")) == "eventual":
        seconds = max(seconds, 2 * float(getattr(cls, "eventual_timeout", 30.0)) + 10)
    return seconds


def _isolated(test: Any, name: str) -> Any:
    """``test``, then the after-test isolation check of its stores (a leak fails ``name``)."""

    @functools.wraps(test)
    async def isolated(*args: Any, **kwargs: Any) -> None:
        await test(*args, **kwargs)
        stores = kwargs.get("goat_stores")
        if stores is not None and hasattr(stores, "verify_isolation"):
            await stores.verify_isolation(name)

    return isolated


def _deadline(test: Any, name: str, seconds: float) -> Any:
    """``test`` cancelled after ``seconds``, failing with its name and what it awaited."""

    @functools.wraps(test)
    async def bounded(*args: Any, **kwargs: Any) -> None:
        import asyncio

        import anyio

        from goat_core.testing.conformance.scopes import ACTIVITY

        fired: list[str] = []
        with anyio.CancelScope() as scope:
            loop = asyncio.get_running_loop()
            task = asyncio.current_task()

            def expire() -> None:
                fired.append(awaiting(task) if task is not None else "?")
                if ACTIVITY.get("now"):
                    fired.append(f"the test was running {ACTIVITY['now']}")
                scope.cancel()

            handle = loop.call_later(seconds, expire)
            try:
                await test(*args, **kwargs)
            finally:
                handle.cancel()
        if fired:
            ACTIVITY["now"] = None
            pytest.fail(
                f"{name} did not finish within its deadline of {seconds:g} s: it was awaiting "
                f"{'; '.join(fired)}. An await that never returns hangs the user's command "
                "(a connection without a timeout, a lock never released, an event never "
                "set): give every network and lock wait a timeout. Raise the deadline with "
                "contract_deadline on the test class or --goat-deadline SECONDS",
                pytrace=False,
            )

    return bounded


def awaiting(task: Any) -> str:
    """The await chain of ``task`` (outermost first), the frames of this plugin, anyio and
    asyncio left out: ``test_x (suite.py:12) -> MyProvider.recall (p.py:40) -> Future``."""
    import os

    steps: list[str] = []
    obj: Any = task.get_coro()
    last: Any = None
    for _ in range(200):
        if obj is None:
            break
        frame = getattr(obj, "cr_frame", None) or getattr(obj, "gi_frame", None)
        if frame is None:
            frame = getattr(obj, "ag_frame", None)
        if frame is not None:
            module = frame.f_globals.get("__name__", "")
            if module != __name__ and not module.startswith(("anyio", "asyncio")):
                code = frame.f_code
                where = f"{os.path.basename(code.co_filename)}:{frame.f_lineno}"
                steps.append(f"{getattr(code, 'co_qualname', code.co_name)} ({where})")
        last = obj
        obj = getattr(obj, "cr_await", None) or getattr(obj, "gi_yieldfrom", None)
    end = getattr(task, "_fut_waiter", None) or last
    if end is not None and not hasattr(end, "cr_frame"):
        steps.append(f"a {type(end).__name__} nobody completed")
    return " -> ".join(steps) or "nothing the suite can name"


def _guarded(test: Any, spec: Any) -> Any:
    from goat_core.testing.conformance.guards import Guard, record_lag

    @functools.wraps(test)
    async def guarded(*args: Any, **kwargs: Any) -> None:
        guard = Guard(provider=spec.name, network=spec.network)
        guard.start()
        try:
            await test(*args, **kwargs)
        finally:
            guard.check_lag()
            guard.stop()
            record_lag(test.__name__, guard.max_lag)
        failure = guard.failure()
        if failure:
            pytest.fail(failure, pytrace=False)

    return guarded


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[CALL_REPORT] = report
    _record(item, report)
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
