from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class GetAttemptRequest(_message.Message):
    __slots__ = ("node", "rank")
    NODE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    node: str
    rank: int
    def __init__(self, node: _Optional[str] = ..., rank: _Optional[int] = ...) -> None: ...

class Attempt(_message.Message):
    __slots__ = ("job_id", "attempt", "dataset_hash", "dataset_bytes", "dataset_files", "has_checkpoint", "heartbeat_interval_s", "code_hash", "code_bytes", "code_files")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DATASET_HASH_FIELD_NUMBER: _ClassVar[int]
    DATASET_BYTES_FIELD_NUMBER: _ClassVar[int]
    DATASET_FILES_FIELD_NUMBER: _ClassVar[int]
    HAS_CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_S_FIELD_NUMBER: _ClassVar[int]
    CODE_HASH_FIELD_NUMBER: _ClassVar[int]
    CODE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CODE_FILES_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    attempt: int
    dataset_hash: str
    dataset_bytes: int
    dataset_files: int
    has_checkpoint: bool
    heartbeat_interval_s: float
    code_hash: str
    code_bytes: int
    code_files: int
    def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., dataset_hash: _Optional[str] = ..., dataset_bytes: _Optional[int] = ..., dataset_files: _Optional[int] = ..., has_checkpoint: _Optional[bool] = ..., heartbeat_interval_s: _Optional[float] = ..., code_hash: _Optional[str] = ..., code_bytes: _Optional[int] = ..., code_files: _Optional[int] = ...) -> None: ...

class PullDatasetRequest(_message.Message):
    __slots__ = ("content_hash",)
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    content_hash: str
    def __init__(self, content_hash: _Optional[str] = ...) -> None: ...

class PullCheckpointRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PullCodeRequest(_message.Message):
    __slots__ = ("content_hash",)
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    content_hash: str
    def __init__(self, content_hash: _Optional[str] = ...) -> None: ...

class FileChunk(_message.Message):
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

class PushFilesReply(_message.Message):
    __slots__ = ("files", "bytes")
    FILES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    files: int
    bytes: int
    def __init__(self, files: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class PushRequest(_message.Message):
    __slots__ = ("stream", "rank", "first_seq", "lines", "exit_code")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    stream: str
    rank: int
    first_seq: int
    lines: _containers.RepeatedScalarFieldContainer[bytes]
    exit_code: int
    def __init__(self, stream: _Optional[str] = ..., rank: _Optional[int] = ..., first_seq: _Optional[int] = ..., lines: _Optional[_Iterable[bytes]] = ..., exit_code: _Optional[int] = ...) -> None: ...

class PushReply(_message.Message):
    __slots__ = ("next_seq", "stop_requested", "preempt_notice", "notice_signal", "notice_grace_s")
    NEXT_SEQ_FIELD_NUMBER: _ClassVar[int]
    STOP_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    PREEMPT_NOTICE_FIELD_NUMBER: _ClassVar[int]
    NOTICE_SIGNAL_FIELD_NUMBER: _ClassVar[int]
    NOTICE_GRACE_S_FIELD_NUMBER: _ClassVar[int]
    next_seq: int
    stop_requested: bool
    preempt_notice: bool
    notice_signal: str
    notice_grace_s: float
    def __init__(self, next_seq: _Optional[int] = ..., stop_requested: _Optional[bool] = ..., preempt_notice: _Optional[bool] = ..., notice_signal: _Optional[str] = ..., notice_grace_s: _Optional[float] = ...) -> None: ...
