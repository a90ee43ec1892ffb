"""The projector runtime: followers of a stream that fold events into read models under a checkpoint."""
