"""The composition root: the one place that knows every tool group."""
