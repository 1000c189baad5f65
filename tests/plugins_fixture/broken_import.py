"""A plugin that fails while being imported."""

raise RuntimeError("this plugin is broken on purpose")
