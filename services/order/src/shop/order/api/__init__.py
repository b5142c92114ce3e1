"""The HTTP gateway the frontend calls."""
