"""Truth rules of the contract's value objects (docs/design.md, Bindings and providers; Writes
and outcomes)."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, ValidationError

from goat_core.contract import (
    Binding,
    Capability,
    Health,
    Provider,
    ProviderContext,
    ProviderSpec,
    RecallItem,
    Receipt,
    ReceiptStatus,
    Scope,
    ScopeKind,
    Tone,
)
from goat_core.errors import (
    AuthError,
    CredentialError,
    NotFound,
    NotSupported,
    ProviderUnavailable,
    ScopeError,
)
from goat_core.host import GoatHome

# -- Receipt ---------------------------------------------------------------------------


def never_built(context: ProviderContext) -> Provider:
    raise AssertionError("this test declares a provider but never builds it")


def test_stored_receipt_needs_nothing_else() -> None:
    r = Receipt(status=ReceiptStatus.STORED, id="a.md", path="a.md", scope="global")
    assert r.to_json() == {
        "status": "stored",
        "operation_id": None,
        "reason": None,
        "id": "a.md",
        "path": "a.md",
        "scope": "global",
    }


@pytest.mark.parametrize("operation_id", [None, ""])
def test_queued_receipt_needs_an_operation_id(operation_id: str | None) -> None:
    with pytest.raises(ValidationError, match="a queued receipt needs an operation id"):
        Receipt(status=ReceiptStatus.QUEUED, operation_id=operation_id, scope="global")
    ok = Receipt(status=ReceiptStatus.QUEUED, operation_id="op-1", scope="pen:x")
    assert ok.to_json()["operation_id"] == "op-1"


@pytest.mark.parametrize("status", [ReceiptStatus.REJECTED, ReceiptStatus.FAILED])
@pytest.mark.parametrize("reason", [None, ""])
def test_rejected_and_failed_receipts_need_a_reason(
    status: ReceiptStatus, reason: str | None
) -> None:
    with pytest.raises(ValidationError, match=f"a {status.value} receipt needs a reason"):
        Receipt(status=status, reason=reason, scope="global")
    assert Receipt(status=status, reason="contains a secret", scope="global").reason


def test_unknown_receipt_is_allowed_without_id() -> None:
    assert Receipt(status=ReceiptStatus.UNKNOWN, scope="global").status is ReceiptStatus.UNKNOWN


def test_receipts_are_frozen() -> None:
    r = Receipt(status=ReceiptStatus.STORED, scope="global")
    with pytest.raises(ValidationError):
        r.status = ReceiptStatus.REJECTED  # type: ignore[misc]


# -- ProviderSpec ----------------------------------------------------------------------


class DemoSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    root: str


def _spec(*caps: Capability, name: str = "demo") -> ProviderSpec:
    return ProviderSpec(
        name=name,
        display_name="Demo",
        version="1.0",
        capabilities=frozenset(caps),
        settings_model=DemoSettings,
        factory=never_built,
    )


@pytest.mark.parametrize(
    "caps",
    [
        (),
        (Capability.PAGES,),
        (Capability.SCOPED_STORES, Capability.SHARED_BANK),
        (Capability.SCOPED_STORES, Capability.SHARED_BANK, Capability.PAGES),
    ],
)
def test_provider_spec_declares_exactly_one_store_kind(caps: tuple[Capability, ...]) -> None:
    with pytest.raises(ValidationError, match="exactly one of scoped_stores, shared_bank"):
        _spec(*caps)


def test_provider_spec_capabilities_are_declared() -> None:
    spec = _spec(Capability.SHARED_BANK, Capability.REFLECT)
    assert spec.supports("reflect") and spec.supports(Capability.SHARED_BANK)
    assert not spec.supports(Capability.PAGES)
    schema = _spec(Capability.SCOPED_STORES).settings_schema()
    assert schema["required"] == ["root"]
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize("name", ["", "Demo", "1x", "a b", "x" * 33])
def test_provider_names_are_checked(name: str) -> None:
    with pytest.raises(ValidationError, match="provider name"):
        _spec(Capability.SCOPED_STORES, name=name)


def test_provider_factory_must_be_callable() -> None:
    with pytest.raises(ValidationError, match="callable"):
        ProviderSpec(
            name="demo",
            display_name="Demo",
            version="1.0",
            capabilities=frozenset({Capability.SCOPED_STORES}),
            settings_model=BaseModel,
            factory=3,  # type: ignore[arg-type]
        )


# -- Scope -----------------------------------------------------------------------------

PEN_IDS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", fullmatch=True)


@given(PEN_IDS)
def test_scope_key_and_parse_round_trip(raw: str) -> None:
    scope = Scope.pen(raw)
    assert scope.key == f"pen:{raw.lower()}"
    assert Scope.parse(scope.key) == scope
    assert Scope.parse(f"pen:{raw}") == scope
    assert str(scope) == scope.key


def test_global_round_trip() -> None:
    g = Scope.global_()
    assert (g.key, g.is_global, g.kind) == ("global", True, ScopeKind.GLOBAL)
    assert Scope.parse("global") == g


@pytest.mark.parametrize("key", ["", "Global", "pen", "pen:", "pen:a/b", "project:x", " global"])
def test_scope_parse_rejects(key: str) -> None:
    with pytest.raises(ScopeError):
        Scope.parse(key)


def test_scope_invariants() -> None:
    with pytest.raises(ScopeError, match="the Global scope has no Pen id"):
        Scope(kind=ScopeKind.GLOBAL, pen_id="x")
    with pytest.raises(ScopeError, match="a Pen scope needs a Pen id"):
        Scope(kind=ScopeKind.PEN)
    with pytest.raises(ScopeError, match="not canonical"):
        Scope(kind=ScopeKind.PEN, pen_id="ABC")


# -- Binding ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("binding_id", "env_var"),
    [
        ("hindsight", "GOAT_API_KEY_HINDSIGHT"),
        ("my-bank", "GOAT_API_KEY_MY_BANK"),
        ("team.bank_2", "GOAT_API_KEY_TEAM_BANK_2"),
    ],
)
def test_binding_credential_env_var(binding_id: str, env_var: str) -> None:
    assert Binding(id=binding_id, provider="hindsight").credential_env_var == env_var


@pytest.mark.parametrize("binding_id", ["", "My-Bank", "a/b", "-x", "x" * 65])
def test_binding_id_rule(binding_id: str) -> None:
    with pytest.raises(ValidationError, match="binding id"):
        Binding(id=binding_id, provider="markdown")


def test_binding_forbids_unknown_keys() -> None:
    with pytest.raises(ValidationError, match="api_key"):
        Binding(id="b", provider="p", api_key="secret")  # type: ignore[call-arg]


# -- Health ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (AuthError("HTTP 401"), "auth"),
        (CredentialError("no key"), "auth"),
        (NotFound("collection `x` not found"), "not_found"),
        (ProviderUnavailable("old server", missing=["recall"]), "incompatible"),
        (ProviderUnavailable("connection refused"), "unreachable"),
        (RuntimeError("boom"), "unreachable"),
    ],
)
def test_health_from_error_names_a_generic_cause(error: BaseException, cause: str) -> None:
    health = Health.from_error(error)
    assert (health.ok, health.tone, health.cause) == (False, Tone.WARN, cause)
    assert Health.cause_of(error) == cause


def test_health_from_error_reason() -> None:
    assert Health.from_error(NotFound("no bank"), label="store `s`").reason == "store `s`: no bank"
    # the text of an unexpected error may hold anything: only its type is reported
    assert Health.from_error(RuntimeError("secret=1")).reason == "RuntimeError during check"


# -- Provider base -----------------------------------------------------------------------


class _Minimal(Provider):
    spec = _spec(Capability.SCOPED_STORES)


def _minimal() -> _Minimal:
    context = ProviderContext(
        scope=Scope.global_(),
        binding=Binding(id="default", provider="demo"),
        settings=DemoSettings(root="x"),
        home=GoatHome.at("/nonexistent-goat-home"),
    )
    return _Minimal(context)


def test_forget_is_optional_and_no_capability() -> None:
    with pytest.raises(NotSupported) as info:
        anyio.run(_minimal().forget, "a.md")
    assert str(info.value) == "provider 'demo' does not support forget"


def test_a_capability_operation_names_its_capability() -> None:
    with pytest.raises(NotSupported, match="capability 'reflect' not declared"):
        anyio.run(_minimal().reflect, "why")


def test_the_contract_imports_no_host_module() -> None:
    code = "import sys, goat_core.contract; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert not {m for m in out if m == "goat_core.host" or m.startswith("goat_core.host.")}


@pytest.mark.parametrize(
    ("given", "read_as"),
    [("bank_not_found", "not_found"), ("missing_tools", "incompatible"), ("auth", "auth")],
)
def test_first_release_cause_names_read_as_generic_ones(given: str, read_as: str) -> None:
    """A provider written against the first release's cause names keeps working."""
    assert Health.broken("gone", cause=given).cause == read_as
    assert Health(ok=False, tone=Tone.WARN, cause=given).cause == read_as  # type: ignore[arg-type]


def test_recall_item_json_carries_plain_snippet_and_spans() -> None:
    item = RecallItem(
        id="a.md", title="A", score=1.0, snippet="keep the log", snippet_spans=((9, 12),)
    )
    assert item.to_json()["snippet"] == "keep the log"
    assert item.to_json()["snippet_spans"] == [[9, 12]]
    assert RecallItem(id="b", title="B", score=1.0, snippet="x").to_json()["snippet_spans"] == []


@pytest.mark.parametrize("spans", [((9, 13),), ((4, 4),), ((5, 8), (4, 6)), ((-1, 2),)])
def test_recall_item_spans_must_fit_their_snippet(spans: tuple[tuple[int, int], ...]) -> None:
    with pytest.raises(ValidationError, match="do not fit a snippet of 12 characters"):
        RecallItem(id="a.md", title="A", score=1.0, snippet="keep the log", snippet_spans=spans)
