"""Scale-out of the heavy per-frame stages (Ray); Dagster stays the orchestrator."""
