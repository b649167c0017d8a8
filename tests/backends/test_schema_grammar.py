"""Grammars for decoding under a JSON schema (xgrammar), on the tiny Qwen2.5-VL tokenizer: special tokens are
never text, each schema is compiled once, length-bounded strings stay valid JSON, and the logits processor
masks only the rows that have a grammar."""

from __future__ import annotations

import json

import pytest
import torch
import xgrammar as xgr

from sciir.backends.schema_grammar import (
    SchemaGrammars,
    UnsupportedGrammar,
    bounded_strings_as_patterns,
    free_strings_bounded,
    grammar_tokenizer_info,
)
from sciir.testing.tiny_vlm import END_OF_TURN, SPECIAL_TOKENS, build_tokenizer

OBJECT = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


@pytest.fixture(scope="module")
def stop_id(tokenizer):
    return tokenizer.convert_tokens_to_ids(END_OF_TURN)


@pytest.fixture
def grammars(tokenizer, stop_id):
    return SchemaGrammars(tokenizer, len(tokenizer), [stop_id])


def _allowed(grammar: xgr.CompiledGrammar, prefix: str, vocab_size: int) -> set[int]:
    """The token ids the grammar allows after ``prefix``."""
    matcher = xgr.GrammarMatcher(grammar)
    assert matcher.accept_string(prefix)
    bitmask = xgr.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    logits = torch.zeros(1, vocab_size)
    xgr.apply_token_bitmask_inplace(logits, bitmask)
    return set(torch.nonzero(logits[0] == 0).flatten().tolist())


def _accepts(grammar: xgr.CompiledGrammar, text: str) -> bool:
    matcher = xgr.GrammarMatcher(grammar, terminate_without_stop_token=True)
    return matcher.accept_string(text) and matcher.is_completed()


def test_special_tokens_are_control_tokens_never_text(tokenizer, stop_id):
    info = grammar_tokenizer_info(tokenizer, len(tokenizer), [stop_id])
    special = set(tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS)))
    assert set(info.special_token_ids) == special - {stop_id}
    assert info.stop_token_ids == [stop_id]


def test_inside_a_string_any_text_token_may_come_but_no_special_one(grammars, tokenizer, stop_id):
    allowed = _allowed(grammars.grammar(OBJECT), '{"a": "', len(tokenizer))
    special = set(tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS)))
    assert not allowed & special
    assert tokenizer.convert_tokens_to_ids("x") in allowed and tokenizer.convert_tokens_to_ids('"') in allowed
    # Once the object is closed, only the end of the reply may follow.
    assert _allowed(grammars.grammar(OBJECT), '{"a": "x"}', len(tokenizer)) == {stop_id}


def test_each_schema_is_compiled_once(grammars):
    first = grammars.grammar(OBJECT)
    assert grammars.grammar(json.loads(json.dumps(OBJECT))) is first  # an equal schema: the same grammar
    other = {**OBJECT, "properties": {"b": {"type": "integer"}}, "required": ["b"]}
    assert grammars.grammar(other) is not first
    assert grammars.grammar(OBJECT) is first


def test_a_request_without_a_schema_is_held_to_a_json_object(grammars):
    grammar = grammars.grammar(None)
    assert _accepts(grammar, '{"any": [1, "two", null]}')
    assert not _accepts(grammar, '["not", "an", "object"]')


def test_a_length_bounded_string_admits_no_raw_control_character(grammars):
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "required": ["a"]}
    grammar = grammars.grammar(schema)
    assert _accepts(grammar, '{"a": "abc"}')
    assert not _accepts(grammar, '{"a": "abcd"}')
    assert not _accepts(grammar, '{"a": "a\x15"}')  # invalid JSON, which xgrammar's length path lets in


def test_length_bounds_become_patterns_at_any_depth_and_a_pattern_is_kept():
    schema = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 5}},
            "code": {"type": "string", "maxLength": 3, "pattern": "^[A-Z]+$"},
            "note": {"type": "string", "minLength": 1},
            "unit": {"type": ["string", "null"], "maxLength": 2},
        },
    }
    rewritten = bounded_strings_as_patterns(schema)
    assert rewritten["properties"]["items"]["items"] == {"type": "string", "pattern": "^.{2,5}$"}
    assert rewritten["properties"]["code"] == schema["properties"]["code"]
    assert rewritten["properties"]["note"] == {"type": "string", "pattern": "^.{1,}$"}
    assert rewritten["properties"]["unit"] == {"type": ["string", "null"], "pattern": "^.{0,2}$"}
    assert schema["properties"]["note"] == {"type": "string", "minLength": 1}  # the request's copy is kept


def test_free_text_strings_are_bounded_and_bounded_ones_kept():
    schema = {
        "type": "object",
        "properties": {
            "free": {"type": "string"},
            "nullable": {"type": ["string", "null"]},
            "verdict": {"type": ["string", "null"], "enum": ["yes", "no", None]},
            "code": {"type": "string", "pattern": "^[A-Z]+$"},
            "short": {"type": "string", "maxLength": 2},
            "count": {"type": "integer"},
            "notes": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        },
    }
    bounded = free_strings_bounded(schema, 8)["properties"]
    assert bounded["free"] == {"type": "string", "maxLength": 8}
    assert bounded["nullable"] == {"type": ["string", "null"], "maxLength": 8}
    assert bounded["notes"]["items"] == {"type": "string", "maxLength": 8}
    for kept in ("verdict", "code", "short", "count"):
        assert bounded[kept] == schema["properties"][kept]
    assert schema["properties"]["free"] == {"type": "string"}  # the request's copy is kept


def test_grammars_with_max_string_chars_end_free_text_there(tokenizer, stop_id):
    grammar = SchemaGrammars(tokenizer, len(tokenizer), [stop_id], max_string_chars=3).grammar(OBJECT)
    assert _accepts(grammar, '{"a": "abc"}')
    assert not _accepts(grammar, '{"a": "abcd"}')


def test_a_schema_that_cannot_be_compiled_says_why_without_xgrammars_log_prefix(grammars):
    with pytest.raises(
        UnsupportedGrammar, match=r'cannot be compiled into a decoding grammar: Unsupported type "x"'
    ):
        grammars.grammar({"type": "x"})


def test_the_constraint_masks_only_rows_with_a_grammar_and_follows_their_tokens(grammars, tokenizer):
    vocab, brace, quote = len(tokenizer), *tokenizer.convert_tokens_to_ids(["{", '"'])
    constraint = grammars.constraint([grammars.grammar(OBJECT), None])
    scores = constraint(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, vocab))
    assert torch.nonzero(scores[0] == 0).flatten().tolist() == [brace]
    assert torch.equal(scores[1], torch.zeros(vocab))  # the free row is left alone
    scores = constraint(torch.tensor([[0, 0, 0, brace], [0, 0, 0, 7]]), torch.zeros(2, vocab))
    assert torch.nonzero(scores[0] == 0).flatten().tolist() == [quote]  # '{' accepted: a key comes next
    with pytest.raises(RuntimeError, match="row 0: generated token .* is outside its grammar"):
        constraint(torch.tensor([[0, 0, 0, brace, brace], [0, 0, 0, 7, 7]]), torch.zeros(2, vocab))
