class DevstackError(RuntimeError):
    """A piece of infrastructure could not be started; the message is one readable line."""
