"""sciir"""

__version__ = "0.1"
