"""The wire contract: typed requests, replies and errors of the NATS RPCs (msgspec only, client-safe)."""
