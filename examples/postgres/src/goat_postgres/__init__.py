"""goat-postgres: a GOAT Memory provider keeping each scope's notes in PostgreSQL."""
