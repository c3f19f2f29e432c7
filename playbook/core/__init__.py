"""The foundation every layer stands on: the error tree, units from the command line, JSON-safe numbers."""
