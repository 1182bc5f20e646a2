"""Sub-commands of the ``styleeval`` CLI; each module exposes ``register(subparsers)``."""
