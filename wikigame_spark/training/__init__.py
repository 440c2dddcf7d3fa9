"""Training data from the games: decision records with exact optimal moves, and chat examples."""
