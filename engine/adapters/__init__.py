"""Infrastructure adapters: settings, embedded servers, JetStream, PostgreSQL, pull consumers, logs."""
