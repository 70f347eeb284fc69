"""The expansion study and its report, and the learned pruner's training."""
