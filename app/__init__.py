"""Ask User: the place where a person answers the questions their AI agents stop to ask."""

__version__ = "0.1.0"
