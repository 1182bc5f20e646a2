"""The package version (its own module, so that no module needs to import the package ``__init__``)."""

__version__ = "0.1.0"
