"""The data plane: what runs a connector's tasks (Spark queries, converters, transforms)."""
