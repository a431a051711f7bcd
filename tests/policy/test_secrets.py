"""The secret detector (`avatar.policy.secrets`): every shape masked with its name kept,
ordinary text left alone, the environment's key values found, and linear time whatever the
input (the PEM pattern it replaced took 11.7 s on 232 KB of BEGIN lines here, and 60 s where
the issue was filed)."""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avatar.policy.secrets import (
    MASK,
    SecretDetector,
    is_secret_key,
    is_secret_name,
    mask_secrets,
)
from tests.support.secret_shapes import ALL_TEXT, ENV_NAME, ENV_VALUE, SHAPES, Shape, leaks

DETECTOR = SecretDetector({ENV_NAME: ENV_VALUE})


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_each_shape_is_masked_and_its_label_kept(shape: Shape) -> None:
    masked = DETECTOR.mask(shape.line)
    assert leaks(masked) == []
    assert masked.startswith(shape.label + " ") and MASK in masked


def test_every_shape_in_one_text_is_masked() -> None:
    masked = DETECTOR.mask(ALL_TEXT)
    assert leaks(masked) == []
    assert all(s.label in masked for s in SHAPES)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('password = "hunter22"', 'password = "[redacted]"'),
        ("DB_PASSWORD='pa55word!'", "DB_PASSWORD='[redacted]'"),
        ('{"api_key": "abcd1234efgh"}', '{"api_key": "[redacted]"}'),
        ("export GITHUB_TOKEN=abc123def456", "export GITHUB_TOKEN=[redacted]"),
        ('secret_key := "s3cr3tvalue9"', 'secret_key := "[redacted]"'),
        ("--password hunter2hunter2 -v", "--password [redacted] -v"),
        (
            "curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='",
            "curl -H 'Authorization: Basic [redacted]'",
        ),
        ("postgres://u:p@h/db", "postgres://u:[redacted]@h/db"),
        ("see https://user:tok3n@example.com/x", "see https://user:[redacted]@example.com/x"),
        (
            "https://hooks.slack.com/services/T0/B0/XXXX",
            "https://hooks.slack.com/services/[redacted]",
        ),
        (
            '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEF\\n'
            '-----END PRIVATE KEY-----\\n"',
            '"private_key": "-----BEGIN PRIVATE KEY-----\\n[redacted]\\n'
            '-----END PRIVATE KEY-----\\n"',
        ),
        # cut short by whoever wrote the text (Claude Code's `last-prompt` lines, previews)
        ("lastPrompt: my key AIzaSyGOOGLEcore1a2b…", "lastPrompt: my key [redacted]"),
        ('password = "hunte…', 'password = "[redacted]'),
        ("postgres://app:PGPASS...", "postgres://app:[redacted]..."),
        # `key = value` with spaces, and the AWS credentials file (issue 30)
        ("token = abcdef1234567890", "token = [redacted]"),
        ("password = hunter2hunter2", "password = [redacted]"),
        ("api_key = wJalrXUtnFEMIKMDENGbPxRfiCYEXAMPLE", "api_key = [redacted]"),
        ("client_secret = AbCd1234EfGh5678IjKl", "client_secret = [redacted]"),
        (
            "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
            "aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY\n"
            "aws_session_token = IQoJb3JpZ2luX2VjEHcaCXVzLWVhc3QtMSJHMEUCIQD\n",
            "[default]\naws_access_key_id = [redacted]\naws_secret_access_key = [redacted]\n"
            "aws_session_token = [redacted]\n",
        ),
        ("MINIO_SECRET_ACCESS_KEY = minioadminsecretvalue", "MINIO_SECRET_ACCESS_KEY = [redacted]"),
        (
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5\n"
            "the key was cut here.",
            "-----BEGIN EC PRIVATE KEY-----\n[redacted]\nthe key was cut here.",
        ),
    ],
)
def test_the_name_around_a_secret_stays(text: str, expected: str) -> None:
    assert DETECTOR.mask(text) == expected


def _png_base64() -> str:
    rng = random.Random(7)
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(30_000)).decode()


ORDINARY = [
    "commit 3f2a9c1d4e5b6a7980c1d2e3f4a5b6c7d8e9f0a1 (HEAD -> main)",
    "session 123e4567-e89b-12d3-a456-426614174000 opened at 2026-11-27T01:02:03.123Z",
    '{"type": "image", "source": {"type": "base64", "data": "' + _png_base64() + '"}}',
    "token = next(it)",
    "password = self.password",
    "api_key: str | None = None",
    "token: Optional[str] = None",
    "connect(user=user, password=password)",
    '{"password": password, "token": auth_token}',
    "PseudoToken = Whitespace + group(PseudoExtras, Number, Funny)",
    "password = lexer.get_token()",
    "token = authToken; password = passwordHash; api_key = api_key_v2",
    "secret_key = HTTPRequestHandlerFactory; token = getTokenFromEnvironment",
    "aws_secret_access_key = credentials.secret_key",
    "aws_secret_access_key = secret_key",
    "elif tt == 'password':\n    password = lexer.get_token()",
    "def getpass(prompt='Password: ', stream=None):",
    "max_tokens = 4096; key = 'name'; monkey = 'bananas and more'",
    "desk-lamp-abcdefghijklmnopqrstuvwxyz0123456789 and risk-assessment-module-long",
    "The secret to good tests is that they can fail. Tokens are counted per turn.",
    "Authorization: Bearer …",
    "keys start with sk-... and the token: …; Anthropic's are sk-ant-…",
    "PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/dev",
    "ssh git@github.com:org/repo.git && https://github.com/org/repo/pull/12",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUZ\n-----END CERTIFICATE-----",
]


@pytest.mark.parametrize("text", ORDINARY, ids=lambda t: t[:30])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert DETECTOR.mask(text) == text


def test_environment_values_by_name_and_by_the_names_given(tmp_path: Path) -> None:
    env = {
        "GEMINI_API_KEY": "gemini-value-123",
        "MY_LLM": "custom-model-key-456",  # named by a model's api_key_env
        "DB_PASSWORD": "short",  # too short to be a key: ordinary words would go
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path),  # a file's path, not a key
        "EDITOR": "vim-editor-settings",  # not a key's name
    }
    provider_env = {"OTHER_TOKEN": "other-secret-789"}  # a second environment (an agent's)
    detector = SecretDetector(env, provider_env, names={"MY_LLM"})
    text = "gemini-value-123 custom-model-key-456 short vim-editor-settings other-secret-789 "
    text += str(tmp_path)
    expected = f"[redacted] [redacted] short vim-editor-settings [redacted] {tmp_path}"
    assert detector.mask(text) == expected
    assert detector.mask_known("key sk-proj-abcdefghijklmnopqrstuvwxyz gemini-value-123") == (
        "key sk-proj-abcdefghijklmnopqrstuvwxyz [redacted]"
    )
    assert is_secret_name("GITHUB_TOKEN") and is_secret_name("aws_secret_access_key")
    assert not is_secret_name("EDITOR")


def test_data_is_masked_string_by_string_and_by_its_keys() -> None:
    data = {
        "password": "hunter2",
        "nested": [{"api_key": "abcd1234"}, "token=abcdefghijk"],
        "max_tokens": 4096,
        "note": "a sk-proj-abcdefghijklmnopqrstuvwxyz key",
    }
    assert DETECTOR.mask_data(data) == {
        "password": MASK,
        "nested": [{"api_key": MASK}, "token=[redacted]"],
        "max_tokens": 4096,
        "note": "a [redacted] key",
    }
    assert is_secret_key("client_secret") and is_secret_key("private-key")
    assert not is_secret_key("api_key_env") and not is_secret_key("monkey")


def test_the_process_detector_masks_this_environments_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOME_SERVICE_SECRET", "process-secret-value-1")
    assert mask_secrets("x process-secret-value-1 y") == "x [redacted] y"


B64_LINE = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB"
MB2 = 2_000_000


def _repeat(unit: str, size: int = MB2) -> Callable[[], str]:
    return lambda: unit * (size // len(unit))


ADVERSARIAL: dict[str, Callable[[], str]] = {
    # The case: 232 KB of BEGIN lines (the old `.*?` rescanned to the end from each).
    "232 KB of PEM BEGIN lines": _repeat("-----BEGIN RSA PRIVATE KEY-----\n", 232_000),
    "PEM BEGIN lines": _repeat("-----BEGIN RSA PRIVATE KEY-----\n"),
    "PEM BEGIN and body lines": _repeat("-----BEGIN RSA PRIVATE KEY-----\n" + B64_LINE + "\n"),
    "one PEM body to the end": lambda: (
        "-----BEGIN RSA PRIVATE KEY-----\n" + _repeat(B64_LINE + "\n")()
    ),
    "a=": _repeat("a="),
    "password=": _repeat("password="),
    'password="': _repeat('password="'),
    "token: ": _repeat("token: "),
    "api_key=": _repeat("api_key="),
    "--token ": _repeat("--token "),
    "long base64": lambda: base64.b64encode(random.Random(1).randbytes(MB2 * 3 // 4)).decode(),
    "eyJ": _repeat("eyJ"),
    "eyJ with dots": _repeat("eyJabcdefgh."),
    "sk-": _repeat("sk-"),
    "://": _repeat("://"),
    "://a:": _repeat("://a:"),
    "Bearer ": _repeat("Bearer "),
    "Authorization: ": _repeat("Authorization: "),
    "AKIA": _repeat("AKIA"),
    "spaces": _repeat(" "),
    "sk- then an ellipsis": lambda: _repeat("sk-")() + " …",
    "AIza then an ellipsis": lambda: _repeat("AIza")() + " …",
}


@pytest.mark.parametrize("make", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_any_input_is_masked(make: Callable[[], str]) -> None:
    # In linear time: `python -m benchmarks --only linear` times each at 0.5 and 2 MB.
    text = make()
    assert len(DETECTOR.mask(text)) > 0


TRIGGERS = ["sk-", "password", "=", ":", '"', "'", "://", "@", "-----BEGIN ", "PRIVATE KEY-----"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(TRIGGERS) | st.text(max_size=8), max_size=30).map("".join),
    st.sampled_from(SHAPES),
    st.lists(st.sampled_from(TRIGGERS) | st.text(max_size=8), max_size=30).map("".join),
)
def test_a_secret_amid_any_text_is_masked_and_masking_twice_changes_nothing(
    before: str, shape: Shape, after: str
) -> None:
    text = f"{before}\n{shape.text}\n{after}"
    masked = DETECTOR.mask(text)
    assert [s for s in leaks(masked) if s == shape.id] == []
    assert DETECTOR.mask(masked) == masked
