"""Adapters of agentmem to agent frameworks, one module each, imported on their own so every framework stays optional."""
