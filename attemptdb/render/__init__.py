"""Text for people: results as tables that fit the terminal, JSON and CSV."""
