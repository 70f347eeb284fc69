"""LlamaIndex integration."""
