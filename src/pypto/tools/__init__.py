"""Developer tools over IR and builds (DESIGN: `python -m pypto.tools.<tool>` entry points)."""
