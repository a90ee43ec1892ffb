"""Read models as pure folds: event in, SQL operations out (no I/O). See ``projections.registry``."""
