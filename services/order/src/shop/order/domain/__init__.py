"""Pure rules of orders: state machine, money, stock, payments, order numbers, the read
models and every domain error (errors.py). No I/O here."""
