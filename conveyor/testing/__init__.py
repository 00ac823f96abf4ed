"""What tests and benchmarks use, not the product (nothing outside conveyor.testing imports it).

- `simulator`: an OpenAI-compatible LLM endpoint with rate limits, served on loopback
  (`python -m conveyor.testing.simulator`). Its parts: `routes` (its HTTP app), `recorder`
  (its state: the window and a record of every request), `window` (the rate rule),
  `protocol` (the chat-completions wire format and token estimates), `answers` (answers
  from ground truth, with errors).
- `samples`: generated invoices and contracts with their truth (needs reportlab:
  `pip install 'conveyor[samples]'`).

Nothing is imported here on purpose: the simulator pulls in FastAPI and uvicorn.
"""
