"""The read side: context assembly, recall, the query service and its RPC adapter, pushed context."""
