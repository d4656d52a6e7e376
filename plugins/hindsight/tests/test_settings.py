"""Settings rules, each with exact accepted and rejected inputs."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from goat_core.errors import ConfigError
from goat_hindsight.plugin import egress_urls
from goat_hindsight.settings import (
    HindsightSettings,
    is_loopback_host,
    parse_settings,
    validate_bank_id,
    validate_base_url,
)

# -- bank id ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bank", ["a", "team", "team-1", "my_bank", "0", "a" * 64, "a-_9"])
def test_bank_id_accepted(bank: str) -> None:
    assert validate_bank_id(bank) == bank


@pytest.mark.parametrize(
    ("bank", "rule"),
    [
        ("", "it is empty"),
        ("a" * 65, "65 characters long"),
        ("Team", "'T'"),
        ("team bank", "' '"),
        ("team/x", "'/'"),
        ("team:42", "':'"),
        ("team.x", "'.'"),
        ("../x", "'.', '/'"),
        ("caf\u00e9", "'\u00e9'"),
        ("team%2f", "'%'"),
        ("team\n", "'\\n'"),
    ],
)
def test_bank_id_rejected(bank: str, rule: str) -> None:
    with pytest.raises(ValueError, match="invalid bank id") as info:
        validate_bank_id(bank)
    assert rule in str(info.value)
    assert "1-64 lowercase ASCII letters, digits, '-' or '_'" in str(info.value)


def test_bank_id_must_be_a_string() -> None:
    with pytest.raises(ValueError, match="must be a string"):
        validate_bank_id(42)


@given(st.text(alphabet=string.ascii_lowercase + string.digits + "-_", min_size=1, max_size=64))
def test_bank_id_property_accepts_the_alphabet(bank: str) -> None:
    assert validate_bank_id(bank) == bank


@given(st.text(max_size=80))
def test_bank_id_property_accepts_exactly_the_pattern(bank: str) -> None:
    ok = re.fullmatch(r"[a-z0-9_-]{1,64}", bank) is not None
    try:
        validate_bank_id(bank)
    except ValueError:
        assert not ok
    else:
        assert ok


# -- base URL --------------------------------------------------------------------------------

ACCEPTED = [
    ("https://hindsight.example", "https://hindsight.example"),
    ("https://hindsight.example/", "https://hindsight.example"),
    ("HTTPS://Hindsight.Example:8443", "https://hindsight.example:8443"),
    ("https://api.hindsight.vectorize.io", "https://api.hindsight.vectorize.io"),
    ("http://localhost:8888", "http://localhost:8888"),
    ("http://LOCALHOST:8888/", "http://localhost:8888"),
    ("http://127.0.0.1:8888", "http://127.0.0.1:8888"),
    ("http://127.8.9.10", "http://127.8.9.10"),
    ("http://[::1]:8888", "http://[::1]:8888"),
    ("https://10.0.0.5:8888", "https://10.0.0.5:8888"),
    ("https://[2001:db8::1]", "https://[2001:db8::1]"),
    ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
]


@pytest.mark.parametrize(("raw", "canonical"), ACCEPTED)
def test_base_url_accepted(raw: str, canonical: str) -> None:
    assert validate_base_url(raw) == canonical


REJECTED = [
    ("", "it is empty"),
    ("hindsight.example", "scheme must be http or https"),
    ("ftp://hindsight.example", "scheme must be http or https"),
    ("file:///etc/passwd", "scheme must be http or https"),
    ("https://user:pw@hindsight.example", "user info"),
    ("https://user@hindsight.example", "user info"),
    ("https://hindsight.example/mcp", "a path ('/mcp') is not allowed"),
    ("https://hindsight.example/mcp/team/", "a path"),
    ("https://hindsight.example//", "a path"),
    ("https://hindsight.example?x=1", "a query"),
    ("https://hindsight.example/?", "a query"),
    ("https://hindsight.example#frag", "a fragment"),
    ("https://hindsight.example/#", "a fragment"),
    (" https://hindsight.example", "whitespace"),
    ("https://hindsight.example\n", "whitespace"),
    ("https://hind sight.example", "whitespace"),
    ("https://hindsight.example\\@evil", "backslash"),
    ("https://", "no host"),
    ("https://:443", "no host"),
    ("https://hindsight.example:99999", "port"),
    ("https://hindsight.example:abc", "port"),
    ("https://hindsight.example:", "port is empty"),
    ("https://hindsight.example:0", "port 0"),
    ("https://b\u00fccher.example", "must be ASCII"),
    ("https://under_score.example", "not a valid host name"),
    ("https://-bad.example", "not a valid host name"),
    ("http://hindsight.example", "must use https"),
    ("http://10.0.0.5:8888", "must use https"),
    ("http://localhost.example.com", "must use https"),
    ("http://localhost.", "not a valid host name"),
    ("http://127.0.0.1.nip.io", "must use https"),
    ("http://my-localhost", "must use https"),
    ("http://localhost-proxy.example", "must use https"),
    ("http://127.1", "must use https"),
    ("http://0.0.0.0:8888", "must use https"),
    ("http://[::ffff:127.0.0.1]", "must use https"),
    ("http://[::2]", "must use https"),
    ("http://128.0.0.1", "must use https"),
]


@pytest.mark.parametrize(("raw", "rule"), REJECTED)
def test_base_url_rejected(raw: str, rule: str) -> None:
    with pytest.raises(ValueError) as info:
        validate_base_url(raw)
    assert rule in str(info.value)


def test_user_info_is_not_echoed() -> None:
    with pytest.raises(ValueError) as info:
        validate_base_url("https://alice:s3cr3t-pw@hindsight.example")
    assert "s3cr3t-pw" not in str(info.value)
    assert "alice" not in str(info.value)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.255.255.254", True),
        ("::1", True),
        ("localhost.example.com", False),
        ("127.0.0.1.nip.io", False),
        ("notlocalhost", False),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


@given(st.text(max_size=40))
def test_base_url_never_accepts_a_path_query_or_fragment(tail: str) -> None:
    raw = "https://hindsight.example/" + tail
    try:
        canonical = validate_base_url(raw)
    except ValueError:
        return
    assert canonical == "https://hindsight.example"  # only the lone trailing slash passes


@given(st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9]{0,10}){0,2}", fullmatch=True))
def test_plain_http_only_on_loopback(host: str) -> None:
    try:
        validate_base_url(f"http://{host}")
    except ValueError as exc:
        assert host != "localhost"
        assert "must use https" in str(exc) or "host name" in str(exc)
    else:
        assert host == "localhost"


# -- the model -------------------------------------------------------------------------------


def test_settings_model_is_exactly_server_and_bank() -> None:
    s = HindsightSettings(base_url="https://h.example/", bank_id="team")
    assert s.model_dump() == {"base_url": "https://h.example", "bank_id": "team"}
    assert s.mcp_url == "https://h.example/mcp/team/"
    assert set(HindsightSettings.model_json_schema()["required"]) == {"base_url", "bank_id"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "base_url is required (no default server or bank)"),
        ({"base_url": "https://h.example"}, "bank_id is required"),
        ({"bank_id": "team"}, "base_url is required"),
        (
            {"base_url": "https://h.example", "bank_id": "team", "api_key": "sk-1"},
            "unknown setting 'api_key'",
        ),
        ({"base_url": "http://h.example", "bank_id": "team"}, "must use https"),
        ({"base_url": "https://h.example", "bank_id": "Team"}, "invalid bank id 'Team'"),
    ],
)
def test_parse_settings_typed_errors(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings(raw)
    assert message in str(info.value)
    assert "sk-1" not in str(info.value)


def test_pydantic_validation_still_works_for_forms() -> None:
    with pytest.raises(ValidationError):
        HindsightSettings.model_validate({"base_url": "https://h.example/x", "bank_id": "t"})


def test_egress_url_is_the_bank_endpoint() -> None:
    assert egress_urls({"base_url": "https://h.example/", "bank_id": "team"}) == [
        "https://h.example/mcp/team/"
    ]
    assert egress_urls(HindsightSettings(base_url="http://127.0.0.1:9", bank_id="b")) == [
        "http://127.0.0.1:9/mcp/b/"
    ]
    with pytest.raises(ConfigError):
        egress_urls({"base_url": "https://h.example/x", "bank_id": "team"})


@pytest.mark.parametrize(
    "url",
    [
        "ftp://u:sk-SECRET123@h.example",
        "https://u:sk-SEC#RET123@h.example",
        "https://u:sk-SECRET 123@h.example",
        "https://u:sk/SECRET123@h.example",
        "https://u:sk-SECRET123@h.example/path?q=1",
        "u:sk-SECRET123@h.example",
    ],
)
def test_a_password_in_a_base_url_never_reaches_the_message(url: str) -> None:
    """Whatever rule the URL breaks first, the message never echoes its user info."""
    with pytest.raises(ValueError) as info:
        validate_base_url(url)
    assert "SEC" not in str(info.value) and "***@h.example" in str(info.value)
