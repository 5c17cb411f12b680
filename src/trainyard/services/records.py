"""The records the use cases return, for adapters to map to their wire formats: read from
the store, never written back through an adapter."""

from trainyard.metadata.runs import Comparison
from trainyard.store.access import AuditRecord, TeamRecord, TokenRecord, UserRecord
from trainyard.store.model_registry import ModelSummary
from trainyard.store.records import (
    AliasChange,
    DatasetRecord,
    EventRecord,
    JobRecord,
    ModelRecord,
    RunRecord,
)

__all__ = ["AliasChange", "AuditRecord", "Comparison", "DatasetRecord", "EventRecord",
           "JobRecord", "ModelRecord", "ModelSummary", "RunRecord", "TeamRecord",
           "TokenRecord", "UserRecord"]
