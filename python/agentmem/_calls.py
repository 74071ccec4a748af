"""Where an adapter's engine calls run in an asyncio program: in the event loop or on a worker thread."""

from __future__ import annotations

import asyncio
import enum
from typing import Callable, TypeVar

__all__ = ["EngineCalls", "Blocking"]

T = TypeVar("T")


class EngineCalls(enum.Enum):
    """Where an adapter runs the engine's calls during an asyncio run."""

    AUTO = "auto"
    """In the event loop's thread when the call cannot take long (no thread hop: tens of microseconds
    saved, more on a busy machine), on a worker thread when it may: an append synced to disk
    (durability ``always`` or ``batch``), a compaction due or asked for, the first context
    prepared after the session opened."""
    WORKER_THREAD = "worker-thread"
    """Always on a worker thread (``asyncio.to_thread``): the event loop serves other tasks meanwhile."""
    IN_EVENT_LOOP = "in-event-loop"
    """Always in the event loop's own thread: no thread hop per call, the loop waits for the engine
    (milliseconds; a compaction, tens to hundreds)."""


class Blocking(enum.Enum):
    """What a call is expected to do, for :class:`EngineCalls.AUTO`."""

    QUICK = "quick"
    """Memory work only: microseconds to a millisecond."""
    MAY_BLOCK = "may-block"
    """Disk syncs, a compaction or a first read of the session: milliseconds or more."""


async def call(engine_calls: EngineCalls, blocking: Blocking, function: Callable[..., T], *arguments: object) -> T:
    """``function(*arguments)``, in the event loop or on a worker thread as ``engine_calls`` says for a call that is ``blocking``."""
    match engine_calls:
        case EngineCalls.WORKER_THREAD:
            return await asyncio.to_thread(function, *arguments)
        case EngineCalls.IN_EVENT_LOOP:
            return function(*arguments)
        case EngineCalls.AUTO:
            match blocking:
                case Blocking.QUICK:
                    return function(*arguments)
                case Blocking.MAY_BLOCK:
                    return await asyncio.to_thread(function, *arguments)
