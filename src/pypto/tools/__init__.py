"""Developer tools over IR and builds (DESIGN: `python -m pypto.tools.<tool>` entry points)."""

__all__: list[str] = []   # the tools are modules (`python -m pypto.tools.<tool>`), not package names
