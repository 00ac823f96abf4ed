"""LLM endpoints. `conveyor.llm.simulator`: an OpenAI-compatible one, rate-limited, for tests.

Nothing is imported here on purpose: the simulator pulls in FastAPI and uvicorn, which code
that only talks to an endpoint should not pay for.
"""
