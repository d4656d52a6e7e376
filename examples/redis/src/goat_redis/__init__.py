"""goat-redis: a GOAT Memory provider keeping each scope's notes in a Redis server."""
