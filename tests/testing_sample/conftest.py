"""The sample project's only set-up: opt into the plugin."""

pytest_plugins = ["coordinator.testing.pytest_plugin"]
