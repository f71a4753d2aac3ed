"""The one exception the kit raises for the user."""


class ForkError(Exception):
    """An error the user can act on: the message says what to do."""
