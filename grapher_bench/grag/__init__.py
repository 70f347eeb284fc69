"""The G-RAG study: training data, training and evaluation commands."""
