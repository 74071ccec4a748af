"""Adapters of agentmem for agent frameworks, one module each (imported on its own, so each
framework stays an optional dependency)."""
