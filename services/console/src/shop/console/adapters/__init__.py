"""I/O only: order-service's orders (read-only), the operations library, the AsyncAPI
documents on disk."""
