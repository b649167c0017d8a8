"""Ingest nodes on a corpus of broken, hostile and odd inputs built here, and on the embedded sample.

The reality checks on real published articles are in tests/external/test_real_articles.py.
"""

from __future__ import annotations

import io
import json
import os
import struct
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from kedro.runner import SequentialRunner
from PIL import Image

from sciir.pipelines.ingest import create_pipeline
from sciir.pipelines.ingest.nodes import ingest_articles, prepare_source, summarise_ingest

REPO = Path(__file__).resolve().parents[2]
CC_BY = '<license xlink:href="http://creativecommons.org/licenses/by/4.0/"><license-p>CC BY 4.0</license-p></license>'
CC0 = '<license xlink:href="http://creativecommons.org/publicdomain/zero/1.0/"/>'


def _params(kind: str, path: Path | str) -> dict[str, Any]:
    """The shipped ingest parameters with another source."""
    text = (REPO / "conf" / "base" / "parameters_ingest.yml").read_text(encoding="utf-8")
    params = yaml.safe_load(text)["ingest"]
    params["source"] = {"kind": kind, "path": str(path), "seed": params["source"]["seed"]}
    return params


def _ingest(folder: Path, **limits: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    params = _params("jats_folder", folder) | ({"limits": limits} if limits else {})
    return ingest_articles(prepare_source(params), params)


def _figure_xml(figure_id: str, href: str, caption: str | None = "A plot.", extra: str = "") -> str:
    caption_xml = f"<caption><p>{caption}</p></caption>" if caption is not None else ""
    return f'<fig id="{figure_id}"><label>{figure_id}</label>{caption_xml}<graphic xlink:href="{href}"/>{extra}</fig>'


def _article_xml(figures: str, licence: str = CC_BY, doi: str = "10.1234/ok", doctype: str = "") -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>{doctype}
        <article xmlns:xlink="http://www.w3.org/1999/xlink"><front><article-meta>
        <article-id pub-id-type="doi">{doi}</article-id>
        <title-group><article-title>Test</article-title></title-group>
        <contrib-group><contrib contrib-type="author"><name><surname>Curie</surname>
          <given-names>Marie</given-names></name></contrib></contrib-group>
        <permissions>{licence}</permissions></article-meta></front>
        <body><sec sec-type="methods"><title>Methods</title><p>We drew.</p>{figures}</sec></body></article>"""


def _write_article(folder: Path, figures: str, **article: str) -> None:
    folder.mkdir(parents=True)
    (folder / "article.xml").write_text(_article_xml(figures, **article), encoding="utf-8")


def _png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), (10, 200, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


def _blp_with_unknown_compression() -> bytes:
    """A Blizzard mipmap header Pillow accepts whose decoder then raises NotImplementedError, not OSError."""
    return b"BLP2" + struct.pack("<i", 99) + bytes([1, 0, 0, 0]) + struct.pack("<II", 4, 4) + bytes(4096)


# figure id -> (how it is written, words its reason must hold; None when it is kept)
_FIGURE_CASES: dict[str, tuple[str, str | None]] = {
    "ok": (_figure_xml("ok", "ok.png"), None),
    "noext": (_figure_xml("noext", "noext"), None),
    "grouped": (
        '<fig-group><caption><p>Shared caption.</p></caption><fig id="grouped"><graphic xlink:href="ok.png"/></fig>'
        "</fig-group>",
        None,
    ),
    "own-work": (_figure_xml("own-work", "ok.png", "Income by source. Source: Authors' calculations."), None),
    "missing": (_figure_xml("missing", "missing.png"), "missing.png not found"),
    "corrupt": (_figure_xml("corrupt", "corrupt.png"), "corrupt.png: cannot decode"),
    "truncated": (_figure_xml("truncated", "truncated.png"), "truncated.png: cannot decode"),
    "decoder-raises": (
        _figure_xml("decoder-raises", "odd.png"),
        "odd.png: cannot decode image",
    ),
    "credited": (
        _figure_xml("credited", "ok.png", extra="<attrib>Reproduced from Nature 1999.</attrib>"),
        "the credit line says 'Reproduced from'",
    ),
    "adapted": (
        _figure_xml("adapted", "ok.png", "A game, adapted from [17]."),
        "the caption says 'adapted from'",
    ),
    "permission": (
        _figure_xml("permission", "ok.png", "A map. Reproduced with permission."),
        "the caption says 'Reproduced with permission'",
    ),
    "courtesy": (_figure_xml("courtesy", "ok.png", "A micrograph, courtesy of J. Doe."), "'courtesy of'"),
    "copyright": (
        _figure_xml(
            "copyright",
            "ok.png",
            extra="<permissions><copyright-statement>© 2010 Elsevier</copyright-statement></permissions>",
        ),
        "the credit line says '© 2010 E'",
    ),
    "own-licence": (
        _figure_xml(
            "own-licence",
            "ok.png",
            extra="<permissions><license xlink:href="
            '"http://creativecommons.org/licenses/by-nc/4.0/"/></permissions>',
        ),
        "the figure's own licence: licence CC BY-NC 4.0",
    ),
    "no-caption": (_figure_xml("no-caption", "ok.png", caption=None), "no caption"),
    "no-graphic": ('<fig id="no-graphic"><caption><p>Text only.</p></caption></fig>', "no <graphic> element"),
    "escape": (
        _figure_xml("escape", "../../outside.png"),
        "'../../outside.png' points outside the article folder",
    ),
    "absolute": (_figure_xml("absolute", "{outside}"), "points outside the article folder"),
    "url": (
        _figure_xml("url", "http://127.0.0.1:9/x.png"),
        "is a URL; images are read from the article folder",
    ),
    "symlink": (_figure_xml("symlink", "linked.png"), "'linked.png' points outside the article folder"),
    "symlink-suffix": (_figure_xml("symlink-suffix", "sneaky"), "'sneaky' points outside the article folder"),
    "long-href": (_figure_xml("long-href", "a" * 300 + ".png"), "cannot be looked up: File name too long"),
}
_DUPLICATE = _figure_xml("ok", "ok.png")


@pytest.fixture
def built_source(tmp_path: Path) -> Path:
    """Article folders: a good one holding every figure case above (and a repeated id), then one article
    each with a malformed XML, no XML, no DOI, a CC0 and a CC BY-NC licence, an external entity, text that
    is not UTF-8, and a folder name that is not UTF-8."""
    source = tmp_path / "source"
    outside = tmp_path / "outside.png"
    outside.write_bytes(_png_bytes())
    good = source / "a-good"
    figures = "".join(xml for xml, _ in _FIGURE_CASES.values()) + _DUPLICATE
    _write_article(good, figures.replace("{outside}", str(outside)))
    for name in ("ok.png", "noext.png"):
        (good / name).write_bytes(_png_bytes())
    (good / "corrupt.png").write_bytes(b"this is not a PNG")
    (good / "truncated.png").write_bytes(_png_bytes()[:60])
    (good / "odd.png").write_bytes(_blp_with_unknown_compression())
    (good / "linked.png").symlink_to(outside)
    (good / "sneaky.png").symlink_to(outside)
    (source / "b-malformed").mkdir()
    (source / "b-malformed" / "article.xml").write_text("<article><front></article>", encoding="utf-8")
    (source / "c-empty").mkdir()
    _write_article(source / "d-no-doi", _figure_xml("f1", "f1.png"), doi="")
    _write_article(source / "e-cc0", _figure_xml("f1", "f1.png"), licence=CC0)
    by_nc = "<license><license-p>Under creativecommons.org/licenses/by-nc/4.0/.</license-p></license>"
    _write_article(source / "f-by-nc", _figure_xml("f1", "f1.png"), licence=by_nc)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET", encoding="utf-8")
    xxe = f'<!DOCTYPE article [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'
    _write_article(source / "g-xxe", _figure_xml("f1", "f1.png", "A plot of &xxe;."), doctype=xxe)
    (source / "h-latin1").mkdir()
    latin1 = _article_xml(_figure_xml("f1", "f1.png", "Caf\u00e9 au lait.")).replace(' encoding="UTF-8"', "")
    (source / "h-latin1" / "article.xml").write_bytes(latin1.encode("latin-1"))
    undecodable = os.fsdecode(os.fsencode(source) + b"/i-caf\xe9")
    _write_article(Path(undecodable), _figure_xml("f1", "f1.png"))
    return source


def test_every_bad_article_is_a_row_with_the_file_and_what_is_wrong(built_source: Path) -> None:
    articles, _ = _ingest(built_source)
    by_id = articles.set_index("article_id")
    assert by_id.loc["a-good", "status"] == "accepted"
    assert (by_id.drop(index="a-good")["status"] == "rejected").all()
    expected_words = {
        "b-malformed": "mismatch",
        "c-empty": "no JATS XML",
        "d-no-doi": "no DOI",
        "e-cc0": "licence CC0 1.0 (http://creativecommons.org/publicdomain/zero/1.0/) is not accepted",
        "f-by-nc": "licence CC BY-NC 4.0 (creativecommons.org/licenses/by-nc/4.0/) is not accepted",
        "g-xxe": "declares external entities (xxe -> file://",
        "h-latin1": "not in the encoding the file declares",
        "i-caf\\xe9": "the file name is not valid UTF-8",
    }
    assert set(by_id.index) == {"a-good", *expected_words}
    for article_id, words in expected_words.items():
        reason = by_id.loc[article_id, "reason"]
        assert words in reason, (article_id, reason)
        if article_id not in ("c-empty", "i-caf\\xe9"):
            assert str(built_source / article_id / "article.xml") in reason
    assert "TOP-SECRET" not in by_id.loc["g-xxe", "reason"]
    assert by_id.loc["e-cc0", "licence_name"] == "CC0 1.0" and not by_id.loc["e-cc0", "licence_ok"]


def test_every_figure_is_a_row_kept_or_rejected_with_its_reason(built_source: Path) -> None:
    _, figures = _ingest(built_source)
    good = figures[figures["article_id"] == "a-good"]
    assert good["figure_id"].tolist() == [*_FIGURE_CASES, "ok"]
    xml_path = built_source / "a-good" / "article.xml"
    for (figure_id, (_, words)), row in zip(_FIGURE_CASES.items(), good.itertuples(), strict=False):
        assert row.figure_id == figure_id
        if words is None:
            assert row.status == "kept" and pd.isna(row.reason), row.reason
        else:
            assert row.status == "rejected"
            assert row.reason.startswith(f"figure {figure_id} of {xml_path}: "), row.reason
            assert words in row.reason, row.reason
    duplicate = good.iloc[-1]
    assert (
        duplicate["status"] == "rejected"
        and "figure id 'ok' is used by an earlier figure" in duplicate["reason"]
    )
    kept = good[good["status"] == "kept"].set_index("figure_id")
    assert kept.loc["noext", "image_path"].endswith("noext.png")
    assert kept.loc["grouped", "caption"] == "Shared caption."
    assert (kept["authors"] == json.dumps(["Marie Curie"])).all()
    others = figures[figures["article_id"].isin(["d-no-doi", "e-cc0", "f-by-nc"])]
    assert len(others) == 3 and others["reason"].str.contains("article rejected").all()


def test_oversized_image_is_refused_before_decoding(built_source: Path) -> None:
    _, figures = _ingest(built_source, max_image_bytes=64)
    ok = figures.set_index(["article_id", "figure_id"]).loc[("a-good", "noext")]
    assert ok["status"] == "rejected" and "over the 64-byte limit" in ok["reason"]


def test_oversized_article_is_refused_unread(built_source: Path) -> None:
    articles, figures = _ingest(built_source, max_xml_bytes=200)
    assert (articles["status"] == "rejected").all()
    assert "larger than the 200-byte limit" in articles.set_index("article_id").loc["a-good", "reason"]
    assert figures.empty


def test_metrics_count_rows(built_source: Path) -> None:
    articles, figures = _ingest(built_source)
    total = len(_FIGURE_CASES) + 1 + 3  # a-good's figures with the repeated id, one each for d, e, f
    kept = sum(words is None for _, words in _FIGURE_CASES.values())
    assert summarise_ingest(articles, figures) == {
        "articles_total": 9.0,
        "articles_accepted": 1.0,
        "figures_total": float(total),
        "figures_kept": float(kept),
        "figures_rejected": float(total - kept),
    }


def test_unknown_or_missing_source_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown ingest source kind 'ftp'"):
        prepare_source(_params("ftp", tmp_path))
    with pytest.raises(FileNotFoundError):
        prepare_source(_params("jats_folder", tmp_path / "absent"))


@pytest.mark.slow
def test_embedded_sample_is_written_once_and_decided_as_its_manifest_says(tmp_path: Path) -> None:
    sample = pytest.importorskip("sciir.sample")
    if not hasattr(sample, "write_embedded_sample"):
        pytest.skip("sciir.sample.write_embedded_sample is not available yet")
    folder = tmp_path / "embedded"
    params = _params("embedded", folder)
    assert prepare_source(params) == str(folder)
    manifest_path = folder / "MANIFEST.json"
    first_write = manifest_path.stat().st_mtime_ns
    prepare_source(params)
    assert manifest_path.stat().st_mtime_ns == first_write  # same seed: not regenerated
    # A sample drawn by an older version of the generator (same seed) is drawn again.
    stale = json.loads(manifest_path.read_text(encoding="utf-8")) | {"version": 1}
    manifest_path.write_text(json.dumps(stale), encoding="utf-8")
    prepare_source(params)
    assert json.loads(manifest_path.read_text(encoding="utf-8"))["version"] != 1

    articles, figures = ingest_articles(str(folder), params)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    expected_articles = {article["article_id"]: article["expected"] for article in manifest["articles"]}
    decided = articles["status"].map({"accepted": "kept", "rejected": "rejected"})
    assert dict(zip(articles["article_id"], decided, strict=True)) == expected_articles
    # too_small is curate's rule; every other planted fault must be caught here.
    expected_figures = {
        (figure["article_id"], figure["figure_id"]): "rejected"
        if figure["reason_kind"] in {"licence", "third_party", "corrupt_image"}
        else "kept"
        for figure in manifest["figures"]
    }
    ours = dict(
        zip(zip(figures["article_id"], figures["figure_id"], strict=True), figures["status"], strict=True)
    )
    assert ours == expected_figures


def test_a_run_that_rejects_every_article_completes_writes_every_reason_and_says_so(
    tmp_path: Path, project_catalog, caplog
) -> None:
    """ingest with the project's catalog on a folder whose two articles are under licences not accepted
    (CC0, CC BY-NC): it completes, its tables hold each article and figure with its reason, and one
    warning says that no figure was kept."""
    source = tmp_path / "source"
    by_nc = '<license xlink:href="http://creativecommons.org/licenses/by-nc/4.0/"/>'
    for name, licence in (("a-cc0", CC0), ("b-by-nc", by_nc)):
        _write_article(source / name, _figure_xml("f1", "f1.png"), licence=licence, doi=f"10.1234/{name}")
        (source / name / "f1.png").write_bytes(_png_bytes())
    catalog = project_catalog(create_pipeline(), {"params:ingest": _params("jats_folder", source)})
    with caplog.at_level("WARNING"):
        SequentialRunner().run(create_pipeline(), catalog)

    articles = catalog.load("articles")
    cc0_reason = (
        f"{source / 'a-cc0' / 'article.xml'}: licence CC0 1.0 "
        "(http://creativecommons.org/publicdomain/zero/1.0/) is not accepted"
    )
    assert list(articles["status"]) == ["rejected", "rejected"]
    assert articles["reason"].iloc[0].startswith(cc0_reason)
    assert "licence CC BY-NC 4.0" in articles["reason"].iloc[1]
    figures = catalog.load("figures")
    assert list(figures["status"]) == ["rejected", "rejected"]
    assert figures["reason"].str.contains("article rejected").all()
    assert catalog.load("ingest_metrics") == {
        "articles_total": 2.0, "articles_accepted": 0.0,
        "figures_total": 2.0, "figures_kept": 0.0, "figures_rejected": 2.0,
    }  # fmt: skip
    assert (
        "ingest kept no figure: 2 of 2 articles were rejected and all 2 figures were rejected; each reason "
        f"is in the articles and figures tables, e.g. {articles['reason'].iloc[0]}"
    ) in caplog.messages
