from .dialect import DIALECT

__all__ = ["DIALECT"]
