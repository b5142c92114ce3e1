"""I/O only: the Postgres side of the ports (tables, the orders store, the checkout's hot
path), and the development catalogue."""
