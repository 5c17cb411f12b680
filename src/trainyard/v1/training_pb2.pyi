import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATE_UNSPECIFIED: _ClassVar[JobState]
    WAITING: _ClassVar[JobState]
    LAUNCHING: _ClassVar[JobState]
    RUNNING: _ClassVar[JobState]
    SUCCEEDED: _ClassVar[JobState]
    FAILED: _ClassVar[JobState]
    CANCELLED: _ClassVar[JobState]
    PREEMPTED: _ClassVar[JobState]
JOB_STATE_UNSPECIFIED: JobState
WAITING: JobState
LAUNCHING: JobState
RUNNING: JobState
SUCCEEDED: JobState
FAILED: JobState
CANCELLED: JobState
PREEMPTED: JobState

class AlgorithmRef(_message.Message):
    __slots__ = ("name", "version", "alias")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: int
    alias: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[int] = ..., alias: _Optional[str] = ...) -> None: ...

class AlgorithmSpec(_message.Message):
    __slots__ = ("name", "image", "code", "command", "hyperparameters", "resources", "description", "git_commit")
    class HyperparametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    HYPERPARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    GIT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    image: str
    code: bool
    command: str
    hyperparameters: _containers.ScalarMap[str, str]
    resources: Resources
    description: str
    git_commit: str
    def __init__(self, name: _Optional[str] = ..., image: _Optional[str] = ..., code: _Optional[bool] = ..., command: _Optional[str] = ..., hyperparameters: _Optional[_Mapping[str, str]] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., description: _Optional[str] = ..., git_commit: _Optional[str] = ...) -> None: ...

class CodeChunk(_message.Message):
    __slots__ = ("path", "offset", "data", "size", "sha256")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    path: str
    offset: int
    data: bytes
    size: int
    sha256: str
    def __init__(self, path: _Optional[str] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ..., size: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class AlgorithmUpload(_message.Message):
    __slots__ = ("spec", "chunk")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    spec: AlgorithmSpec
    chunk: CodeChunk
    def __init__(self, spec: _Optional[_Union[AlgorithmSpec, _Mapping]] = ..., chunk: _Optional[_Union[CodeChunk, _Mapping]] = ...) -> None: ...

class AlgorithmRun(_message.Message):
    __slots__ = ("run_id", "state", "owner", "ended_at", "model")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    state: JobState
    owner: str
    ended_at: _timestamp_pb2.Timestamp
    model: ModelArtifact
    def __init__(self, run_id: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., owner: _Optional[str] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., model: _Optional[_Union[ModelArtifact, _Mapping]] = ...) -> None: ...

class AlgorithmVersion(_message.Message):
    __slots__ = ("name", "version", "source", "image", "image_id", "code_hash", "code_size_bytes", "code_file_count", "command", "hyperparameters", "resources", "description", "git_commit", "created_at", "created_by", "aliases", "created", "runs", "job_count")
    class HyperparametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    IMAGE_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_HASH_FIELD_NUMBER: _ClassVar[int]
    CODE_SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CODE_FILE_COUNT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    HYPERPARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    GIT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    JOB_COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: int
    source: str
    image: str
    image_id: str
    code_hash: str
    code_size_bytes: int
    code_file_count: int
    command: str
    hyperparameters: _containers.ScalarMap[str, str]
    resources: Resources
    description: str
    git_commit: str
    created_at: _timestamp_pb2.Timestamp
    created_by: str
    aliases: _containers.RepeatedScalarFieldContainer[str]
    created: bool
    runs: _containers.RepeatedCompositeFieldContainer[AlgorithmRun]
    job_count: int
    def __init__(self, name: _Optional[str] = ..., version: _Optional[int] = ..., source: _Optional[str] = ..., image: _Optional[str] = ..., image_id: _Optional[str] = ..., code_hash: _Optional[str] = ..., code_size_bytes: _Optional[int] = ..., code_file_count: _Optional[int] = ..., command: _Optional[str] = ..., hyperparameters: _Optional[_Mapping[str, str]] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., description: _Optional[str] = ..., git_commit: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_by: _Optional[str] = ..., aliases: _Optional[_Iterable[str]] = ..., created: _Optional[bool] = ..., runs: _Optional[_Iterable[_Union[AlgorithmRun, _Mapping]]] = ..., job_count: _Optional[int] = ...) -> None: ...

class AlgorithmSummary(_message.Message):
    __slots__ = ("name", "versions", "latest_version", "aliases", "updated_at", "description")
    class AliasesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    LATEST_VERSION_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    versions: int
    latest_version: int
    aliases: _containers.ScalarMap[str, int]
    updated_at: _timestamp_pb2.Timestamp
    description: str
    def __init__(self, name: _Optional[str] = ..., versions: _Optional[int] = ..., latest_version: _Optional[int] = ..., aliases: _Optional[_Mapping[str, int]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., description: _Optional[str] = ...) -> None: ...

class ListAlgorithmsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListAlgorithmsResponse(_message.Message):
    __slots__ = ("algorithms",)
    ALGORITHMS_FIELD_NUMBER: _ClassVar[int]
    algorithms: _containers.RepeatedCompositeFieldContainer[AlgorithmSummary]
    def __init__(self, algorithms: _Optional[_Iterable[_Union[AlgorithmSummary, _Mapping]]] = ...) -> None: ...

class GetAlgorithmRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class Algorithm(_message.Message):
    __slots__ = ("name", "versions", "aliases", "alias_history")
    class AliasesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    ALIAS_HISTORY_FIELD_NUMBER: _ClassVar[int]
    name: str
    versions: _containers.RepeatedCompositeFieldContainer[AlgorithmVersion]
    aliases: _containers.ScalarMap[str, int]
    alias_history: _containers.RepeatedCompositeFieldContainer[AliasChange]
    def __init__(self, name: _Optional[str] = ..., versions: _Optional[_Iterable[_Union[AlgorithmVersion, _Mapping]]] = ..., aliases: _Optional[_Mapping[str, int]] = ..., alias_history: _Optional[_Iterable[_Union[AliasChange, _Mapping]]] = ...) -> None: ...

class SetAlgorithmAliasRequest(_message.Message):
    __slots__ = ("name", "alias", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    alias: str
    version: int
    def __init__(self, name: _Optional[str] = ..., alias: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class SetAlgorithmAliasResponse(_message.Message):
    __slots__ = ("name", "alias", "version", "previous_version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    alias: str
    version: int
    previous_version: int
    def __init__(self, name: _Optional[str] = ..., alias: _Optional[str] = ..., version: _Optional[int] = ..., previous_version: _Optional[int] = ...) -> None: ...

class DeleteAlgorithmRequest(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: int
    def __init__(self, name: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class DeleteAlgorithmResponse(_message.Message):
    __slots__ = ("algorithm",)
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    algorithm: AlgorithmVersion
    def __init__(self, algorithm: _Optional[_Union[AlgorithmVersion, _Mapping]] = ...) -> None: ...

class CodeVersion(_message.Message):
    __slots__ = ("image", "image_id", "command", "git_commit", "algorithm", "code_hash")
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    IMAGE_ID_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    GIT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    CODE_HASH_FIELD_NUMBER: _ClassVar[int]
    image: str
    image_id: str
    command: str
    git_commit: str
    algorithm: AlgorithmRef
    code_hash: str
    def __init__(self, image: _Optional[str] = ..., image_id: _Optional[str] = ..., command: _Optional[str] = ..., git_commit: _Optional[str] = ..., algorithm: _Optional[_Union[AlgorithmRef, _Mapping]] = ..., code_hash: _Optional[str] = ...) -> None: ...

class MetricPoint(_message.Message):
    __slots__ = ("step", "has_step", "value", "time")
    STEP_FIELD_NUMBER: _ClassVar[int]
    HAS_STEP_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    step: int
    has_step: bool
    value: float
    time: _timestamp_pb2.Timestamp
    def __init__(self, step: _Optional[int] = ..., has_step: _Optional[bool] = ..., value: _Optional[float] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MetricSeries(_message.Message):
    __slots__ = ("key", "points")
    KEY_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    key: str
    points: _containers.RepeatedCompositeFieldContainer[MetricPoint]
    def __init__(self, key: _Optional[str] = ..., points: _Optional[_Iterable[_Union[MetricPoint, _Mapping]]] = ...) -> None: ...

class Run(_message.Message):
    __slots__ = ("run_id", "job_id", "attempt", "name", "owner", "state", "algorithm", "spec", "code", "executor", "pool", "gpu_ids", "submitted_at", "launched_at", "started_at", "ended_at", "has_exit_code", "exit_code", "message", "metrics", "series", "series_truncated", "transitions", "log_uri", "log_size_bytes", "model", "reproduced_from", "reproduced_by", "end_reason", "work_lost_seconds", "notice_at", "checkpoint_at")
    class MetricsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: MetricValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[MetricValue, _Mapping]] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    GPU_IDS_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    LAUNCHED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    HAS_EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    SERIES_FIELD_NUMBER: _ClassVar[int]
    SERIES_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    LOG_URI_FIELD_NUMBER: _ClassVar[int]
    LOG_SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    REPRODUCED_FROM_FIELD_NUMBER: _ClassVar[int]
    REPRODUCED_BY_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    WORK_LOST_SECONDS_FIELD_NUMBER: _ClassVar[int]
    NOTICE_AT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_AT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    job_id: str
    attempt: int
    name: str
    owner: str
    state: JobState
    algorithm: str
    spec: JobSpec
    code: CodeVersion
    executor: str
    pool: str
    gpu_ids: _containers.RepeatedScalarFieldContainer[str]
    submitted_at: _timestamp_pb2.Timestamp
    launched_at: _timestamp_pb2.Timestamp
    started_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    has_exit_code: bool
    exit_code: int
    message: str
    metrics: _containers.MessageMap[str, MetricValue]
    series: _containers.RepeatedCompositeFieldContainer[MetricSeries]
    series_truncated: bool
    transitions: _containers.RepeatedCompositeFieldContainer[StateTransition]
    log_uri: str
    log_size_bytes: int
    model: ModelArtifact
    reproduced_from: str
    reproduced_by: _containers.RepeatedScalarFieldContainer[str]
    end_reason: str
    work_lost_seconds: float
    notice_at: _timestamp_pb2.Timestamp
    checkpoint_at: _timestamp_pb2.Timestamp
    def __init__(self, run_id: _Optional[str] = ..., job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., name: _Optional[str] = ..., owner: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., algorithm: _Optional[str] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., code: _Optional[_Union[CodeVersion, _Mapping]] = ..., executor: _Optional[str] = ..., pool: _Optional[str] = ..., gpu_ids: _Optional[_Iterable[str]] = ..., submitted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., launched_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., has_exit_code: _Optional[bool] = ..., exit_code: _Optional[int] = ..., message: _Optional[str] = ..., metrics: _Optional[_Mapping[str, MetricValue]] = ..., series: _Optional[_Iterable[_Union[MetricSeries, _Mapping]]] = ..., series_truncated: _Optional[bool] = ..., transitions: _Optional[_Iterable[_Union[StateTransition, _Mapping]]] = ..., log_uri: _Optional[str] = ..., log_size_bytes: _Optional[int] = ..., model: _Optional[_Union[ModelArtifact, _Mapping]] = ..., reproduced_from: _Optional[str] = ..., reproduced_by: _Optional[_Iterable[str]] = ..., end_reason: _Optional[str] = ..., work_lost_seconds: _Optional[float] = ..., notice_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., checkpoint_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MetricThreshold(_message.Message):
    __slots__ = ("key", "op", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    op: str
    value: float
    def __init__(self, key: _Optional[str] = ..., op: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ("job_id", "dataset", "algorithm", "image", "labels", "states", "metrics", "sort_metric", "descending", "page_size", "page_token")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    SORT_METRIC_FIELD_NUMBER: _ClassVar[int]
    DESCENDING_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    dataset: str
    algorithm: str
    image: str
    labels: _containers.ScalarMap[str, str]
    states: _containers.RepeatedScalarFieldContainer[JobState]
    metrics: _containers.RepeatedCompositeFieldContainer[MetricThreshold]
    sort_metric: str
    descending: bool
    page_size: int
    page_token: str
    def __init__(self, job_id: _Optional[str] = ..., dataset: _Optional[str] = ..., algorithm: _Optional[str] = ..., image: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., states: _Optional[_Iterable[_Union[JobState, str]]] = ..., metrics: _Optional[_Iterable[_Union[MetricThreshold, _Mapping]]] = ..., sort_metric: _Optional[str] = ..., descending: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs", "next_page_token")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    next_page_token: str
    def __init__(self, runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class CompareRunsRequest(_message.Message):
    __slots__ = ("run_ids", "include_series")
    RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_SERIES_FIELD_NUMBER: _ClassVar[int]
    run_ids: _containers.RepeatedScalarFieldContainer[str]
    include_series: bool
    def __init__(self, run_ids: _Optional[_Iterable[str]] = ..., include_series: _Optional[bool] = ...) -> None: ...

class ComparedValue(_message.Message):
    __slots__ = ("present", "value")
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    present: bool
    value: str
    def __init__(self, present: _Optional[bool] = ..., value: _Optional[str] = ...) -> None: ...

class ComparedKey(_message.Message):
    __slots__ = ("key", "values", "differs")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    DIFFERS_FIELD_NUMBER: _ClassVar[int]
    key: str
    values: _containers.RepeatedCompositeFieldContainer[ComparedValue]
    differs: bool
    def __init__(self, key: _Optional[str] = ..., values: _Optional[_Iterable[_Union[ComparedValue, _Mapping]]] = ..., differs: _Optional[bool] = ...) -> None: ...

class ComparedMetricValue(_message.Message):
    __slots__ = ("present", "value")
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    present: bool
    value: float
    def __init__(self, present: _Optional[bool] = ..., value: _Optional[float] = ...) -> None: ...

class ComparedMetric(_message.Message):
    __slots__ = ("key", "values", "differs")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    DIFFERS_FIELD_NUMBER: _ClassVar[int]
    key: str
    values: _containers.RepeatedCompositeFieldContainer[ComparedMetricValue]
    differs: bool
    def __init__(self, key: _Optional[str] = ..., values: _Optional[_Iterable[_Union[ComparedMetricValue, _Mapping]]] = ..., differs: _Optional[bool] = ...) -> None: ...

class CompareRunsResponse(_message.Message):
    __slots__ = ("runs", "settings", "hyperparameters", "metrics")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    HYPERPARAMETERS_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    settings: _containers.RepeatedCompositeFieldContainer[ComparedKey]
    hyperparameters: _containers.RepeatedCompositeFieldContainer[ComparedKey]
    metrics: _containers.RepeatedCompositeFieldContainer[ComparedMetric]
    def __init__(self, runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ..., settings: _Optional[_Iterable[_Union[ComparedKey, _Mapping]]] = ..., hyperparameters: _Optional[_Iterable[_Union[ComparedKey, _Mapping]]] = ..., metrics: _Optional[_Iterable[_Union[ComparedMetric, _Mapping]]] = ...) -> None: ...

class ReproduceRunRequest(_message.Message):
    __slots__ = ("run_id", "client_request_id")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    client_request_id: str
    def __init__(self, run_id: _Optional[str] = ..., client_request_id: _Optional[str] = ...) -> None: ...

class ReproduceRunResponse(_message.Message):
    __slots__ = ("job_id", "existing", "spec", "reproduces")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    REPRODUCES_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    existing: bool
    spec: JobSpec
    reproduces: str
    def __init__(self, job_id: _Optional[str] = ..., existing: _Optional[bool] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., reproduces: _Optional[str] = ...) -> None: ...

class ModelRef(_message.Message):
    __slots__ = ("name", "version", "alias")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: int
    alias: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[int] = ..., alias: _Optional[str] = ...) -> None: ...

class ListModelsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ModelSummary(_message.Message):
    __slots__ = ("name", "versions", "latest_version", "aliases", "updated_at")
    class AliasesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    LATEST_VERSION_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    versions: int
    latest_version: int
    aliases: _containers.ScalarMap[str, int]
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., versions: _Optional[int] = ..., latest_version: _Optional[int] = ..., aliases: _Optional[_Mapping[str, int]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListModelsResponse(_message.Message):
    __slots__ = ("models",)
    MODELS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[ModelSummary]
    def __init__(self, models: _Optional[_Iterable[_Union[ModelSummary, _Mapping]]] = ...) -> None: ...

class GetModelRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class AliasChange(_message.Message):
    __slots__ = ("alias", "from_version", "to_version", "actor", "time")
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    FROM_VERSION_FIELD_NUMBER: _ClassVar[int]
    TO_VERSION_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    alias: str
    from_version: int
    to_version: int
    actor: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, alias: _Optional[str] = ..., from_version: _Optional[int] = ..., to_version: _Optional[int] = ..., actor: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Model(_message.Message):
    __slots__ = ("name", "versions", "aliases", "alias_history")
    class AliasesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    ALIAS_HISTORY_FIELD_NUMBER: _ClassVar[int]
    name: str
    versions: _containers.RepeatedCompositeFieldContainer[ModelArtifact]
    aliases: _containers.ScalarMap[str, int]
    alias_history: _containers.RepeatedCompositeFieldContainer[AliasChange]
    def __init__(self, name: _Optional[str] = ..., versions: _Optional[_Iterable[_Union[ModelArtifact, _Mapping]]] = ..., aliases: _Optional[_Mapping[str, int]] = ..., alias_history: _Optional[_Iterable[_Union[AliasChange, _Mapping]]] = ...) -> None: ...

class SetModelAliasRequest(_message.Message):
    __slots__ = ("name", "alias", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    alias: str
    version: int
    def __init__(self, name: _Optional[str] = ..., alias: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class SetModelAliasResponse(_message.Message):
    __slots__ = ("name", "alias", "version", "previous_version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    alias: str
    version: int
    previous_version: int
    def __init__(self, name: _Optional[str] = ..., alias: _Optional[str] = ..., version: _Optional[int] = ..., previous_version: _Optional[int] = ...) -> None: ...

class DownloadModelRequest(_message.Message):
    __slots__ = ("model",)
    MODEL_FIELD_NUMBER: _ClassVar[int]
    model: ModelRef
    def __init__(self, model: _Optional[_Union[ModelRef, _Mapping]] = ...) -> None: ...

class ModelFileChunk(_message.Message):
    __slots__ = ("model", "path", "size", "sha256", "offset", "data")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    model: ModelArtifact
    path: str
    size: int
    sha256: str
    offset: int
    data: bytes
    def __init__(self, model: _Optional[_Union[ModelArtifact, _Mapping]] = ..., path: _Optional[str] = ..., size: _Optional[int] = ..., sha256: _Optional[str] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class GetModelLineageRequest(_message.Message):
    __slots__ = ("model",)
    MODEL_FIELD_NUMBER: _ClassVar[int]
    model: ModelRef
    def __init__(self, model: _Optional[_Union[ModelRef, _Mapping]] = ...) -> None: ...

class ModelLineage(_message.Message):
    __slots__ = ("model", "run_id", "owner", "dataset", "code", "hyperparameters", "resources", "workers", "run", "algorithm")
    class HyperparametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODEL_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    HYPERPARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    model: ModelArtifact
    run_id: str
    owner: str
    dataset: DatasetVersion
    code: CodeVersion
    hyperparameters: _containers.ScalarMap[str, str]
    resources: Resources
    workers: int
    run: Run
    algorithm: AlgorithmVersion
    def __init__(self, model: _Optional[_Union[ModelArtifact, _Mapping]] = ..., run_id: _Optional[str] = ..., owner: _Optional[str] = ..., dataset: _Optional[_Union[DatasetVersion, _Mapping]] = ..., code: _Optional[_Union[CodeVersion, _Mapping]] = ..., hyperparameters: _Optional[_Mapping[str, str]] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., workers: _Optional[int] = ..., run: _Optional[_Union[Run, _Mapping]] = ..., algorithm: _Optional[_Union[AlgorithmVersion, _Mapping]] = ...) -> None: ...

class GetDatasetLineageRequest(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class DatasetLineage(_message.Message):
    __slots__ = ("dataset", "models")
    DATASET_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    dataset: DatasetVersion
    models: _containers.RepeatedCompositeFieldContainer[ModelArtifact]
    def __init__(self, dataset: _Optional[_Union[DatasetVersion, _Mapping]] = ..., models: _Optional[_Iterable[_Union[ModelArtifact, _Mapping]]] = ...) -> None: ...

class DeleteDatasetRequest(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class DeleteDatasetResponse(_message.Message):
    __slots__ = ("dataset",)
    DATASET_FIELD_NUMBER: _ClassVar[int]
    dataset: DatasetVersion
    def __init__(self, dataset: _Optional[_Union[DatasetVersion, _Mapping]] = ...) -> None: ...

class SweepParameter(_message.Message):
    __slots__ = ("name", "values", "min", "max", "log", "integer")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    INTEGER_FIELD_NUMBER: _ClassVar[int]
    name: str
    values: _containers.RepeatedScalarFieldContainer[str]
    min: float
    max: float
    log: bool
    integer: bool
    def __init__(self, name: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ..., min: _Optional[float] = ..., max: _Optional[float] = ..., log: _Optional[bool] = ..., integer: _Optional[bool] = ...) -> None: ...

class SweepRequest(_message.Message):
    __slots__ = ("template", "parameters", "search", "trials", "seed", "max_parallel", "objective", "early_stop", "min_steps", "reduction", "max_trials", "max_gpu_hours", "max_cpu_hours")
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    TRIALS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    MAX_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    EARLY_STOP_FIELD_NUMBER: _ClassVar[int]
    MIN_STEPS_FIELD_NUMBER: _ClassVar[int]
    REDUCTION_FIELD_NUMBER: _ClassVar[int]
    MAX_TRIALS_FIELD_NUMBER: _ClassVar[int]
    MAX_GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    MAX_CPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    template: TrainRequest
    parameters: _containers.RepeatedCompositeFieldContainer[SweepParameter]
    search: str
    trials: int
    seed: int
    max_parallel: int
    objective: str
    early_stop: str
    min_steps: int
    reduction: int
    max_trials: int
    max_gpu_hours: float
    max_cpu_hours: float
    def __init__(self, template: _Optional[_Union[TrainRequest, _Mapping]] = ..., parameters: _Optional[_Iterable[_Union[SweepParameter, _Mapping]]] = ..., search: _Optional[str] = ..., trials: _Optional[int] = ..., seed: _Optional[int] = ..., max_parallel: _Optional[int] = ..., objective: _Optional[str] = ..., early_stop: _Optional[str] = ..., min_steps: _Optional[int] = ..., reduction: _Optional[int] = ..., max_trials: _Optional[int] = ..., max_gpu_hours: _Optional[float] = ..., max_cpu_hours: _Optional[float] = ...) -> None: ...

class SweepResponse(_message.Message):
    __slots__ = ("sweep_id", "job_ids")
    SWEEP_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    sweep_id: str
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, sweep_id: _Optional[str] = ..., job_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetQueuesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class QueueOverview(_message.Message):
    __slots__ = ("name", "priority", "max_running", "pools", "weight", "users", "teams", "waiting", "running", "fair_share_usage", "fair_share", "budget")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    TEAMS_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    FAIR_SHARE_USAGE_FIELD_NUMBER: _ClassVar[int]
    FAIR_SHARE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    name: str
    priority: int
    max_running: int
    pools: _containers.RepeatedScalarFieldContainer[str]
    weight: float
    users: _containers.RepeatedScalarFieldContainer[str]
    teams: _containers.RepeatedScalarFieldContainer[str]
    waiting: int
    running: int
    fair_share_usage: float
    fair_share: float
    budget: BudgetUsage
    def __init__(self, name: _Optional[str] = ..., priority: _Optional[int] = ..., max_running: _Optional[int] = ..., pools: _Optional[_Iterable[str]] = ..., weight: _Optional[float] = ..., users: _Optional[_Iterable[str]] = ..., teams: _Optional[_Iterable[str]] = ..., waiting: _Optional[int] = ..., running: _Optional[int] = ..., fair_share_usage: _Optional[float] = ..., fair_share: _Optional[float] = ..., budget: _Optional[_Union[BudgetUsage, _Mapping]] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("cpus", "memory_mb", "gpus")
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    cpus: float
    memory_mb: int
    gpus: int
    def __init__(self, cpus: _Optional[float] = ..., memory_mb: _Optional[int] = ..., gpus: _Optional[int] = ...) -> None: ...

class PoolOverview(_message.Message):
    __slots__ = ("name", "executor", "cpus", "memory_mb", "gpus", "max_jobs", "used", "jobs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    MAX_JOBS_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    name: str
    executor: str
    cpus: float
    memory_mb: int
    gpus: int
    max_jobs: int
    used: Usage
    jobs: int
    def __init__(self, name: _Optional[str] = ..., executor: _Optional[str] = ..., cpus: _Optional[float] = ..., memory_mb: _Optional[int] = ..., gpus: _Optional[int] = ..., max_jobs: _Optional[int] = ..., used: _Optional[_Union[Usage, _Mapping]] = ..., jobs: _Optional[int] = ...) -> None: ...

class TeamQuotaUsage(_message.Message):
    __slots__ = ("pool", "quota", "borrow_limit", "used")
    POOL_FIELD_NUMBER: _ClassVar[int]
    QUOTA_FIELD_NUMBER: _ClassVar[int]
    BORROW_LIMIT_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    pool: str
    quota: Usage
    borrow_limit: Usage
    used: Usage
    def __init__(self, pool: _Optional[str] = ..., quota: _Optional[_Union[Usage, _Mapping]] = ..., borrow_limit: _Optional[_Union[Usage, _Mapping]] = ..., used: _Optional[_Union[Usage, _Mapping]] = ...) -> None: ...

class TeamOverview(_message.Message):
    __slots__ = ("name", "members", "quotas")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    QUOTAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    members: _containers.RepeatedScalarFieldContainer[str]
    quotas: _containers.RepeatedCompositeFieldContainer[TeamQuotaUsage]
    def __init__(self, name: _Optional[str] = ..., members: _Optional[_Iterable[str]] = ..., quotas: _Optional[_Iterable[_Union[TeamQuotaUsage, _Mapping]]] = ...) -> None: ...

class QueuesOverview(_message.Message):
    __slots__ = ("queues", "pools", "teams", "max_running", "running", "source", "loaded_at", "fair_share_as_of", "team_budgets", "budgets_as_of")
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    TEAMS_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    LOADED_AT_FIELD_NUMBER: _ClassVar[int]
    FAIR_SHARE_AS_OF_FIELD_NUMBER: _ClassVar[int]
    TEAM_BUDGETS_FIELD_NUMBER: _ClassVar[int]
    BUDGETS_AS_OF_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedCompositeFieldContainer[QueueOverview]
    pools: _containers.RepeatedCompositeFieldContainer[PoolOverview]
    teams: _containers.RepeatedCompositeFieldContainer[TeamOverview]
    max_running: int
    running: int
    source: str
    loaded_at: _timestamp_pb2.Timestamp
    fair_share_as_of: _timestamp_pb2.Timestamp
    team_budgets: _containers.RepeatedCompositeFieldContainer[BudgetUsage]
    budgets_as_of: _timestamp_pb2.Timestamp
    def __init__(self, queues: _Optional[_Iterable[_Union[QueueOverview, _Mapping]]] = ..., pools: _Optional[_Iterable[_Union[PoolOverview, _Mapping]]] = ..., teams: _Optional[_Iterable[_Union[TeamOverview, _Mapping]]] = ..., max_running: _Optional[int] = ..., running: _Optional[int] = ..., source: _Optional[str] = ..., loaded_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., fair_share_as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., team_budgets: _Optional[_Iterable[_Union[BudgetUsage, _Mapping]]] = ..., budgets_as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WhoAmIRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Identity(_message.Message):
    __slots__ = ("user", "admin", "read_only", "teams", "single_user", "token_id")
    USER_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    TEAMS_FIELD_NUMBER: _ClassVar[int]
    SINGLE_USER_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    user: str
    admin: bool
    read_only: bool
    teams: _containers.RepeatedScalarFieldContainer[str]
    single_user: bool
    token_id: str
    def __init__(self, user: _Optional[str] = ..., admin: _Optional[bool] = ..., read_only: _Optional[bool] = ..., teams: _Optional[_Iterable[str]] = ..., single_user: _Optional[bool] = ..., token_id: _Optional[str] = ...) -> None: ...

class User(_message.Message):
    __slots__ = ("name", "admin", "teams", "created_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    TEAMS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    admin: bool
    teams: _containers.RepeatedScalarFieldContainer[str]
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., admin: _Optional[bool] = ..., teams: _Optional[_Iterable[str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateUserRequest(_message.Message):
    __slots__ = ("name", "admin")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    name: str
    admin: bool
    def __init__(self, name: _Optional[str] = ..., admin: _Optional[bool] = ...) -> None: ...

class ListUsersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListUsersResponse(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[User]
    def __init__(self, users: _Optional[_Iterable[_Union[User, _Mapping]]] = ...) -> None: ...

class Team(_message.Message):
    __slots__ = ("name", "members", "created_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    members: _containers.RepeatedScalarFieldContainer[str]
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., members: _Optional[_Iterable[str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateTeamRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListTeamsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTeamsResponse(_message.Message):
    __slots__ = ("teams",)
    TEAMS_FIELD_NUMBER: _ClassVar[int]
    teams: _containers.RepeatedCompositeFieldContainer[Team]
    def __init__(self, teams: _Optional[_Iterable[_Union[Team, _Mapping]]] = ...) -> None: ...

class AddTeamMemberRequest(_message.Message):
    __slots__ = ("team", "user")
    TEAM_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    team: str
    user: str
    def __init__(self, team: _Optional[str] = ..., user: _Optional[str] = ...) -> None: ...

class TokenInfo(_message.Message):
    __slots__ = ("id", "user", "read_only", "expires_at", "created_at", "revoked_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    REVOKED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    user: str
    read_only: bool
    expires_at: _timestamp_pb2.Timestamp
    created_at: _timestamp_pb2.Timestamp
    revoked_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., user: _Optional[str] = ..., read_only: _Optional[bool] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateTokenRequest(_message.Message):
    __slots__ = ("user", "expires_in_seconds", "read_only")
    USER_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_IN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    user: str
    expires_in_seconds: int
    read_only: bool
    def __init__(self, user: _Optional[str] = ..., expires_in_seconds: _Optional[int] = ..., read_only: _Optional[bool] = ...) -> None: ...

class CreateTokenResponse(_message.Message):
    __slots__ = ("info", "token")
    INFO_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    info: TokenInfo
    token: str
    def __init__(self, info: _Optional[_Union[TokenInfo, _Mapping]] = ..., token: _Optional[str] = ...) -> None: ...

class ListTokensRequest(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: str
    def __init__(self, user: _Optional[str] = ...) -> None: ...

class ListTokensResponse(_message.Message):
    __slots__ = ("tokens",)
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[TokenInfo]
    def __init__(self, tokens: _Optional[_Iterable[_Union[TokenInfo, _Mapping]]] = ...) -> None: ...

class RevokeTokenRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class QueueAccess(_message.Message):
    __slots__ = ("queue", "users", "teams")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    TEAMS_FIELD_NUMBER: _ClassVar[int]
    queue: str
    users: _containers.RepeatedScalarFieldContainer[str]
    teams: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, queue: _Optional[str] = ..., users: _Optional[_Iterable[str]] = ..., teams: _Optional[_Iterable[str]] = ...) -> None: ...

class ListQueueAccessRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListQueueAccessResponse(_message.Message):
    __slots__ = ("queues",)
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedCompositeFieldContainer[QueueAccess]
    def __init__(self, queues: _Optional[_Iterable[_Union[QueueAccess, _Mapping]]] = ...) -> None: ...

class AuditEvent(_message.Message):
    __slots__ = ("time", "actor", "action", "target", "allowed", "detail")
    TIME_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    time: _timestamp_pb2.Timestamp
    actor: str
    action: str
    target: str
    allowed: bool
    detail: str
    def __init__(self, time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor: _Optional[str] = ..., action: _Optional[str] = ..., target: _Optional[str] = ..., allowed: _Optional[bool] = ..., detail: _Optional[str] = ...) -> None: ...

class ListAuditRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListAuditResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[AuditEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[AuditEvent, _Mapping]]] = ...) -> None: ...

class ExportHistoryRequest(_message.Message):
    __slots__ = ("since", "page_size", "page_token")
    SINCE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    since: _timestamp_pb2.Timestamp
    page_size: int
    page_token: str
    def __init__(self, since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class HistoryJob(_message.Message):
    __slots__ = ("job_id", "name", "owner", "team", "queue", "priority", "resources", "state", "submitted_at", "ended_at", "ran_seconds", "launch_seconds", "attempts")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    TEAM_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    RAN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    name: str
    owner: str
    team: str
    queue: str
    priority: int
    resources: Resources
    state: JobState
    submitted_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    ran_seconds: float
    launch_seconds: float
    attempts: int
    def __init__(self, job_id: _Optional[str] = ..., name: _Optional[str] = ..., owner: _Optional[str] = ..., team: _Optional[str] = ..., queue: _Optional[str] = ..., priority: _Optional[int] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., state: _Optional[_Union[JobState, str]] = ..., submitted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ran_seconds: _Optional[float] = ..., launch_seconds: _Optional[float] = ..., attempts: _Optional[int] = ...) -> None: ...

class PoolInForce(_message.Message):
    __slots__ = ("name", "executor", "cpus", "memory_mb", "gpu_ids", "max_jobs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    GPU_IDS_FIELD_NUMBER: _ClassVar[int]
    MAX_JOBS_FIELD_NUMBER: _ClassVar[int]
    name: str
    executor: str
    cpus: float
    memory_mb: int
    gpu_ids: _containers.RepeatedScalarFieldContainer[str]
    max_jobs: int
    def __init__(self, name: _Optional[str] = ..., executor: _Optional[str] = ..., cpus: _Optional[float] = ..., memory_mb: _Optional[int] = ..., gpu_ids: _Optional[_Iterable[str]] = ..., max_jobs: _Optional[int] = ...) -> None: ...

class PolicyInForce(_message.Message):
    __slots__ = ("source", "text", "format", "max_running", "pools", "admins")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    ADMINS_FIELD_NUMBER: _ClassVar[int]
    source: str
    text: str
    format: str
    max_running: int
    pools: _containers.RepeatedCompositeFieldContainer[PoolInForce]
    admins: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, source: _Optional[str] = ..., text: _Optional[str] = ..., format: _Optional[str] = ..., max_running: _Optional[int] = ..., pools: _Optional[_Iterable[_Union[PoolInForce, _Mapping]]] = ..., admins: _Optional[_Iterable[str]] = ...) -> None: ...

class HistoryPage(_message.Message):
    __slots__ = ("jobs", "next_page_token", "policy", "total", "first_submit")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    FIRST_SUBMIT_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[HistoryJob]
    next_page_token: str
    policy: PolicyInForce
    total: int
    first_submit: _timestamp_pb2.Timestamp
    def __init__(self, jobs: _Optional[_Iterable[_Union[HistoryJob, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., policy: _Optional[_Union[PolicyInForce, _Mapping]] = ..., total: _Optional[int] = ..., first_submit: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Resources(_message.Message):
    __slots__ = ("cpus", "memory_mb", "gpus")
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    cpus: float
    memory_mb: int
    gpus: int
    def __init__(self, cpus: _Optional[float] = ..., memory_mb: _Optional[int] = ..., gpus: _Optional[int] = ...) -> None: ...

class DatasetRef(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class TrainRequest(_message.Message):
    __slots__ = ("name", "command", "dataset", "hyperparameters", "resources", "queue", "priority", "labels", "client_request_id", "image", "workers", "pipeline", "pipeline_max_parallel", "git_commit", "model_name", "framework", "max_attempts", "retry_on_failure", "retry_exit_codes", "time_limit_seconds", "pending_timeout_seconds", "after", "algorithm")
    class HyperparametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    HYPERPARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_MAX_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    GIT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    RETRY_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    RETRY_EXIT_CODES_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PENDING_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    name: str
    command: str
    dataset: DatasetRef
    hyperparameters: _containers.ScalarMap[str, str]
    resources: Resources
    queue: str
    priority: int
    labels: _containers.ScalarMap[str, str]
    client_request_id: str
    image: str
    workers: int
    pipeline: str
    pipeline_max_parallel: int
    git_commit: str
    model_name: str
    framework: str
    max_attempts: int
    retry_on_failure: bool
    retry_exit_codes: _containers.RepeatedScalarFieldContainer[int]
    time_limit_seconds: float
    pending_timeout_seconds: float
    after: _containers.RepeatedCompositeFieldContainer[JobDependency]
    algorithm: str
    def __init__(self, name: _Optional[str] = ..., command: _Optional[str] = ..., dataset: _Optional[_Union[DatasetRef, _Mapping]] = ..., hyperparameters: _Optional[_Mapping[str, str]] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., queue: _Optional[str] = ..., priority: _Optional[int] = ..., labels: _Optional[_Mapping[str, str]] = ..., client_request_id: _Optional[str] = ..., image: _Optional[str] = ..., workers: _Optional[int] = ..., pipeline: _Optional[str] = ..., pipeline_max_parallel: _Optional[int] = ..., git_commit: _Optional[str] = ..., model_name: _Optional[str] = ..., framework: _Optional[str] = ..., max_attempts: _Optional[int] = ..., retry_on_failure: _Optional[bool] = ..., retry_exit_codes: _Optional[_Iterable[int]] = ..., time_limit_seconds: _Optional[float] = ..., pending_timeout_seconds: _Optional[float] = ..., after: _Optional[_Iterable[_Union[JobDependency, _Mapping]]] = ..., algorithm: _Optional[str] = ...) -> None: ...

class TrainResponse(_message.Message):
    __slots__ = ("job_id", "existing")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    existing: bool
    def __init__(self, job_id: _Optional[str] = ..., existing: _Optional[bool] = ...) -> None: ...

class JobSpec(_message.Message):
    __slots__ = ("name", "command", "dataset", "hyperparameters", "resources", "queue", "priority", "labels", "image", "workers", "git_commit", "model_name", "framework", "max_attempts", "retry_on_failure", "retry_exit_codes", "time_limit_seconds", "pending_timeout_seconds", "after", "algorithm", "code_hash")
    class HyperparametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    HYPERPARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    GIT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    RETRY_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    RETRY_EXIT_CODES_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PENDING_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    CODE_HASH_FIELD_NUMBER: _ClassVar[int]
    name: str
    command: str
    dataset: DatasetRef
    hyperparameters: _containers.ScalarMap[str, str]
    resources: Resources
    queue: str
    priority: int
    labels: _containers.ScalarMap[str, str]
    image: str
    workers: int
    git_commit: str
    model_name: str
    framework: str
    max_attempts: int
    retry_on_failure: bool
    retry_exit_codes: _containers.RepeatedScalarFieldContainer[int]
    time_limit_seconds: float
    pending_timeout_seconds: float
    after: _containers.RepeatedCompositeFieldContainer[JobDependency]
    algorithm: AlgorithmRef
    code_hash: str
    def __init__(self, name: _Optional[str] = ..., command: _Optional[str] = ..., dataset: _Optional[_Union[DatasetRef, _Mapping]] = ..., hyperparameters: _Optional[_Mapping[str, str]] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., queue: _Optional[str] = ..., priority: _Optional[int] = ..., labels: _Optional[_Mapping[str, str]] = ..., image: _Optional[str] = ..., workers: _Optional[int] = ..., git_commit: _Optional[str] = ..., model_name: _Optional[str] = ..., framework: _Optional[str] = ..., max_attempts: _Optional[int] = ..., retry_on_failure: _Optional[bool] = ..., retry_exit_codes: _Optional[_Iterable[int]] = ..., time_limit_seconds: _Optional[float] = ..., pending_timeout_seconds: _Optional[float] = ..., after: _Optional[_Iterable[_Union[JobDependency, _Mapping]]] = ..., algorithm: _Optional[_Union[AlgorithmRef, _Mapping]] = ..., code_hash: _Optional[str] = ...) -> None: ...

class PendingReason(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class StateTransition(_message.Message):
    __slots__ = ("from_state", "to_state", "time", "reason")
    FROM_STATE_FIELD_NUMBER: _ClassVar[int]
    TO_STATE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    from_state: JobState
    to_state: JobState
    time: _timestamp_pb2.Timestamp
    reason: str
    def __init__(self, from_state: _Optional[_Union[JobState, str]] = ..., to_state: _Optional[_Union[JobState, str]] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class MetricValue(_message.Message):
    __slots__ = ("value", "step")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    value: float
    step: int
    def __init__(self, value: _Optional[float] = ..., step: _Optional[int] = ...) -> None: ...

class ModelArtifact(_message.Message):
    __slots__ = ("model_name", "version", "content_hash", "uri", "size_bytes", "file_count", "run_id", "created_at", "aliases", "dataset")
    MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    FILE_COUNT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    model_name: str
    version: int
    content_hash: str
    uri: str
    size_bytes: int
    file_count: int
    run_id: str
    created_at: _timestamp_pb2.Timestamp
    aliases: _containers.RepeatedScalarFieldContainer[str]
    dataset: DatasetRef
    def __init__(self, model_name: _Optional[str] = ..., version: _Optional[int] = ..., content_hash: _Optional[str] = ..., uri: _Optional[str] = ..., size_bytes: _Optional[int] = ..., file_count: _Optional[int] = ..., run_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., aliases: _Optional[_Iterable[str]] = ..., dataset: _Optional[_Union[DatasetRef, _Mapping]] = ...) -> None: ...

class PredictedStart(_message.Message):
    __slots__ = ("p50", "p90", "as_of", "cannot_start", "horizon_seconds")
    P50_FIELD_NUMBER: _ClassVar[int]
    P90_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    CANNOT_START_FIELD_NUMBER: _ClassVar[int]
    HORIZON_SECONDS_FIELD_NUMBER: _ClassVar[int]
    p50: _timestamp_pb2.Timestamp
    p90: _timestamp_pb2.Timestamp
    as_of: _timestamp_pb2.Timestamp
    cannot_start: str
    horizon_seconds: float
    def __init__(self, p50: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., p90: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cannot_start: _Optional[str] = ..., horizon_seconds: _Optional[float] = ...) -> None: ...

class TrainingStatus(_message.Message):
    __slots__ = ("job_id", "state", "queue_position", "pending_reason", "message", "has_exit_code", "exit_code", "transitions", "spec", "latest_metrics", "model", "submitted_at", "attempt", "malformed_metric_lines", "cancel_requested", "owner", "executor", "gpu_ids", "sweep_id", "retries", "retry_after", "predicted_start", "end_reason", "work_lost_seconds", "preemptions", "last_checkpoint_at", "sample_job_id")
    class LatestMetricsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: MetricValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[MetricValue, _Mapping]] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    PENDING_REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    HAS_EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    LATEST_METRICS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    MALFORMED_METRIC_LINES_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_FIELD_NUMBER: _ClassVar[int]
    GPU_IDS_FIELD_NUMBER: _ClassVar[int]
    SWEEP_ID_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_START_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    WORK_LOST_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PREEMPTIONS_FIELD_NUMBER: _ClassVar[int]
    LAST_CHECKPOINT_AT_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    state: JobState
    queue_position: int
    pending_reason: PendingReason
    message: str
    has_exit_code: bool
    exit_code: int
    transitions: _containers.RepeatedCompositeFieldContainer[StateTransition]
    spec: JobSpec
    latest_metrics: _containers.MessageMap[str, MetricValue]
    model: ModelArtifact
    submitted_at: _timestamp_pb2.Timestamp
    attempt: int
    malformed_metric_lines: int
    cancel_requested: bool
    owner: str
    executor: str
    gpu_ids: _containers.RepeatedScalarFieldContainer[str]
    sweep_id: str
    retries: int
    retry_after: _timestamp_pb2.Timestamp
    predicted_start: PredictedStart
    end_reason: str
    work_lost_seconds: float
    preemptions: int
    last_checkpoint_at: _timestamp_pb2.Timestamp
    sample_job_id: int
    def __init__(self, job_id: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., queue_position: _Optional[int] = ..., pending_reason: _Optional[_Union[PendingReason, _Mapping]] = ..., message: _Optional[str] = ..., has_exit_code: _Optional[bool] = ..., exit_code: _Optional[int] = ..., transitions: _Optional[_Iterable[_Union[StateTransition, _Mapping]]] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., latest_metrics: _Optional[_Mapping[str, MetricValue]] = ..., model: _Optional[_Union[ModelArtifact, _Mapping]] = ..., submitted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attempt: _Optional[int] = ..., malformed_metric_lines: _Optional[int] = ..., cancel_requested: _Optional[bool] = ..., owner: _Optional[str] = ..., executor: _Optional[str] = ..., gpu_ids: _Optional[_Iterable[str]] = ..., sweep_id: _Optional[str] = ..., retries: _Optional[int] = ..., retry_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., predicted_start: _Optional[_Union[PredictedStart, _Mapping]] = ..., end_reason: _Optional[str] = ..., work_lost_seconds: _Optional[float] = ..., preemptions: _Optional[int] = ..., last_checkpoint_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sample_job_id: _Optional[int] = ...) -> None: ...

class GetTrainingStatusRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("states", "queue", "labels", "page_size", "page_token")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    STATES_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    states: _containers.RepeatedScalarFieldContainer[JobState]
    queue: str
    labels: _containers.ScalarMap[str, str]
    page_size: int
    page_token: str
    def __init__(self, states: _Optional[_Iterable[_Union[JobState, str]]] = ..., queue: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class JobSummary(_message.Message):
    __slots__ = ("job_id", "name", "state", "queue", "priority", "submitted_at", "updated_at", "labels", "message", "predicted_start", "after", "end_reason")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_START_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    name: str
    state: JobState
    queue: str
    priority: int
    submitted_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    labels: _containers.ScalarMap[str, str]
    message: str
    predicted_start: PredictedStart
    after: _containers.RepeatedCompositeFieldContainer[JobDependency]
    end_reason: str
    def __init__(self, job_id: _Optional[str] = ..., name: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., queue: _Optional[str] = ..., priority: _Optional[int] = ..., submitted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., message: _Optional[str] = ..., predicted_start: _Optional[_Union[PredictedStart, _Mapping]] = ..., after: _Optional[_Iterable[_Union[JobDependency, _Mapping]]] = ..., end_reason: _Optional[str] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs", "next_page_token")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[JobSummary]
    next_page_token: str
    def __init__(self, jobs: _Optional[_Iterable[_Union[JobSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class CancelJobResponse(_message.Message):
    __slots__ = ("state",)
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: JobState
    def __init__(self, state: _Optional[_Union[JobState, str]] = ...) -> None: ...

class WatchJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class JobEvent(_message.Message):
    __slots__ = ("job_id", "transition", "final")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    TRANSITION_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    transition: StateTransition
    final: bool
    def __init__(self, job_id: _Optional[str] = ..., transition: _Optional[_Union[StateTransition, _Mapping]] = ..., final: _Optional[bool] = ...) -> None: ...

class StreamLogsRequest(_message.Message):
    __slots__ = ("job_id", "follow", "offset")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    follow: bool
    offset: int
    def __init__(self, job_id: _Optional[str] = ..., follow: _Optional[bool] = ..., offset: _Optional[int] = ...) -> None: ...

class LogChunk(_message.Message):
    __slots__ = ("data", "offset")
    DATA_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    offset: int
    def __init__(self, data: _Optional[bytes] = ..., offset: _Optional[int] = ...) -> None: ...

class RegisterDatasetRequest(_message.Message):
    __slots__ = ("name", "path")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    name: str
    path: str
    def __init__(self, name: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class DatasetVersion(_message.Message):
    __slots__ = ("name", "version", "size_bytes", "file_count", "created_at", "created", "run_count", "run_ids")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    FILE_COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    RUN_COUNT_FIELD_NUMBER: _ClassVar[int]
    RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    size_bytes: int
    file_count: int
    created_at: _timestamp_pb2.Timestamp
    created: bool
    run_count: int
    run_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., size_bytes: _Optional[int] = ..., file_count: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created: _Optional[bool] = ..., run_count: _Optional[int] = ..., run_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ListDatasetsRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListDatasetsResponse(_message.Message):
    __slots__ = ("datasets",)
    DATASETS_FIELD_NUMBER: _ClassVar[int]
    datasets: _containers.RepeatedCompositeFieldContainer[DatasetVersion]
    def __init__(self, datasets: _Optional[_Iterable[_Union[DatasetVersion, _Mapping]]] = ...) -> None: ...

class JobDependency(_message.Message):
    __slots__ = ("job_id", "condition", "state", "met")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CONDITION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MET_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    condition: str
    state: JobState
    met: bool
    def __init__(self, job_id: _Optional[str] = ..., condition: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., met: _Optional[bool] = ...) -> None: ...

class BudgetUsage(_message.Message):
    __slots__ = ("kind", "name", "period_seconds", "gpu_hours", "cpu_hours")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    CPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    kind: str
    name: str
    period_seconds: float
    gpu_hours: BudgetHours
    cpu_hours: BudgetHours
    def __init__(self, kind: _Optional[str] = ..., name: _Optional[str] = ..., period_seconds: _Optional[float] = ..., gpu_hours: _Optional[_Union[BudgetHours, _Mapping]] = ..., cpu_hours: _Optional[_Union[BudgetHours, _Mapping]] = ...) -> None: ...

class BudgetHours(_message.Message):
    __slots__ = ("used", "limit")
    USED_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    used: float
    limit: float
    def __init__(self, used: _Optional[float] = ..., limit: _Optional[float] = ...) -> None: ...

class SweepListRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class SweepListResponse(_message.Message):
    __slots__ = ("sweeps", "next_page_token")
    SWEEPS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    sweeps: _containers.RepeatedCompositeFieldContainer[SweepStatus]
    next_page_token: str
    def __init__(self, sweeps: _Optional[_Iterable[_Union[SweepStatus, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class SweepGetRequest(_message.Message):
    __slots__ = ("sweep_id",)
    SWEEP_ID_FIELD_NUMBER: _ClassVar[int]
    sweep_id: str
    def __init__(self, sweep_id: _Optional[str] = ...) -> None: ...

class SweepActionRequest(_message.Message):
    __slots__ = ("sweep_id",)
    SWEEP_ID_FIELD_NUMBER: _ClassVar[int]
    sweep_id: str
    def __init__(self, sweep_id: _Optional[str] = ...) -> None: ...

class SweepTrial(_message.Message):
    __slots__ = ("job_id", "name", "state", "hyperparameters", "latest_metrics", "has_best", "best", "end_reason", "message", "attempt")
    class HyperparametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LatestMetricsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    HYPERPARAMETERS_FIELD_NUMBER: _ClassVar[int]
    LATEST_METRICS_FIELD_NUMBER: _ClassVar[int]
    HAS_BEST_FIELD_NUMBER: _ClassVar[int]
    BEST_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    name: str
    state: JobState
    hyperparameters: _containers.ScalarMap[str, str]
    latest_metrics: _containers.ScalarMap[str, float]
    has_best: bool
    best: float
    end_reason: str
    message: str
    attempt: int
    def __init__(self, job_id: _Optional[str] = ..., name: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., hyperparameters: _Optional[_Mapping[str, str]] = ..., latest_metrics: _Optional[_Mapping[str, float]] = ..., has_best: _Optional[bool] = ..., best: _Optional[float] = ..., end_reason: _Optional[str] = ..., message: _Optional[str] = ..., attempt: _Optional[int] = ...) -> None: ...

class SweepStatus(_message.Message):
    __slots__ = ("sweep_id", "name", "owner", "created_at", "state", "message", "max_parallel", "objective", "early_stop", "min_steps", "reduction", "max_trials", "max_gpu_hours", "max_cpu_hours", "trial_counts", "total_trials", "stopped_early", "launched_trials", "gpu_hours", "cpu_hours", "trials", "best")
    class TrialCountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    SWEEP_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MAX_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    EARLY_STOP_FIELD_NUMBER: _ClassVar[int]
    MIN_STEPS_FIELD_NUMBER: _ClassVar[int]
    REDUCTION_FIELD_NUMBER: _ClassVar[int]
    MAX_TRIALS_FIELD_NUMBER: _ClassVar[int]
    MAX_GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    MAX_CPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    TRIAL_COUNTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TRIALS_FIELD_NUMBER: _ClassVar[int]
    STOPPED_EARLY_FIELD_NUMBER: _ClassVar[int]
    LAUNCHED_TRIALS_FIELD_NUMBER: _ClassVar[int]
    GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    CPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    TRIALS_FIELD_NUMBER: _ClassVar[int]
    BEST_FIELD_NUMBER: _ClassVar[int]
    sweep_id: str
    name: str
    owner: str
    created_at: _timestamp_pb2.Timestamp
    state: str
    message: str
    max_parallel: int
    objective: str
    early_stop: str
    min_steps: int
    reduction: int
    max_trials: int
    max_gpu_hours: float
    max_cpu_hours: float
    trial_counts: _containers.ScalarMap[str, int]
    total_trials: int
    stopped_early: int
    launched_trials: int
    gpu_hours: float
    cpu_hours: float
    trials: _containers.RepeatedCompositeFieldContainer[SweepTrial]
    best: SweepTrial
    def __init__(self, sweep_id: _Optional[str] = ..., name: _Optional[str] = ..., owner: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., state: _Optional[str] = ..., message: _Optional[str] = ..., max_parallel: _Optional[int] = ..., objective: _Optional[str] = ..., early_stop: _Optional[str] = ..., min_steps: _Optional[int] = ..., reduction: _Optional[int] = ..., max_trials: _Optional[int] = ..., max_gpu_hours: _Optional[float] = ..., max_cpu_hours: _Optional[float] = ..., trial_counts: _Optional[_Mapping[str, int]] = ..., total_trials: _Optional[int] = ..., stopped_early: _Optional[int] = ..., launched_trials: _Optional[int] = ..., gpu_hours: _Optional[float] = ..., cpu_hours: _Optional[float] = ..., trials: _Optional[_Iterable[_Union[SweepTrial, _Mapping]]] = ..., best: _Optional[_Union[SweepTrial, _Mapping]] = ...) -> None: ...
