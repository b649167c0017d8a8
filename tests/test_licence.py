"""Licence rules: CC licence names, the article decision, and the shipped third-party patterns."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sciir.licence import LicencePolicy, licence_name

PARAMETERS = Path(__file__).resolve().parents[1] / "conf" / "base" / "parameters_ingest.yml"


@pytest.fixture(scope="module")
def policy() -> LicencePolicy:
    """The policy exactly as the project configures it."""
    params = yaml.safe_load(PARAMETERS.read_text(encoding="utf-8"))["ingest"]
    return LicencePolicy(
        accepted=params["licence"]["accepted"], third_party_patterns=params["third_party_patterns"]
    )


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("http://creativecommons.org/licenses/by/4.0/", "CC BY 4.0"),
        ("https://creativecommons.org/licenses/by/4.0/legalcode", "CC BY 4.0"),
        ("http://creativecommons.org/licenses/by-nc-nd/3.0/", "CC BY-NC-ND 3.0"),
        ("http://creativecommons.org/publicdomain/zero/1.0/", "CC0 1.0"),
        ("https://www.elsevier.com/open-access/userlicense/1.0/", None),
        ("", None),
    ],
)
def test_licence_name(url: str, name: str | None) -> None:
    assert licence_name(url) == name


def test_cc_by_4_is_accepted(policy: LicencePolicy) -> None:
    decision = policy.decide_article("http://creativecommons.org/licenses/by/4.0/")
    assert decision.ok and decision.name == "CC BY 4.0"


@pytest.mark.parametrize(
    ("url", "named_in_reason"),
    [
        ("http://creativecommons.org/publicdomain/zero/1.0/", "CC0 1.0"),
        ("http://creativecommons.org/licenses/by-nc/4.0/", "CC BY-NC 4.0"),
        ("http://creativecommons.org/licenses/by/3.0/", "CC BY 3.0"),
        ("https://example.org/terms", "https://example.org/terms"),
        (None, "no licence found"),
    ],
)
def test_other_licences_are_rejected_with_the_licence_named(
    policy: LicencePolicy, url: str | None, named_in_reason: str
) -> None:
    decision = policy.decide_article(url)
    assert not decision.ok
    assert named_in_reason in decision.reason


@pytest.mark.parametrize(
    ("caption", "evidence"),
    [
        ("Results from playing the TD game, adapted from [17].", "adapted from"),
        ("Reprinted with permission from Smith et al. (2010).", "Reprinted with permission from"),
        ("Micrograph courtesy of J. Doe.", "courtesy of"),
        ("Map data © OpenStreetMap contributors.", "© O"),
        ("Copyright 2015 Elsevier.", "Copyright 2015"),
        ("Image copyright by the museum.", "copyright by"),
        ("Source: World Bank development indicators.", "Source: W"),
    ],
)
def test_third_party_material_is_detected(policy: LicencePolicy, caption: str, evidence: str) -> None:
    assert policy.third_party_evidence(caption) == evidence


@pytest.mark.parametrize(
    "caption",
    [
        "Per capita income of households by source. Source : Authors\u2019 calculations based on the survey.",
        "Source: author\u2019s calculations based on tax schedule rates.",
        "Source: Authors' estimations.",
        "Figure 2\u2014source data 1. Raw counts.",
        "Copyright law does not cover raw data.",
        "Kinematics of spontaneous navigation adapted to the light source.",
        "The decay law for a radioactive source: the equation A = A0 exp(-t / tau).",
    ],
)
def test_own_work_is_not_third_party(policy: LicencePolicy, caption: str) -> None:
    assert policy.third_party_evidence(caption) is None
