"""The ``memengine`` command line: a typer app and its sub-apps."""
