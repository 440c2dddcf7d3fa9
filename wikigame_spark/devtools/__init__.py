"""Development tools that tests and benchmarks share; no job runs them.

``identity`` runs the Latgalian pipeline of a checkout and compares two such runs (the check that a
refactor changed no output); ``local_server`` serves a local GGUF model over an OpenAI-compatible
API for the LLM agents' tests, benchmarks and the demo.
"""
