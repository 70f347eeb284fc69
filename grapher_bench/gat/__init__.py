"""Training GraphER-GAT / MLP on benchmark data (``grapher-bench train``) and its latency."""
