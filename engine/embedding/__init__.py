"""Embedding models and the worker that fills the vector tables from the embedding cache."""
