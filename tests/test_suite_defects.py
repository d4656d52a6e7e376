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

    stateful_shrink_seconds = 5  # the shortest sequence found in 5 s is short enough here
    stateful_max_examples = 12  # twice the default budget, and longer sequences: every
    stateful_step_count = 30  # planted kind is met (the reference is quick)

    @pytest.fixture
    def goat_faults(self):
        return reference_provider.ReferenceFaults()
{extra}
"""


def _setup(
    pytester: pytest.Pytester, name: str, spec: str, extra: str = "", settings: object = None
) -> None:
    settings = SETTINGS.get(name, settings)
    extra = EXTRA.get(name, "") + extra
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


def _spec(name: str) -> str:
    return f"DEFECT_SPECS[{name!r}]"


#: Settings a variant is bound with, and lines added to its test class.
BANK = {"server": "https://bank.example", "bank": "team"}
#: A bank's failing connections (the secrets-on-failure test), as its test class gives them.
BANK_FAILURES = """
    eventual_timeout = 5.0
    poll_interval = 0.05

    @pytest.fixture
    def goat_connection_failures(self, tmp_path, goat_secret):
        from goat_core.testing import closing_server, refused_url

        def factory(url):
            return spec_factory(
                reference_provider.{spec}, GoatHome.at(tmp_path / "failing"),
                settings={{"server": url, "bank": "team"}},
                get_credential=lambda _: goat_secret,
            )

        refusal = lambda got: b"-WRONGPASS you sent: " + got
        with closing_server("http", answer=refusal) as hostile, closing_server() as closed:
            yield {{
                "refused": factory(refused_url()),
                "wrong_credential": factory(hostile),
                "closed": factory(closed),
            }}
"""
SETTINGS: dict[str, object] = {"reference_alias": {"schema": "goat"}, "reference_quotesecret": BANK}
EXTRA = {
    "reference_hang": "    contract_deadline = 3\n",
    "reference_quotesecret": BANK_FAILURES.format(spec=_spec("reference_quotesecret")),
}

STATEFUL = "test_model_based_sequences"

#: (entry point, spec expression, the contract tests it must fail, a fragment of the message)
DEFECTS = [
    (
        "reference_leak",
        "LEAK_SPEC",
        {"test_scopes_are_isolated_both_ways"},
        "pen:pen-a lists pages written in global",
    ),
    ("reference_cap", "CAP_SPEC", {"test_page_lists_complete_or_paginated"}, "a silent cap"),
    # A drop over 1000 characters shows in the plain round trip and at the exact size.
    (
        "reference_drop",
        "DROP_SPEC",
        {"test_remember_then_recall_receipt_is_truthful", "test_max_input_chars_round_trip"},
        "must not be reported as stored",
    ),
    # Losing duplicates shows both sequentially and under concurrency.
    (
        "reference_dedup",
        "DEDUP_SPEC",
        {
            "test_same_text_remembered_twice_is_never_lost",
            "test_concurrent_identical_remembers_do_not_multiply",
        },
        "duplicate_policy='keep'",
    ),
    (
        "reference_retry",
        "RETRY_SPEC",
        {"test_concurrent_identical_remembers_do_not_multiply"},
        "none multiplied",
    ),
    (
        "reference_prefix",
        _spec("reference_prefix"),
        {"test_lookalike_pen_ids_are_isolated"},
        "look-alike Pen ids share a store",
    ),
    (
        "reference_limit",
        _spec("reference_limit"),
        {"test_recall_honours_limit_and_complete"},
        "limit is ignored",
    ),
    (
        "reference_complete",
        _spec("reference_complete"),
        {"test_recall_honours_limit_and_complete"},
        "complete must be False whenever more matched",
    ),
    (
        "reference_showcut",
        _spec("reference_showcut"),
        {"test_max_input_chars_round_trip"},
        "get_page returns 4000 characters",
    ),
    (
        "reference_bigdrop",
        _spec("reference_bigdrop"),
        {"test_max_input_chars_round_trip"},
        "truncated or dropped",
    ),
    # A cursor that skips a page breaks both walks; the message says it is the cursor.
    (
        "reference_skip",
        _spec("reference_skip"),
        {"test_page_lists_complete_or_paginated", "test_paginated_walk_under_writes"},
        "the cursor skips pages",
    ),
    # A list cut at 10 that says complete=True: caught by the 12-page and the 47-page lists.
    (
        "reference_cap10",
        _spec("reference_cap10"),
        {"test_page_list_complete_is_truthful", "test_page_lists_complete_or_paginated"},
        "says complete=True but lacks 2 of 12 pages",
    ),
    (
        "reference_offset",
        _spec("reference_offset"),
        {"test_paginated_walk_under_writes"},
        "not an offset",
    ),
    (
        "reference_feedback",
        _spec("reference_feedback"),
        {"test_feedback_is_tied_to_its_page"},
        "write.on was dropped",
    ),
    (
        "reference_forget",
        _spec("reference_forget"),
        {"test_forget_of_unknown_id_is_not_found"},
        "did not raise NotFound",
    ),
    (
        "reference_title",
        _spec("reference_title"),
        {"test_title_lookup_where_declared"},
        "title lookup must ignore case",
    ),
    (
        "reference_swallow",
        _spec("reference_swallow"),
        {
            f"test_write_under_fault_is_never_falsely_stored[{k}]"
            for k in ("write_before_send", "read_only", "disk_full")
        },
        "answered 'stored' for a write that did not land",
    ),
    (
        "reference_rawerror",
        _spec("reference_rawerror"),
        {
            f"test_write_under_fault_is_never_falsely_stored[{k}]"
            for k in ("read_only", "disk_full")
        },
        "raised an untyped OSError",
    ),
    # Caught only since the drop must cut the write's own request and a typed error is
    # checked against the store: before, any typed error under the drop passed.
    (
        "reference_dropraise",
        _spec("reference_dropraise"),
        {"test_write_under_fault_is_never_falsely_stored[drop_connection]"},
        "raised ProviderUnavailable, yet the write landed",
    ),
    (
        "reference_blocking",
        _spec("reference_blocking"),
        {"test_check_returns_health"},
        "[blocking] open('/dev/null') ran on the event loop in reference_provider",
    ),
    (
        "reference_busy",
        _spec("reference_busy"),
        {"test_check_returns_health"},
        "the event loop was blocked for",
    ),
    (
        "reference_socket",
        _spec("reference_socket"),
        {"test_check_returns_health"},
        "[egress] a connection to 127.0.0.1:9 was opened, but the provider declares no network",
    ),
    (  # a connection opened in C: only the kernel's socket table shows it
        "reference_csocket",
        _spec("reference_csocket"),
        {"test_check_returns_health"},
        "[egress] a TCP connection to 127.0.0.1:",
    ),
    # A stored receipt whose id opens another page (or none): settled by a guess.
    (
        "reference_fakeid",
        _spec("reference_fakeid"),
        {"test_remember_then_recall_receipt_is_truthful"},
        "a LIE: an ordinary write answered 'stored' with id 'n-000000000000'",
    ),
    # The password quoted in connection errors (a SQL provider written from the docs).
    (
        "reference_quotesecret",
        _spec("reference_quotesecret"),
        {
            f"test_credential_never_shown_on_failure[{k}]"
            for k in ("refused", "wrong_credential", "closed")
        },
        "a LEAK: under a",
    ),
    (
        "reference_env",
        _spec("reference_env"),
        {"test_check_returns_health"},
        "[environment] the environment variable 'REFERENCE_API_KEY' was read",
    ),
]


#: The kinds a provider written from the docs alone had while the suite passed (a SQL
#: provider), then kinds chosen from the rules of docs/design.md. Each is caught, and the
#: message names the harm (a LEAK, a LIE, a LOSS).
DEFECTS += [
    # show "x' OR '1'='1" pasted into the query text reaches every scope's pages.
    # Which harm shows first depends on the sequence: another scope's page (a LEAK), or a
    # title with a quote that the pasted query cannot find or parse (a LOSS).
    (
        "reference_sqltitle",
        _spec("reference_sqltitle"),
        {STATEFUL},
        ("a LEAK", "whatever remember accepts as a title", "never pasted into a query"),
    ),
    # show by id without the scope filter opens another scope's page.
    (
        "reference_idscope",
        _spec("reference_idscope"),
        {STATEFUL},
        "act only inside the provider's scope",
    ),
    # recall cut at 20 but answered complete: only more matches than the cap show it.
    (
        "reference_cap20",
        _spec("reference_cap20"),
        {STATEFUL},
        "a LIE (the answer says something untrue): 210 pages of pen:many-matches match",
    ),
    (
        "reference_reverse",
        _spec("reference_reverse"),
        {"test_ranking_puts_every_term_first"},
        "is the ranking reversed",
    ),
    # a cursor naming the last title only skips the pages sharing it at a page boundary.
    (
        "reference_titlecursor",
        _spec("reference_titlecursor"),
        {STATEFUL},
        "pages sharing a title at a page boundary",
    ),
    # a failed write "settled" by the scope's latest note: only a store holding notes shows it.
    (
        "reference_latest",
        _spec("reference_latest"),
        {STATEFUL},
        "never settled by the scope's latest write",
    ),
    # an await that never returns: the deadline names the test and the await.
    (
        "reference_hang",
        _spec("reference_hang"),
        {"test_check_returns_health"},
        "test_check_returns_health did not finish within its deadline of 3 s: it was awaiting",
    ),
    # an aliased settings field breaks every command after bind.
    (
        "reference_alias",
        _spec("reference_alias"),
        {"test_settings_round_trip_through_bind"},
        "saved settings are validated by field name",
    ),
    # Titles round-trip (design: Titles round-trip; Unicode titles are NFC).
    ("reference_rawtitle", _spec("reference_rawtitle"), {STATEFUL}, "(NFD: U+"),
    # forget removes exactly what its receipt lists, and nothing else.
    ("reference_forgettitle", _spec("reference_forgettitle"), {STATEFUL}, "a LOSS"),
    # Feedback about a page is tied to that page, in the chat's one scope.
    (
        "reference_feedbackscope",
        _spec("reference_feedbackscope"),
        {STATEFUL},
        "was written into the page",
    ),
    # A write without a title gets a new note; duplicates are never lost.
    (
        "reference_mergeuntitled",
        _spec("reference_mergeuntitled"),
        {
            STATEFUL,
            "test_same_text_remembered_twice_is_never_lost",
            "test_concurrent_identical_remembers_do_not_multiply",
        },
        "a LOSS",
    ),
]


@pytest.mark.parametrize(("name", "spec", "expected", "message"), DEFECTS)
def test_each_defect_fails_exactly_its_contract_test(
    pytester: pytest.Pytester,
    name: str,
    spec: str,
    expected: set[str],
    message: str | tuple[str, ...],
) -> None:
    _setup(pytester, name, spec)
    # The stateful test runs where it is the test expected to fail; the defects its
    # predecessors catch are held to those (it may catch them too, it need not).
    only = () if STATEFUL in expected else ("-k", f"not {STATEFUL}")
    rec = pytester.inline_run("-p", "no:cacheprovider", *only)
    failed = _failed(rec)
    calls = {f for f in failed if f.endswith("(call)")}
    shown = [str(r.longrepr) for r in rec.getfailures() if r.when == "call"]
    fragments = (message,) if isinstance(message, str) else message
    assert any(m in text for m in fragments for text in shown), [text[-600:] for text in shown]
    # The after-test isolation check reports a leak once per class, right after a passing
    # test, in that test's own call, naming it.
    extra = calls - {f"{test} (call)" for test in expected}
    if name in {"reference_leak", "reference_prefix"}:
        assert len(extra) == 1, extra
        report = next(
            r for r in rec.getfailures() if f"{r.nodeid.rsplit('::', 1)[-1]} (call)" in extra
        )
        assert "checked once per class" in str(report.longrepr)
        assert next(iter(extra)).split(" (")[0] in str(report.longrepr)  # names that test
    assert calls - extra == {f"{test} (call)" for test in expected}
    assert failed == calls, failed - calls


def test_every_new_contract_test_has_a_planted_defect() -> None:
    from goat_core.testing.conformance.binding import BindingTests
    from goat_core.testing.conformance.faulttests import FaultInjectionTests
    from goat_core.testing.conformance.secrets import SecretTests
    from goat_core.testing.conformance.stateful import StatefulTests
    from goat_core.testing.conformance.truth import TruthTests

    caught = {t.split("[")[0] for _, _, expected, _ in DEFECTS for t in expected}
    classes = (TruthTests, FaultInjectionTests, StatefulTests, BindingTests, SecretTests)
    new = {n for cls in classes for n in vars(cls) if n[:5] == "test_"}
    # The read-under-fault test is held by the in-tree providers (tests/, plugins/).
    assert new - caught <= {"test_read_under_fault_is_never_a_silent_empty"}, new - caught


def test_sound_reference_fails_nothing(pytester: pytest.Pytester) -> None:
    _setup(pytester, "reference", "SPEC")
    rec = pytester.inline_run("-p", "no:cacheprovider")
    assert _failed(rec) == set()
    passed, skipped, _ = rec.listoutcomes()
    assert (len(passed), len(skipped)) == (38, 8)


def test_isolation_is_rechecked_after_each_passing_test(pytester: pytest.Pytester) -> None:
    extra = """
    async def test_opens_two_scopes(self, goat_stores):
        from goat_core.contract import Scope
        await goat_stores.open(Scope.global_())
        await goat_stores.open(Scope.pen("elsewhere"))
"""
    _setup(pytester, "reference_leak", "LEAK_SPEC", extra)
    rec = pytester.inline_run("-p", "no:cacheprovider", "-k", "test_opens_two_scopes")
    # Not a contract test: its isolation check runs at teardown.
    assert _failed(rec) == {"test_opens_two_scopes (teardown)"}
    report = rec.getfailures()[0]
    assert "are not isolated" in str(report.longrepr)


def test_capability_skips_name_provider_and_capability(pytester: pytest.Pytester) -> None:
    bank = {"server": "https://b.example", "bank": "t"}
    extra = BANK_FAILURES.format(spec="BANK_SPEC")
    _setup(pytester, "reference_bank", "BANK_SPEC", extra, settings=bank)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=37, skipped=9)
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
    rec = pytester.inline_run("-p", "no:cacheprovider", "-k", f"not {STATEFUL}")
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
