"""The judge against people: the judge-audit node of evaluate (``sciir.evaluation.judge_audit``).

People's answers come from the audit CSV ``evaluate.judge_audit`` names when it names one, else from the review
app's store (the catalog's ``review_audit``); this run's verdicts are compared with what people hold true.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from sciir.evaluation.judge_audit import judge_audit_table, read_audit_file
from sciir.evaluation.params import EvaluateParams

logger = logging.getLogger(__name__)


def audit_judge(
    verdicts: pd.DataFrame, review_audit: pd.DataFrame, judge_summary: dict[str, Any], params: dict[str, Any]
) -> pd.DataFrame:
    """The ``judge_audit`` table: per question kind, this run's judge against people's audit (accuracy,
    Cohen's kappa, the raters' alpha); empty when nobody audited."""
    config = EvaluateParams.model_validate(params)
    if config.judge_audit:
        if len(review_audit):
            logger.info("judge audit from %s; the review store's answers are not used", config.judge_audit)
        audit = read_audit_file(config.judge_audit)
    else:
        audit = review_audit
        if audit.empty:
            logger.info("judge audit: none (%s)", audit.attrs.get("absence") or "no answers")
    return judge_audit_table(audit, verdicts, judge_summary["judge"])
