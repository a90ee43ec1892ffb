"""Agent integrations (issue #11): thin adapters over ``MemoryClient`` and the wire contract, one module per framework,
each behind its own extra (``memengine[mcp]``, ``memengine[langgraph]``, ``memengine[openai-agents]``).

They import the client and the wire contract only (an import-linter contract in pyproject.toml), so each one speaks
to a running engine exactly as any agent does, and the tenant is the client's, never a tool argument's.
"""
