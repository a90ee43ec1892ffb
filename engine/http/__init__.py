"""The HTTP API and web console of ``memengine up --http-port`` (issue #12): an entrypoint adapter, like the NATS
query handler, over the same query handler (``engine.read.rpc.RpcHandlers``, bytes in and out, with its limits and
typed errors) and the same publish path (``engine.client.MemoryClient`` on the engine's connection).

Modules by role: ``guard`` (where a request may come from: Host, Origin, Fetch Metadata; what its URL may hold),
``auth`` (API keys bound to tenants), ``problems`` (RFC 9457 problem+json from the wire error
codes), ``gateway`` (the one place routes reach the engine), ``api`` (``/v1`` JSON routes), ``console`` (the
server-rendered pages at ``/``), ``server`` (FastAPI app and the uvicorn server inside the engine's lifespan).
Only the composition root (``engine.bootstrap``) and the CLI import this package.
"""
