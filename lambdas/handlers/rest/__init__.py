"""The api function's HTTP adapter: body reading, the error map and the OpenAPI metadata its routes share."""
