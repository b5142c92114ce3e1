"""Pure rules of orders: state machine, money, stock, order numbers. No I/O here."""
