"""The Empty table: which stream events are known to carry nothing billable.

Theory of operation. A turn that ends without its termination proof is **Empty**
(resent transparently) only when *every* event it received is known to carry
nothing billable; anything else makes it **Partial** (kept as it is, never
resent: the output was already billed, and a resend would bill it twice). The
rule is stated over the normalized events (:mod:`railings.events`), which every
decoder of the six wires emits, so this one table decides for all of them; the
decoders' part is to emit an event for everything billed (:class:`BilledOutput`
where the turn keeps nothing of it, :class:`Unknown` for what they do not know).

=====================================  ========  =============================================
event                                  billable  why
=====================================  ========  =============================================
``MessageStart``                       no        the response's id and model
``UsageUpdate`` of the opening          no        the count before any output: Anthropic's
                                                 ``message_start`` reports a few output
                                                 tokens before any output exists
``UsageUpdate`` up to the baseline     no        an output count no larger than the opening
                                                 report's (0 without one): nothing billed
                                                 since, as far as the count says
``UsageUpdate`` above the baseline     yes       the provider says it billed output the
                                                 stream may never show: hidden reasoning
                                                 (Chat ``reasoning_tokens``, Gemini
                                                 ``thoughtsTokenCount``), or Anthropic's
                                                 running count in ``message_delta``
``ProviderErrorEvent``                 no        an error is not output (it ends the turn)
``TerminationProof``                   no        it ends the turn, which is then finished
``TextDelta`` / ``RefusalDelta`` ""    no        OpenAI's first chunk (``"content": ""``)
``TextDelta`` / ``RefusalDelta``       yes       the answer, or the model's refusal
``ThinkingDelta``                      yes       reasoning text, a signature or redacted
                                                 (encrypted) reasoning: all billed output;
                                                 only one with all three empty is not
``ToolCallStart``                      yes       a call, local or provider-run
``ToolArgumentsDelta``                 yes       a call's arguments
``ToolCallEnd``                        yes       closes a call (never seen without one)
``ServerToolResult``                   yes       provider-run tool activity
``OutputItems``                        yes       the finished output items (unless none)
``StopReason``                         yes       the model finished generating: whatever it
                                                 wrote was billed, hidden reasoning included
                                                 (a reasoning model's ``finish_reason:
                                                 length`` with no text before it)
``BilledOutput``                       yes       billed output the turn keeps nothing of
                                                 (text in Anthropic's ``message_start``, a
                                                 Chat choice other than the one read ...)
``Unknown``                            yes       an event railings does not know may carry
                                                 output (an Ollama ``/api/generate`` line,
                                                 a new delta type): when in doubt, Partial
=====================================  ========  =============================================

What the wires send that the decoders read past as no event at all, and so is known
to carry nothing billable: SSE comments and Anthropic ``ping`` (keep-alives), a role-only
or empty Chat delta, Responses ``response.in_progress`` / ``queued``, the opening of an
empty output item or content part (``output_item.added`` of a message or reasoning item
with nothing in it yet, ``content_part.added``, an empty Anthropic text or thinking block
start, an empty Bedrock ``contentBlockStart``), the end of a block, the snapshots that
repeat streamed deltas (``*.done``) and the progress notices of an item. Whatever carries
output that the turn does not keep is emitted as :class:`BilledOutput`: a Responses
reasoning item that opens with its encrypted content, a finished Responses item that is
no call (``reasoning`` above all), OpenRouter's ``reasoning_details``, Anthropic's
``citations_delta`` and Bedrock's ``citation`` delta, content already in Anthropic's
``message_start``, and the first delta of a Chat choice other than the one the turn reads.

The baseline of the usage rows is the output count of the stream's opening usage report
(``UsageUpdate.opening``; only Anthropic's ``message_start`` sends one): the assembler
keeps it and passes it in. A usage report is counted, never trusted to be small: billed
output the stream shows none of (a reasoning model thinking before it writes) is still
billed, and a resend would bill it twice.
"""

from __future__ import annotations

from railings.events import (
    MessageStart,
    OutputItems,
    ProviderErrorEvent,
    RefusalDelta,
    StreamEvent,
    TerminationProof,
    TextDelta,
    ThinkingDelta,
    UsageUpdate,
)

__all__ = ["billable"]


def billable(event: StreamEvent, baseline: int | None = None) -> bool:
    """True unless ``event`` is known to carry nothing billable (the module's table).
    ``baseline``: the output count of the stream's opening usage report, if one came
    before ``event``."""
    match event:
        case UsageUpdate(output_tokens=output, opening=opening):
            if output is None or (opening and baseline is None):
                return False  # no count, or the opening count itself: the baseline
            return output > (baseline or 0)
        case MessageStart() | ProviderErrorEvent() | TerminationProof():
            return False
        case TextDelta(text=text) | RefusalDelta(text=text):
            return bool(text)
        case ThinkingDelta(text=text, signature=signature, redacted=redacted):
            return bool(text or signature or redacted)
        case OutputItems(items=items):
            return bool(items)
    return True
