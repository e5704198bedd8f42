"""Job definitions of Subtext Forge, and only those (jobs and schedules; tests/foundation/test_layout.py).

`stages.stage_jobs` derives one job per stage group from the asset graph (definitions.py adds
them); a module that defines jobs or schedules of its own exposes them as a module-level `defs`.
Command-line programs live in cli/.
"""
