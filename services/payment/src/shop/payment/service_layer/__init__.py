"""payment-service's use cases, one module each, written against :mod:`shop.payment.ports`."""
