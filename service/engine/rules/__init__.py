"""The rules of the games, one module each; importing the package registers them."""

from . import clock, four_corners, salic_law  # noqa: F401  (register the variants)
