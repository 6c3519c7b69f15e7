"""`python -m hybrid_weather.router` runs the CLI (handy where the console script is not on PATH)."""

from .entry import main

main()
