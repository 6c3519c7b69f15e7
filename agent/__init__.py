"""Weather tools (providers) shared by both routes, and the LLM tool-calling loop."""
