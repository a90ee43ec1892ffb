"""What agents import: ``MemoryClient`` (publish turns, ask for context and recall) and the agent tools."""
