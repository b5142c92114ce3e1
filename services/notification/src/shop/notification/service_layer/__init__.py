"""notification-service's use case, written against :mod:`shop.notification.ports`."""
