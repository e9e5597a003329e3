"""selene-dag: token-budgeted LLM context from notes and AI coding-agent sessions.

Every derived piece is a Dagster software-defined asset materialized from DuckDB tables.
The pure context library lives in :mod:`selene_dag.context` and imports without Dagster.
"""

__version__ = "0.1.0"
