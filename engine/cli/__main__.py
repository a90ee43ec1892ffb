"""``python -m memengine.engine.cli``: the same as the ``memengine`` console script."""

from memengine.engine.cli.main import main

main()
