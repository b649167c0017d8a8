"""Licence rules: CC licence names, the licence decision, and the shipped third-party patterns."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sciir.figures.licence import LicencePolicy, licence_from_text, licence_name

PARAMETERS = Path(__file__).resolve().parents[2] / "conf" / "base" / "parameters_ingest.yml"


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
        ("creativecommons.org/licenses/by/4.0", "CC BY 4.0"),
        ("https://www.creativecommons.org/licenses/by/4.0/deed.en", "CC BY 4.0"),
        ("https://evilcreativecommons.org/licenses/by/4.0/", None),
        ("https://creativecommons.org.example.com/licenses/by/4.0/", None),
        ("https://www.elsevier.com/open-access/userlicense/1.0/", None),
        ("", None),
    ],
)
def test_licence_name(url: str, name: str | None) -> None:
    assert licence_name(url) == name


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (
            "Licensed under a Creative Commons Attribution 4.0 International License.",
            ("CC BY 4.0", "https://creativecommons.org/licenses/by/4.0/"),
        ),
        (
            "Published under the CC BY 4.0 licence.",
            ("CC BY 4.0", "https://creativecommons.org/licenses/by/4.0/"),
        ),
        ("Creative Commons Attribution-NonCommercial 4.0 International License.", None),
        ("Published under the CC BY-NC 4.0 licence.", None),
        ("Distributed under the Creative Commons Attribution License.", None),  # no version: unknown
    ],
)
def test_licence_from_text(text: str, found: tuple[str, str] | None) -> None:
    assert licence_from_text(text) == found


def test_cc_by_4_is_accepted(policy: LicencePolicy) -> None:
    decision = policy.decide(["http://creativecommons.org/licenses/by/4.0/"])
    assert decision.ok and decision.name == "CC BY 4.0"
    assert decision.url == "http://creativecommons.org/licenses/by/4.0/"


def test_a_non_licence_link_beside_the_licence_does_not_decide(policy: LicencePolicy) -> None:
    urls = ["https://journal.example.org/policies", "http://creativecommons.org/licenses/by/4.0/"]
    assert policy.decide(urls).name == "CC BY 4.0"


def test_licence_named_only_in_prose_is_recognised(policy: LicencePolicy) -> None:
    decision = policy.decide(
        [], "This article is licensed under a Creative Commons Attribution 4.0 International License"
    )
    assert decision.ok and decision.url == "https://creativecommons.org/licenses/by/4.0/"


@pytest.mark.parametrize(
    ("urls", "text", "named_in_reason"),
    [
        (["http://creativecommons.org/publicdomain/zero/1.0/"], "", "CC0 1.0"),
        (["http://creativecommons.org/licenses/by-nc/4.0/"], "", "CC BY-NC 4.0"),
        (["http://creativecommons.org/licenses/by/3.0/"], "", "CC BY 3.0"),
        (["https://example.org/terms"], "", "unrecognised licence https://example.org/terms"),
        ([], "Free to read.", "unrecognised licence (no licence URL; text: 'Free to read.')"),
        ([], "", "no licence found"),
        (
            ["http://creativecommons.org/licenses/by/4.0/", "http://creativecommons.org/licenses/by-nc/4.0/"],
            "",
            "conflicting licences in one statement: CC BY 4.0",
        ),
    ],
    ids=["cc0", "by-nc", "by-3.0", "unrecognised-url", "unrecognised-text", "missing", "conflicting"],
)
def test_other_licences_are_rejected_with_the_licence_named(
    policy: LicencePolicy, urls: list[str], text: str, named_in_reason: str
) -> None:
    decision = policy.decide(urls, text)
    assert not decision.ok
    assert named_in_reason in decision.reason


def test_the_accepted_list_is_configuration(policy: LicencePolicy) -> None:
    cc0 = ["http://creativecommons.org/publicdomain/zero/1.0/"]
    assert not policy.decide(cc0).ok
    widened = policy.model_copy(update={"accepted": [*policy.accepted, "CC0 1.0"]})
    assert widened.decide(cc0).ok


@pytest.mark.parametrize(
    ("caption", "evidence"),
    [
        ("Results from playing the TD game, adapted from [17].", "adapted from"),
        ("Modified from [3].", "Modified from"),
        ("Redrawn from Smith (2001).", "Redrawn from"),
        ("Reprinted with permission from Smith et al. (2010).", "Reprinted with permission from"),
        ("Reproduced with permission.", "Reproduced with permission"),
        ("Reproduced here by kind permission of the publisher.", "Reproduced here by kind permission"),
        ("Micrograph courtesy of J. Doe.", "courtesy of"),
        ("Photo courtesy J. Doe.", "courtesy"),
        ("Image credit: NASA/JPL.", "Image credit: N"),
        ("Licensed under CC BY-NC-SA 2.0 via Wikimedia Commons.", "Licensed under"),
        ("© 2012 Macmillan Publishers Ltd. All rights reserved.", "© 2012 M"),
        ("Springer Nature. All rights reserved.", "All rights reserved"),
        ("Map data © OpenStreetMap contributors.", "© O"),
        ("(c) 2009 The Royal Society.", "(c) 2009 T"),
        ("Copyright 2015 Elsevier.", "Copyright 2015"),
        ("Image copyright by the museum.", "copyright by"),
        ("Source: World Bank development indicators.", "Source: W"),
        ("Sources: OECD, Eurostat.", "Sources: O"),
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
        "Sources: Authors\u2019 calculations based on the household survey.",
        "Source: prepared by the authors from census data.",
        "Source: own elaboration.",
        "Photo credit: the authors.",
        "Figure 2\u2014source data 1. Raw counts.",
        "Copyright law does not cover raw data.",
        "Kinematics of spontaneous navigation adapted to the light source.",
        "The decay law for a radioactive source: the equation A = A0 exp(-t / tau).",
    ],
)
def test_own_work_is_not_third_party(policy: LicencePolicy, caption: str) -> None:
    assert policy.third_party_evidence(caption) is None
