"""Decoding under a JSON schema with xgrammar, for the ``transformers`` backend.

xgrammar (the grammar engine vLLM and SGLang use) compiles a JSON schema, for one tokenizer, into a
grammar whose matcher tells, at each step, which tokens may come next. :class:`SchemaConstraint` masks
every other token's logit, so a reply is JSON that fits its schema, followed by an end token and
nothing else. Replies are compact (no free whitespace; ``", "`` and ``": "`` between items), so a schema
whose strings and arrays are bounded has a bounded reply; under an unbounded one the model ends its reply
when it closes the JSON, or the reply is cut at ``max_new_tokens`` (a failure that says so).

The tokenizer's special tokens (``<|im_start|>``, ``<|image_pad|>`` ...) are control tokens, dropped when a
reply is decoded. xgrammar reads every token's text from the vocabulary and would take a special token's
text for ordinary characters a JSON string may hold (xgrammar issue #832); here they are given empty
text, which xgrammar treats as never part of a reply (the end tokens excepted).

Free text can be bounded (``max_string_chars``): every string of the schema that no ``enum``, ``const``,
``pattern``, ``format`` or ``maxLength`` already bounds gets at most that many characters. With the
schema's arrays bounded too (``maxItems``), every reply then ends, whatever the weights: a random or
rambling model writes a short string and goes on, instead of running to ``max_new_tokens``.

A string with ``minLength`` or ``maxLength`` (and no ``pattern``) is compiled as the equivalent
``pattern``: xgrammar 0.2 lowers length bounds to a character class that admits raw control characters,
which JSON forbids (xgrammar issue #800), while its pattern path does not. Only the grammar's copy of the
schema is changed; replies are still checked against the request's own.

xgrammar is imported when a tokenizer's grammars are first made, so importing this module imports no
torch, transformers or xgrammar.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    import torch
    import xgrammar as xgr

# The grammar of a request without a schema: any JSON object (a reply is always an object).
ANY_OBJECT: dict[str, Any] = {"type": "object"}
# Distinct schemas kept compiled; a run sends a handful (one per task), so this only bounds a long process.
MAX_CACHED_GRAMMARS = 256
# xgrammar's errors start with a log prefix ("[23:40:20] /project/cpp/....cc:5082: ").
_LOG_PREFIX = re.compile(r"^\[[\d:]+\] \S+:\d+: ")


class UnsupportedGrammar(ValueError):
    """A request's JSON schema that xgrammar cannot compile into a decoding grammar."""


def grammar_tokenizer_info(tokenizer: Any, vocab_size: int, stop_ids: Iterable[int]) -> xgr.TokenizerInfo:
    """xgrammar's view of ``tokenizer`` for a model with ``vocab_size`` logits: its vocabulary with the
    special tokens' text emptied (see the module docstring), ending replies with ``stop_ids``."""
    import xgrammar as xgr

    stops = sorted(stop_ids) or None  # None: xgrammar takes the tokenizer's end-of-sequence token
    detected = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, stop_token_ids=stops)
    special = {index for index, token in tokenizer.added_tokens_decoder.items() if token.special}
    vocabulary = [""] * vocab_size
    for text, index in tokenizer.get_vocab().items():
        if index < vocab_size and index not in special:
            vocabulary[index] = text
    return xgr.TokenizerInfo(
        vocabulary,
        vocab_type=detected.vocab_type,
        vocab_size=vocab_size,
        stop_token_ids=detected.stop_token_ids,
        add_prefix_space=detected.add_prefix_space,
    )


# What already bounds a string; a string with none of them is free text.
_STRING_BOUNDS = frozenset({"enum", "const", "pattern", "format", "maxLength"})


def _is_string(schema: dict[str, Any]) -> bool:
    types = schema.get("type")
    return types == "string" or (isinstance(types, list) and "string" in types)


def free_strings_bounded(schema: Any, max_chars: int) -> Any:
    """``schema`` with every free-text string (see ``_STRING_BOUNDS``) given ``maxLength: max_chars``, at
    any depth."""
    if isinstance(schema, list):
        return [free_strings_bounded(item, max_chars) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rewritten = {key: free_strings_bounded(value, max_chars) for key, value in schema.items()}
    if _is_string(rewritten) and not _STRING_BOUNDS & rewritten.keys():
        rewritten["maxLength"] = max_chars
    return rewritten


def bounded_strings_as_patterns(schema: Any) -> Any:
    """``schema`` with every length-bounded string (no ``pattern``) written as a ``pattern`` of the same
    bounds, at any depth (see the module docstring). A pattern constrains only strings, so a schema of
    several types (``["string", "null"]``) is rewritten too."""
    if isinstance(schema, list):
        return [bounded_strings_as_patterns(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rewritten = {key: bounded_strings_as_patterns(value) for key, value in schema.items()}
    bounded = _is_string(rewritten) and {"minLength", "maxLength"} & rewritten.keys()
    if bounded and "pattern" not in rewritten:
        low, high = rewritten.pop("minLength", 0), rewritten.pop("maxLength", "")
        rewritten["pattern"] = f"^.{{{low},{high}}}$"
    return rewritten


class SchemaGrammars:
    """Compiled grammars for one tokenizer, each schema compiled once (kept by its JSON text); free-text
    strings bounded to ``max_string_chars`` when it is set."""

    def __init__(
        self, tokenizer: Any, vocab_size: int, stop_ids: Iterable[int], max_string_chars: int | None = None
    ) -> None:
        import xgrammar as xgr

        self.vocab_size = vocab_size
        self.max_string_chars = max_string_chars
        self._compiler = xgr.GrammarCompiler(grammar_tokenizer_info(tokenizer, vocab_size, stop_ids))
        self._compiled: OrderedDict[str, xgr.CompiledGrammar] = OrderedDict()

    def grammar(self, schema: Mapping[str, Any] | None) -> xgr.CompiledGrammar:
        """The grammar of replies fitting ``schema`` (any JSON object when None)."""
        # Not sorted: the schema's property order is the order the grammar writes properties in.
        key = json.dumps(ANY_OBJECT if schema is None else schema)
        if key in self._compiled:
            self._compiled.move_to_end(key)
            return self._compiled[key]
        try:
            compiled = self._compiler.compile_json_schema(
                json.dumps(self._grammar_schema(json.loads(key))), any_whitespace=False
            )
        except RuntimeError as err:
            reason = _LOG_PREFIX.sub("", str(err).strip())
            raise UnsupportedGrammar(
                f"its JSON schema cannot be compiled into a decoding grammar: {reason}"
            ) from None
        self._compiled[key] = compiled
        if len(self._compiled) > MAX_CACHED_GRAMMARS:
            self._compiled.popitem(last=False)
        return compiled

    def _grammar_schema(self, schema: Any) -> Any:
        """The grammar's copy of a request's schema (see the module docstring)."""
        if self.max_string_chars is not None:
            schema = free_strings_bounded(schema, self.max_string_chars)
        return bounded_strings_as_patterns(schema)

    def constraint(self, grammars: Sequence[xgr.CompiledGrammar | None]) -> SchemaConstraint:
        """A logits processor for one ``generate`` call, row ``i`` under ``grammars[i]`` (None: free)."""
        return SchemaConstraint(grammars, self.vocab_size)


class SchemaConstraint:
    """Masks, in each row of a batch, the tokens its grammar does not allow next: a logits processor for
    ``model.generate`` (transformers calls each with the tokens so far and the next token's scores).

    One instance serves one ``generate`` call: its matchers follow the rows' tokens from the first step.
    A row without a grammar is left free; a row whose grammar has ended (it produced its end token) is
    padding from then on and left alone.
    """

    def __init__(self, grammars: Sequence[xgr.CompiledGrammar | None], vocab_size: int) -> None:
        import xgrammar as xgr

        self.matchers = [None if grammar is None else xgr.GrammarMatcher(grammar) for grammar in grammars]
        self.bitmask = xgr.allocate_token_bitmask(len(grammars), vocab_size)
        self.vocab_size = vocab_size
        self.started = False

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        import xgrammar as xgr

        if self.started:
            self._accept(input_ids[:, -1].tolist())
        self.started = True
        active = {row: matcher for row, matcher in enumerate(self.matchers) if _active(matcher)}
        rows = list(active)
        if not rows:
            return scores
        for row, matcher in active.items():
            matcher.fill_next_token_bitmask(self.bitmask, row)
        # xgrammar masks logits on CUDA or on the CPU; other devices go through the CPU.
        on_cpu = scores.device.type not in ("cuda", "cpu")
        logits = scores.to("cpu") if on_cpu else scores
        xgr.apply_token_bitmask_inplace(
            logits, self.bitmask.to(logits.device), vocab_size=self.vocab_size, indices=rows
        )
        return logits.to(scores.device) if on_cpu else logits

    def _accept(self, tokens: list[int]) -> None:
        """Advance each active row's matcher by the token generated for it at the last step."""
        for row, (matcher, token) in enumerate(zip(self.matchers, tokens, strict=True)):
            if _active(matcher) and not matcher.accept_token(token):
                raise RuntimeError(f"row {row}: generated token {token} is outside its grammar")


def _active(matcher: xgr.GrammarMatcher | None) -> TypeGuard[xgr.GrammarMatcher]:
    return matcher is not None and not matcher.is_terminated()
