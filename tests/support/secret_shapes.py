"""One made-up secret of every shape the detector knows (`avatar.policy.secrets`), for the tests
that check an output holds none of them.

Each `Shape` has a `label` (one word, a search term and a marker that the text reached an
output), the `text` as a person or a tool would write it, and `cores`: pieces of the secret
value that must never show anywhere, not even cut short in a title. Every core is unique to
its shape and appears nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """A secret as it appears in text."""

    id: str
    text: str
    cores: tuple[str, ...]

    @property
    def label(self) -> str:
        """The word before the secret in every text (FTS5 reads it as one word)."""
        return "shape" + self.id.replace("-", "")

    @property
    def line(self) -> str:
        """The label, then the secret."""
        return f"{self.label} {self.text}"


#: A variable whose name says it holds a key; its value is set in the tests' environment.
ENV_NAME = "MY_SERVICE_TOKEN"
ENV_VALUE = "ENVTOKcore-opaque-77310"

_PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpQIBAAKCAQEAPEMcoreLINE1abcdefghijklmnopqrstuvwxyz0123456789AB\n"
    "PEMcoreLINE2ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01\n"
    "aFDrBz9vFqU4yQ==\n"
    "-----END RSA PRIVATE KEY-----"
)
_PEM_CUT = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAACUTcoreLINEabcdefghijklmnopqrstuvwxyz0123456"
)

SHAPES: tuple[Shape, ...] = (
    Shape("openai", "sk-proj-OPENAIcore0k1m2n3p4q5r6s7t8u", ("OPENAIcore0k1m",)),
    Shape("anthropic", "sk-ant-api03-ANTHROPICcore4b5c6d7e8f9g0h-AA", ("ANTHROPICcore4b",)),
    Shape("openrouter", "sk-or-v1-ORcore5f6e7d8c9b0a1f2e3d4c5b6a7f8e", ("ORcore5f6e7d8c",)),
    Shape("google", "AIzaSyGOOGLEcore1a2b3c4d5e6f7g8h9i0j1k2", ("GOOGLEcore1a2b",)),
    Shape("groq", "gsk_GROQcore8d7c6b5a4f3e2d1c0b9a8f7e6d5c", ("GROQcore8d7c6b",)),
    Shape("xai", "xai-XAIcore2b4d6f8h0j2l4n6p8r0t2v4x6z8b", ("XAIcore2b4d6f8",)),
    Shape("huggingface", "hf_HFcore3c5e7g9i1k3m5o7q9s1u3w5y7a9c", ("HFcore3c5e7g9i",)),
    Shape("aws-key-id", "AKIAAWSIDCORE7X2Q9Z4", ("AWSIDCORE7X2",)),
    Shape("aws-temp-id", "ASIATEMPCORE3K5M8N1P", ("TEMPCORE3K5M",)),
    Shape(
        "aws-secret",
        "AWS_SECRET_ACCESS_KEY=AWSSECRETcore/Kx7MDENG+bPxRfiCYEXAMPLE1",
        ("AWSSECRETcore",),
    ),
    Shape(
        "aws-credentials",
        "aws_secret_access_key = AWSCREDcore7Kx9MDENGbPxRfiCY",  # (~/.aws/credentials)
        ("AWSCREDcore7Kx",),
    ),
    Shape("spaced-token", "auth_token = SPACEDcore4b5c6d7e8f", ("SPACEDcore4b5c",)),
    Shape("password", 'password = "PWDcore-Tr0ub4dor&3"', ("PWDcore-Tr0ub",)),
    Shape("passwd-yaml", "passwd: PASSWDcore9horse7", ("PASSWDcore9hor",)),
    Shape("password-json", '{"password": "JSONPWcore-s3cr3t"}', ("JSONPWcore-s3",)),
    Shape("token", "token=TOKENcore5x8y2z4w", ("TOKENcore5x8y",)),
    Shape("secret", "client_secret: CLIENTSECcore42xy", ("CLIENTSECcore4",)),
    Shape("api-key", "api_key = 'APIKEYcore1234abcd'", ("APIKEYcore1234",)),
    Shape("bearer", "Authorization: Bearer BEARERcore.abc123def456ghi789", ("BEARERcore.abc",)),
    Shape("url-postgres", "postgres://app:PGPASScore77@db.internal:5432/app", ("PGPASScore77",)),
    Shape("url-https", "https://deploy:URLTOKcore99x@github.com/org/repo.git", ("URLTOKcore99x",)),
    Shape("pem", _PEM, ("PEMcoreLINE1", "PEMcoreLINE2", "aFDrBz9vFqU4yQ")),
    Shape("github-ghp", "ghp_GHPcore1a2b3c4d5e6f7g8h9i0j1k2l3m4n5o", ("GHPcore1a2b3c",)),
    Shape("github-gho", "gho_GHOcore1a2b3c4d5e6f7g8h9i0j1k2l3m4n5o", ("GHOcore1a2b3c",)),
    Shape("github-ghs", "ghs_GHScore1a2b3c4d5e6f7g8h9i0j1k2l3m4n5o", ("GHScore1a2b3c",)),
    Shape("github-ghu", "ghu_GHUcore1a2b3c4d5e6f7g8h9i0j1k2l3m4n5o", ("GHUcore1a2b3c",)),
    Shape("github-ghr", "ghr_GHRcore1a2b3c4d5e6f7g8h9i0j1k2l3m4n5o", ("GHRcore1a2b3c",)),
    Shape("github-pat", "github_pat_11PATcore0abc_defghijklmnopqrstuvwxyz0123", ("11PATcore0abc",)),
    Shape("gitlab", "glpat-GLPATcore-x1y2z3a4b5c6", ("GLPATcore-x1y",)),
    Shape("slack-bot", "xoxb-1234567890-SLACKBOTcore9876", ("SLACKBOTcore98",)),
    Shape("slack-app", "xapp-1-A0123-456-SLACKAPPcore4321", ("SLACKAPPcore43",)),
    Shape(
        "slack-webhook",
        "https://hooks.slack.com/services/T0000000/B0000000/HOOKcore1234abcd",
        ("HOOKcore1234ab",),
    ),
    Shape("stripe-live", "sk_live_STRIPELIVEcore0123456789", ("STRIPELIVEcore",)),
    Shape("stripe-restricted", "rk_live_STRIPERKcore0123456789", ("STRIPERKcore01",)),
    Shape("stripe-test", "sk_test_STRIPETESTcore0123456789", ("STRIPETESTcore",)),
    Shape(
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJKV1Rjb3JlIn0.JWTcoreSIGNATURE0123456789abcdef",
        ("JWTcoreSIGNATU",),
    ),
    Shape("env-value", ENV_VALUE, ("ENVTOKcore-opa",)),
    # Last: a key cut off runs to the end of its base64, so nothing of another shape follows.
    Shape("pem-cut", _PEM_CUT, ("CUTcoreLINEabc",)),
)

#: Every shape, one after the other, as one text (a message, a file, an answer).
ALL_TEXT = "\n".join(s.line for s in SHAPES) + "\n"


def leaks(text: str | bytes) -> list[str]:
    """The ids of the shapes with a piece of their secret in `text`."""
    data = text if isinstance(text, str) else text.decode("utf-8", "replace")
    return [s.id for s in SHAPES if any(core in data for core in s.cores)]
