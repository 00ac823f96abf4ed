"""LLM endpoints: the client (`client`) and the price of a call (`pricing`). The endpoint
simulator that tests and benchmarks use lives in `conveyor.testing.simulator`.

Nothing is imported here on purpose: code that only prices calls need not load the client.
"""
