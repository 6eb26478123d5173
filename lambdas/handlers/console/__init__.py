"""The browser console: static files the api function serves under `/console` (no data, no API key)."""
