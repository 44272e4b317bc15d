"""The reader's fast path for SSE streams: whole ``data:`` blocks read straight from bytes.

An acceleration (:mod:`railings.accelerations`): :class:`FastStreamReader` is the plain
reader, the specification, with this layer on top; below is why it returns the same.

Nearly every block an LLM provider sends is ``data: {json}\\n\\n`` or ``event: name\\n
data: {json}\\n\\n``, and nearly every one of those is a text or argument fragment. For
those, the plain path decodes the bytes to text, runs the WHATWG line rules, builds a
:class:`~railings.wire.sse.ServerSentEvent`, encodes the data back to bytes for jiter,
walks the decoder's handler tables and dispatches each event in the assembler.
:meth:`FastStreamReader._fast` does the same work in one loop over the bytes: ``bytes.split``
at the blank lines, the JSON parsed from the chunk's own bytes, the decoder's commonest
block recognised by one function (``feed_common``) that builds its one event directly,
else its handler table called directly (``feed_sse_object``), the fragment appended
where the assembler keeps it, and the termination state looked at only after a proof or
a provider error, the only events that end a turn.

What it skips, and why the result is the same (events, :class:`~railings.turn.model.Turn`,
verdict, ``events_seen`` and the SSE decoder's state):

* It runs only from a block boundary (:attr:`SSEDecoder.between_blocks`: nothing
  buffered, no CR pending, no invalid UTF-8 seen yet), on a chunk that has no CR and is
  no larger than the event size limit (so the plain path could not have raised
  ``EventTooLarge`` on it either). There a block of LF-ended lines ``data: X`` or
  ``event: N`` + ``data: X`` is, by WHATWG's rules, exactly one event ``(N or
  "message", X)``: no BOM can be stripped, no ID or retry changes, no comment counted.
* Each block it reads is valid UTF-8: ``data: `` and the ``event:`` line's name are
  decoded strictly (the name once per stream, cached), and the data is parsed from its
  bytes, which accepts nothing but UTF-8 (``parse_bytes``). A block that is not stops the
  loop there, so the SSE decoder sees and counts it. The blocks read before it are the
  plain path's too: its invalid-UTF-8 rule faults only the events from the first
  invalid bytes on (:attr:`SSEDecoder.clean_events`), so a U+FFFD the model wrote in a
  block before them is text on both paths.
* Each block is decoded only when its data is one line that jiter (or the stdlib's
  scanner) parses to an object: ``load_object`` would then return the same object,
  and ``feed_sse_object`` is the decoder's ``feed`` after that parse (``[DONE]`` and the
  other non-JSON data are not objects).
* ``feed_common(event, obj)`` returns the one event ``feed_sse_object`` would return for
  the decoder's commonest shape (an OpenAI content or argument chunk whose fields repeat
  the last ones checked, an Anthropic ``text_delta`` or ``input_json_delta``, a Responses
  ``output_text.delta``), or None having changed nothing; ``tests/test_fastpath_common.py``
  holds each decoder's two answers equal. Such an event is a non-empty text or a
  fragment that is the model's text, never an end: applying it is one append to the list
  the assembler names (``open_text``, ``open_fragments``), and no termination check
  follows it.
* A block that is the last common block's envelope with other values in it (OpenAI's
  chunks: only the text, the arguments and the padding change; Anthropic's deltas: only
  the text or the input fragment) is read by the decoder's block template
  (``turn/template.py``) without parsing it: the template returns the event
  ``feed_common`` would return for the object the block parses to, or None, and the
  block is then parsed as above. The template is learned from a block ``feed_common``
  took, at most ``_LEARNS`` times per stream. The Responses API's text deltas have three
  holes in a small object, which jiter parses for less than a template reads them
  (``bench/templates.py``, ``docs/PERFORMANCE.md``), so its decoder offers none.
* The field lines of the last block (``data: `` or an ``event:`` line and ``data: ``) are
  kept with the event they name: a block that starts with those bytes is that event's
  data, as the ``event:`` line holds no LF.
* Anything else -- a comment, an ``id:`` or ``retry:`` field, ``data:`` without its
  space, several data lines, data that is not a JSON object, a decoder or framing
  without a ``feed_sse_object`` -- stops the loop at that block's first byte, a block
  boundary, and the rest of the chunk goes through the plain path, which from a
  boundary decodes it exactly as it would have inside the whole chunk.
* Around it (:class:`FastStreamReader`): a chunk that starts inside a block gives the
  decoder that block's end first (up to its blank line), then the fast path reads from
  there (a chunk that does not end the block is the decoder's whole, as the fast path
  could read none of it); the start of a block a chunk ends in is held back and
  prepended to the next chunk (or given to the decoder at close): from a boundary it
  completes no event, and the decoder is split-invariant. Wires whose usage follows the
  proof (Bedrock), other framings and ``auto`` streams not yet recognised never take it.

``tests/test_fastpath.py`` checks the two paths equal on arbitrary streams cut anywhere.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import Any

from railings.errors import MalformedStream
from railings.events import (
    ProviderErrorEvent,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ToolArgumentsDelta,
)
from railings.turn.reader import StreamReader
from railings.turn.template import BlockTemplate
from railings.turn.termination import State
from railings.wire._events import Holes
from railings.wire._json import parse_bytes
from railings.wire.blocks import split_plain
from railings.wire.sse import SSEDecoder

__all__ = ["FastStreamReader", "FeedCommon", "FeedObject", "eligible"]

FeedObject = Callable[[str, dict[str, Any]], list[StreamEvent]]
FeedCommon = Callable[[str, dict[str, Any]], StreamEvent | None]
HolesOf = Callable[[str, dict[str, Any], StreamEvent], Holes]

_ENDING = (TerminationProof, ProviderErrorEvent)  # the events after which a turn may be over
_STREAMING = State.STREAMING
_utf8_decode = codecs.utf_8_decode
_NAMES = 64  # how many event names one stream's cache keeps
_LEARNS = 8  # how many block templates one stream may learn (template.py)
# The most bytes of an unfinished SSE block the fast path holds back; a longer block goes
# to the SSE decoder, which joins a long line's pieces only once.
_CARRY_LIMIT = 32 * 1024


def eligible(chunk: bytes, limit: int) -> bool:
    """Whether the fast path may read ``chunk`` (once the decoder is between blocks):
    ``bytes`` (not another buffer), no CR, valid UTF-8 up to a character its end may cut,
    at most ``limit`` bytes."""
    if type(chunk) is not bytes or len(chunk) > limit or 13 in chunk:  # 13: CR, by memchr
        return False
    if chunk.isascii():
        return True
    try:
        _utf8_decode(chunk, "strict", False)
    except UnicodeDecodeError:
        return False
    return True


def _no_common(event: str, obj: dict[str, Any]) -> StreamEvent | None:
    """The ``feed_common`` of a decoder without one: every block goes to its table."""
    return None


def _length(blocks: list[bytes], count: int) -> int:
    """The bytes of the first ``count`` blocks, each with its blank line."""
    return sum(map(len, blocks[:count])) + 2 * count


class FastStreamReader(StreamReader):
    """:class:`~railings.turn.reader.StreamReader` with the fast path (``StreamReader(...)``
    while the accelerations are on): which chunks go to :meth:`_fast`, and the bytes it
    holds back (the start of a block, so the SSE decoder stays between blocks; it completes
    no event, so the decoder gets it with the next bytes, or at close, the same)."""

    accelerated = True

    def __init__(self, provider: str = "auto", **options: Any) -> None:
        super().__init__(provider, **options)
        self._carry = b""  # the bytes held back
        self._ready: FeedObject | None = None  # set while feed may go to _fast directly
        self._names: dict[bytes, str] = {}  # the event names decoded so far
        self._fields: tuple[bytes, str, int] = (b"data: ", "message", 6)  # see _fast
        self._fast_for: object = None  # the decoder whose entry _fast_entry caches
        self._fast_entry: FeedObject | None = None
        self._common: FeedCommon = _no_common  # the decoder's feed_common, if it has one
        # The call whose fragment list the assembler opened (open_fragments), and the list.
        self._fragments: tuple[int, list[str] | None] = (-1, None)
        self._holes: HolesOf | None = None  # the decoder's common_template, if it has one
        self._template: BlockTemplate | None = None  # the last common block's (template.py)
        self._learns = _LEARNS  # how many more templates this stream may learn

    def __getstate__(self) -> dict[str, Any]:
        """A pickled copy (the fuzz's forking reader) keeps no learned template: its checks
        are closures pickle cannot copy, and it only caches what ``feed_common`` returns."""
        state = self.__dict__.copy()
        state["_template"] = None
        state["_learns"] = 0
        return state

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The plain ``feed``'s events, by :meth:`_fast` where it may read the chunk."""
        ready, assembler = self._ready, self._assembler
        if ready and chunk and assembler and assembler.machine.state is _STREAMING:
            # Nothing changed since _fast last read: the turn is open and the SSE decoder
            # between blocks, so every check of the plain feed passes.
            return self._fast(ready, chunk, [])
        return super().feed(chunk)

    def close(self, *, clean: bool = True) -> list[StreamEvent]:
        """The plain ``close``, after the bytes held back went to the decoder."""
        if self._closed:
            return []
        self._ready = None
        out: list[StreamEvent] = []
        if self._carry:
            chunk, self._carry = self._carry, b""
            out += self._decode(chunk, False, [])
        return out + super().close(clean=clean)

    def _frames(self, chunk: bytes, *, final: bool) -> list[StreamEvent]:
        """``chunk`` for an SSE stream: by the fast path where it may read it, else (and
        after it) by the plain one, ``_decode``."""
        self._ready = None
        framer_ = self._framer
        if final or type(framer_) is not SSEDecoder:
            return super()._frames(chunk, final=final)
        out: list[StreamEvent] = []
        feed_object = self._feed_object()
        # Where the decoder is inside a block (nothing is held back then) the block's end
        # goes to it first; a chunk that does not end the block is all the decoder's, and
        # is not checked for the fast path (a long event's pieces are decoded once).
        cut = -1
        if (
            feed_object is not None
            and self._assembler is not None
            and self._assembler.machine.state is _STREAMING
            and not framer_.invalid_utf8
            and (framer_.between_blocks or self._carry or (cut := chunk.find(b"\n\n") + 2) > 1)
            and eligible(self._carry + chunk if self._carry else chunk, self._max)
        ):
            if self._carry:
                chunk, self._carry = self._carry + chunk, b""
            if cut > 1:
                # The end of the block the decoder is in goes to it: it is then between
                # blocks (the whole chunk is valid UTF-8 without CR).
                self._decode(chunk[:cut], False, out)
                chunk = chunk[cut:]
                if self.terminated and not self.reads_on:
                    self.events_seen += len(framer_.feed(chunk)) if chunk else 0
                    return out
                if not framer_.between_blocks or not chunk:
                    return self._decode(chunk, False, out) if chunk else out
            return self._fast(feed_object, chunk, out)
        if self._carry:
            chunk, self._carry = self._carry + chunk, b""
        return self._decode(chunk, False, out)

    def _fast(  # noqa: C901 -- one loop on purpose: each call it saves is per event
        self, feed_object: FeedObject, chunk: bytes, out: list[StreamEvent]
    ) -> list[StreamEvent]:
        """``chunk`` (after the bytes held back), fed with the SSE decoder between blocks
        and the turn streaming: its plain blocks read straight from the bytes, the rest of
        it (from the first other block) by the plain path, ``_decode``. What it skips, and
        why the result is the plain path's, is the module docstring; a fault ends the turn
        here too."""
        if self._carry:
            chunk, self._carry = self._carry + chunk, b""
        framer_ = self._framer
        assembler = self._assembler
        if not (
            type(chunk) is bytes
            and len(chunk) <= self._max
            and 13 not in chunk  # CR, by memchr (its UTF-8 is checked block by block)
            and type(framer_) is SSEDecoder
            and assembler is not None
        ):
            self._ready = None
            return self._decode(chunk, False, out)
        blocks, rest = split_plain(chunk)  # rest: what follows the last blank line
        names, common, template = self._names, self._common, self._template
        apply, append = assembler.apply, out.append
        texts = assembler.open_text
        at, fragments = self._fragments
        frames = 0
        # The last block's field lines up to its data (b"data: ", or an event: line and
        # b"\ndata: "), the event they name, and their length: a block that starts with
        # them is that event's (the event: line holds no LF, so its data line is the next).
        prefix, named, cut = self._fields
        for block in blocks:
            if block.startswith(prefix):
                event = named
                data = block[cut:]
            elif block[:6] == b"data: ":
                prefix, named, cut = b"data: ", "message", 6
                event = named
                data = block[6:]
            elif block[:6] == b"event:":
                line, _, data = block.partition(b"\ndata: ")  # no data line: b"", not JSON
                try:
                    event = names[line]
                except KeyError:
                    if line[6:7] != b" " or 10 in line:  # LF
                        break  # no space after the colon, or another field between the two
                    try:
                        event = line[7:].decode() or "message"
                    except UnicodeDecodeError:
                        break  # not UTF-8: the SSE decoder's to replace and count
                    if len(names) < _NAMES:
                        names[line] = event
                prefix = line + b"\ndata: "
                named, cut = event, len(prefix)
            else:
                break
            if 10 in data:  # LF
                break  # several data lines, or a field after the data
            item = None
            if template is not None and event == template.event:
                item = template.read(data)  # the last common block's envelope: no parse
            if item is None:
                try:
                    obj = parse_bytes(data)
                except Exception:  # not JSON, or not what the fast parser accepts
                    break
                if type(obj) is not dict:
                    break
                item = common(event, obj)
                if item is not None and self._learns:
                    template = self._learn(event, data, obj, item)
            frames += 1
            if item is not None:  # a text or argument fragment: never an end
                kind = type(item)
                if kind is TextDelta and texts is not None:
                    texts.append(item.text)  # type: ignore[union-attr]
                elif kind is ToolArgumentsDelta and fragments is not None and item.index == at:  # type: ignore[union-attr]
                    fragments.append(item.fragment)  # type: ignore[union-attr]
                else:
                    apply(item)
                    texts = assembler.open_text
                    if kind is ToolArgumentsDelta:
                        at = item.index  # type: ignore[union-attr]
                        fragments = assembler.open_fragments(at)
                        if fragments is not None:  # open for the rest of the turn
                            self._fragments = at, fragments
                append(item)
                continue
            try:
                normalized = feed_object(event, obj)
            except MalformedStream as exc:
                assembler.fault(str(exc))
                return self._ended(framer_, chunk, _length(blocks, frames), frames, out)
            for item in normalized:
                apply(item)
                append(item)
                if isinstance(item, _ENDING) and assembler.machine.terminated:
                    return self._ended(framer_, chunk, _length(blocks, frames), frames, out)
            texts = assembler.open_text
        else:
            # Every block read: what follows the last one is held back (see the class).
            self._fields = prefix, named, cut
            self.events_seen += frames
            if len(rest) < len(chunk):
                framer_.skip(len(chunk) - len(rest))
            if len(rest) <= _CARRY_LIMIT:
                self._carry = rest
                self._ready = feed_object
                return out
            self._ready = None
            return self._decode(rest, False, out)
        # Another block: it and what follows go through the plain path, from a boundary.
        read = _length(blocks, frames)
        self.events_seen += frames
        framer_.skip(read)
        self._ready = None
        return self._decode(chunk[read:], False, out)

    def _ended(
        self, framer_: SSEDecoder, chunk: bytes, read: int, frames: int, out: list[StreamEvent]
    ) -> list[StreamEvent]:
        """The turn ended at the block that ends at ``read``: the SSE decoder still counts
        the events after it in the chunk, as the plain path decodes the whole chunk before
        the end is seen."""
        self.events_seen += frames
        framer_.skip(read)
        self._ready = None
        if read < len(chunk):
            self.events_seen += len(framer_.feed(chunk[read:]))
        return out

    def _feed_object(self) -> FeedObject | None:
        """The decoder's ``feed_sse_object`` when the fast path may use it: a known wire
        with no usage after its proof (so the first end is the end)."""
        decoder = self._decoder
        if decoder is not self._fast_for:
            self._fast_for = decoder
            wire = self._spec
            found = getattr(decoder, "feed_sse_object", None)
            usable = wire is not None and not wire.usage_after_proof and callable(found)
            self._fast_entry = found if usable else None
            common = getattr(decoder, "feed_common", None)
            self._common = common if usable and callable(common) else _no_common
            holes = getattr(decoder, "common_template", None)
            self._holes = holes if self._common is common and callable(holes) else None
            self._template = None
            self._learns = _LEARNS if self._holes is not None else 0
        return self._fast_entry

    def _learn(
        self, event: str, data: bytes, obj: dict[str, Any], item: StreamEvent
    ) -> BlockTemplate | None:
        """The template of a block ``feed_common`` took, kept for the blocks after it; or
        None, when none can be made of it (a template kept before, which did not fit this
        block, is dropped)."""
        self._learns -= 1
        holes = self._holes
        template = (
            None
            if holes is None
            else BlockTemplate.learn(event, data, obj, *holes(event, obj, item))
        )
        self._template = template
        return template
