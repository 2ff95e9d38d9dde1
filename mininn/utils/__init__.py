"""Small utilities shared across mininn."""
