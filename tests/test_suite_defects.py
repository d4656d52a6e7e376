"""The conformance suite catches seeded defects: each variant fails exactly the right test.

Each run is an inner pytest session (pytester) over a one-class test file that subclasses
the suite for one defect variant of the reference provider.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import reference_provider  # noqa: E402

pytest_plugins = ["pytester"]

SUBCLASS = """
import pytest
import reference_provider
from goat_core.host import GoatHome
from goat_core.testing import ProviderConformanceTests
from goat_core.testing.conformance import spec_factory


class TestVariant(ProviderConformanceTests):
    entry_point_name = provider_name = {name!r}

    @pytest.fixture
    def goat_provider_factory(self, tmp_path):
        return spec_factory(
            reference_provider.{spec}, GoatHome.at(tmp_path / "home"), settings={settings!r}
        )
{extra}
"""


def _setup(
    pytester: pytest.Pytester, name: str, spec: str, extra: str = "", settings: object = None
) -> None:
    site = pytester.path / "site"
    reference_provider.install_entry_points(site)
    pytester.syspathinsert(site)
    pytester.syspathinsert(HERE)
    pytester.makepyfile(
        test_variant=SUBCLASS.format(name=name, spec=spec, extra=extra, settings=settings)
    )


def _failed(rec: pytest.HookRecorder) -> set[str]:
    _, _, failed = rec.listoutcomes()
    return {f"{r.nodeid.rsplit('::', 1)[-1]} ({r.when})" for r in failed}


@pytest.mark.parametrize(
    ("name", "spec", "expected"),
    [
        ("reference_leak", "LEAK_SPEC", {"test_scopes_are_isolated_both_ways"}),
        ("reference_cap", "CAP_SPEC", {"test_page_lists_complete_or_paginated"}),
        ("reference_drop", "DROP_SPEC", {"test_remember_then_recall_receipt_is_truthful"}),
        # Losing duplicates shows both sequentially and under concurrency.
        (
            "reference_dedup",
            "DEDUP_SPEC",
            {
                "test_same_text_remembered_twice_is_never_lost",
                "test_concurrent_identical_remembers_do_not_multiply",
            },
        ),
        ("reference_retry", "RETRY_SPEC", {"test_concurrent_identical_remembers_do_not_multiply"}),
    ],
)
def test_each_defect_fails_exactly_its_contract_test(
    pytester: pytest.Pytester, name: str, spec: str, expected: set[str]
) -> None:
    _setup(pytester, name, spec)
    rec = pytester.inline_run("-p", "no:cacheprovider")
    passed, _, _ = rec.listoutcomes()
    assert _failed(rec) == {f"{test} (call)" for test in expected}
    assert len(passed) == 17 - len(expected)


def test_sound_reference_fails_nothing(pytester: pytest.Pytester) -> None:
    _setup(pytester, "reference", "SPEC")
    rec = pytester.inline_run("-p", "no:cacheprovider")
    assert _failed(rec) == set()
    rec.assertoutcome(passed=17, skipped=5)


def test_isolation_is_rechecked_after_each_passing_test(pytester: pytest.Pytester) -> None:
    extra = """
    async def test_opens_two_scopes(self, goat_stores):
        from goat_core.contract import Scope
        await goat_stores.open(Scope.global_())
        await goat_stores.open(Scope.pen("elsewhere"))
"""
    _setup(pytester, "reference_leak", "LEAK_SPEC", extra)
    rec = pytester.inline_run("-p", "no:cacheprovider", "-k", "test_opens_two_scopes")
    assert _failed(rec) == {"test_opens_two_scopes (teardown)"}
    report = rec.getfailures()[0]
    assert "are not isolated" in str(report.longrepr)


def test_capability_skips_name_provider_and_capability(pytester: pytest.Pytester) -> None:
    bank = {"server": "https://b.example", "bank": "t"}
    _setup(pytester, "reference_bank", "BANK_SPEC", settings=bank)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=16, skipped=6)
    result.stdout.fnmatch_lines(
        ["*provider 'reference_bank' does not declare capability 'scoped_stores'*"]
    )


def test_override_without_strict_xfail_fails_the_run(pytester: pytest.Pytester) -> None:
    extra = """
    async def test_page_lists_complete_or_paginated(self, goat_stores):
        pass
"""
    _setup(pytester, "reference_cap", "CAP_SPEC", extra)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*TestVariant.test_page_lists_complete_or_paginated overrides a contract test "
            "without xfail(strict=True)*"
        ]
    )


def test_removed_contract_test_fails_the_run(pytester: pytest.Pytester) -> None:
    _setup(pytester, "reference", "SPEC", "\n    test_unicode_round_trips = None\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_unicode_round_trips removes a contract test*"])


def test_override_with_strict_xfail_is_accepted(pytester: pytest.Pytester) -> None:
    extra = """
    @pytest.mark.xfail(reason="known cap, tracked upstream", strict=True)
    async def test_page_lists_complete_or_paginated(self, goat_stores):
        await super().test_page_lists_complete_or_paginated(goat_stores)
"""
    _setup(pytester, "reference_cap", "CAP_SPEC", extra)
    rec = pytester.inline_run("-p", "no:cacheprovider")
    assert _failed(rec) == set()
    assert len(rec.getreports("pytest_runtest_logreport")) > 0
    xfailed = [r for r in rec.getreports("pytest_runtest_logreport") if hasattr(r, "wasxfail")]
    assert [r.nodeid.rsplit("::", 1)[-1] for r in xfailed] == [
        "test_page_lists_complete_or_paginated"
    ]


def test_missing_entry_point_fails_the_smoke_test(pytester: pytest.Pytester) -> None:
    pytester.syspathinsert(HERE)
    pytester.makepyfile(
        test_variant=SUBCLASS.format(name="reference", spec="SPEC", extra="", settings=None)
    )
    rec = pytester.inline_run("-p", "no:cacheprovider", "-k", "discoverable")
    assert _failed(rec) == {"test_entry_point_is_discoverable (setup)"}
    assert "cannot load provider 'reference'" in str(rec.getfailures()[0].longrepr)
