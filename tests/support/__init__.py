"""Test kit shared by unit, integration and end-to-end tests and by ``benchmarks/``.

- :mod:`tests.support.model_server` — :class:`FakeModelServer`, a scripted local LLM endpoint
  speaking Anthropic Messages, OpenAI Responses, OpenAI chat completions and Gemini.
- :mod:`tests.support.homes` — :class:`AgentHome`, a throw-away HOME plus the environment that
  makes each real agent CLI run offline against a :class:`FakeModelServer`.
"""
