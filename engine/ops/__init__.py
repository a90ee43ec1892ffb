"""Operations: publish and ingest, rebuild, verify, time travel, forgetting, dead letters, audit trail, metrics."""
