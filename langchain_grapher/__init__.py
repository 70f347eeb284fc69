"""LangChain integration."""
