"""Derived memory: summaries, topics, typed memories and episodes computed from conversation turns."""
