"""Graph -> Graph transforms: forward and reverse differentiation, batching."""
