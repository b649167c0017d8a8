"""AIBench's generation prompt (Liao et al., sections 3.1 and 4, appendix B.4): models are compared on
illustrations "generated from the same method text".

A paper of the AIBench set is drawn from its method text alone, wrapped in the instruction of task
``aibench_illustration`` (``conf/base/tasks/aibench_illustration.yml``). The caption is left out: it
describes the original figure rather than the method, and AIBench's contestants receive the method text.
Nothing of the logic graph goes in either: it is the examination's answer key.
"""

from __future__ import annotations

from sciir.tasks.task import ModelTask

ILLUSTRATION_TASK = "aibench_illustration"


class NoMethodText(ValueError):
    """A paper of the AIBench set has no method text to draw from."""


def illustration_prompt(sample_id: str, methods_text: object) -> str:
    """The prompt a contestant draws ``sample_id``'s illustration from: the task's instruction and the
    method text.

    Raises:
        NoMethodText: the method text is missing or blank; the message names the sample.
    """
    if not isinstance(methods_text, str) or not methods_text.strip():
        raise NoMethodText(f"AIBench sample {sample_id} has no method text to draw from")
    return TASK.prompt.render(methods_text=methods_text.strip())


TASK = ModelTask(
    name=ILLUSTRATION_TASK,
    summary="the generation prompt of an AIBench illustration: the paper's method text (AIBench 3.1, B.4)",
    reply_schema=None,
)
