"""Group API requests sent in process: build JoinGroup and friends, dispatch them, decode the answer."""

from __future__ import annotations

import datetime
import struct
from typing import Any

from kio.serial import entity_reader
from kio.static.primitive import i32Timedelta

from coordinator.net.dispatch import Deferred, Dispatcher
from tests.support.dispatch import InProcess
from tests.support.wire_client import request_frame, response_class_for


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def schema(api: str, version: int, kind: str = "request"):
    import importlib

    return importlib.import_module(f"kio.schema.{api}.v{version}.{kind}")


async def call(proc: InProcess, request: Any, client_id: str | None = "tester") -> Any:
    frame = request_frame(request, 9, client_id)[4:]
    out = proc.dispatcher.dispatch(frame, "10.0.0.1", 5555)
    if isinstance(out, Deferred):
        await out.future
        out = Dispatcher.finish(out)
    assert isinstance(out, bytes)
    cls = response_class_for(request)
    offset = 8 if cls.__header_schema__.__version__ == 0 else 9
    response, used = entity_reader(cls)(out, offset)
    assert offset + used == len(out) and struct.unpack_from(">i", out, 4)[0] == 9
    return response


def join_request(version: int, member_id: str = "", group_id: str = "g", session: int = 10000, **extra):
    mod = schema("join_group", version)
    kwargs = dict(group_id=group_id, session_timeout=ms(session), member_id=member_id, protocol_type="consumer",
                  protocols=(mod.JoinGroupRequestProtocol(name="range", metadata=b"meta"),))
    if version >= 1:
        kwargs["rebalance_timeout"] = ms(extra.pop("rebalance", session))
    if version >= 5:
        kwargs["group_instance_id"] = extra.pop("instance", None)
    if version >= 8:
        kwargs["reason"] = extra.pop("reason", None)
    return mod.JoinGroupRequest(**kwargs, **extra)
