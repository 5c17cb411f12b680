"""Authentication and transport security for the server and its clients."""
