"""conf/local/parameters_*.yml overrides only the keys it names (settings.py: soft merge for parameters)."""

from __future__ import annotations

import shutil
from pathlib import Path

from kedro.config import OmegaConfigLoader

from sciir.evaluation.params import EvaluateParams
from sciir.settings import CONFIG_LOADER_ARGS

CONF = Path(__file__).resolve().parents[1] / "conf"


def test_a_local_list_of_rules_keeps_every_other_base_key(tmp_path):
    shutil.copytree(CONF / "base", tmp_path / "base")
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "parameters_evaluate.yml").write_text(
        "evaluate:\n  aggregation: [sciir_veto, tifa, dsg]\n  bootstrap:\n    n_boot: 10\n"
    )
    args = {key: value for key, value in CONFIG_LOADER_ARGS.items() if key != "custom_resolvers"}
    params = OmegaConfigLoader(conf_source=str(tmp_path), **args)["parameters"]["evaluate"]
    config = EvaluateParams.model_validate(params)
    assert config.rules == ["sciir_veto", "tifa", "dsg"] and config.primary_rule == "sciir_veto"
    assert config.bootstrap.n_boot == 10 and config.bootstrap.confidence == 0.95  # nested keys merge too
    assert params["thumbnail_px"] == 256 and params["unjudged_policy"] == "exclude"
