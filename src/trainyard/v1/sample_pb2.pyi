from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TrainingStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    queuing: _ClassVar[TrainingStatus]
    launch: _ClassVar[TrainingStatus]
    running: _ClassVar[TrainingStatus]
    succeed: _ClassVar[TrainingStatus]
    failure: _ClassVar[TrainingStatus]
queuing: TrainingStatus
launch: TrainingStatus
running: TrainingStatus
succeed: TrainingStatus
failure: TrainingStatus

class TrainingJobMetadata(_message.Message):
    __slots__ = ("algorithm", "dataset_id", "name", "train_data_version_hash", "parameters")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    DATASET_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TRAIN_DATA_VERSION_HASH_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    algorithm: str
    dataset_id: str
    name: str
    train_data_version_hash: str
    parameters: _containers.ScalarMap[str, str]
    def __init__(self, algorithm: _Optional[str] = ..., dataset_id: _Optional[str] = ..., name: _Optional[str] = ..., train_data_version_hash: _Optional[str] = ..., parameters: _Optional[_Mapping[str, str]] = ...) -> None: ...

class TrainRequest(_message.Message):
    __slots__ = ("metadata",)
    METADATA_FIELD_NUMBER: _ClassVar[int]
    metadata: TrainingJobMetadata
    def __init__(self, metadata: _Optional[_Union[TrainingJobMetadata, _Mapping]] = ...) -> None: ...

class TrainResponse(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    def __init__(self, job_id: _Optional[int] = ...) -> None: ...

class GetTrainingStatusRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    def __init__(self, job_id: _Optional[int] = ...) -> None: ...

class GetTrainingStatusResponse(_message.Message):
    __slots__ = ("status", "job_id", "message", "metadata", "positionInQueue")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    POSITIONINQUEUE_FIELD_NUMBER: _ClassVar[int]
    status: TrainingStatus
    job_id: int
    message: str
    metadata: TrainingJobMetadata
    positionInQueue: int
    def __init__(self, status: _Optional[_Union[TrainingStatus, str]] = ..., job_id: _Optional[int] = ..., message: _Optional[str] = ..., metadata: _Optional[_Union[TrainingJobMetadata, _Mapping]] = ..., positionInQueue: _Optional[int] = ...) -> None: ...
