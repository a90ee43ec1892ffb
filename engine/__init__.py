"""memengine runtime: settings, bootstrap, projector runner, query handler, client, CLI, embedded servers."""
